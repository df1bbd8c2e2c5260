# Copyright 2026 cl_vision_nodes maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Every source file starts with the Apache-2.0 copyright header.

This is the check of ament_copyright, the third lint test ``ros2 pkg create`` gives an
ament_python package: ament_copyright is not on PyPI, so the check is done here, with the same
rule as its ``apache2`` license template (a ``Copyright <year> <holder>`` line, then the
Apache-2.0 notice) in each file type's comment syntax. It covers what ament_copyright would see
and more: the package's Python modules and OpenCL kernels, the launch files, the tests and
setup.py.
"""
from pathlib import Path
import re

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ('cl_vision_nodes/**/*.py', 'cl_vision_nodes/kernels/**/*.cl', 'launch/*.xml',
           'test/**/*.py', 'setup.py')
COPYRIGHT = re.compile(r'Copyright \d{4}(-\d{4})? \S.*')
NOTICE = [
    '',
    'Licensed under the Apache License, Version 2.0 (the "License");',
    'you may not use this file except in compliance with the License.',
    'You may obtain a copy of the License at',
    '',
    '    http://www.apache.org/licenses/LICENSE-2.0',
    '',
    'Unless required by applicable law or agreed to in writing, software',
    'distributed under the License is distributed on an "AS IS" BASIS,',
    'WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.',
    'See the License for the specific language governing permissions and',
    'limitations under the License.',
]


def leading_comment(path: Path) -> list[str]:
    """
    Return the text of the comment a file starts with, without the comment markers.

    Python files may start with a shebang line before it; XML files carry it in one
    ``<!-- -->`` block, the other types in line comments (``#`` or ``//``).
    """
    lines = path.read_text(encoding='utf-8').splitlines()
    if path.suffix == '.xml':
        if not lines or lines[0].strip() != '<!--':
            return []
        end = lines.index('-->') if '-->' in lines else len(lines)
        return lines[1:end]
    marker = '#' if path.suffix == '.py' else '//'
    if lines and lines[0].startswith('#!'):
        lines = lines[1:]
    text = []
    for line in lines:
        if not line.startswith(marker):
            break
        text.append(line[len(marker) + 1:] if line.startswith(marker + ' ') else
                    line[len(marker):])
    return text


def has_apache2_header(path: Path) -> bool:
    """Check a file's leading comment against ament_copyright's apache2 template."""
    text = leading_comment(path)
    return (bool(text) and COPYRIGHT.fullmatch(text[0]) is not None
            and text[1:1 + len(NOTICE)] == NOTICE)


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    files = sorted({path for pattern in SOURCES for path in REPO.glob(pattern)})
    missing = [str(path.relative_to(REPO)) for path in files if not has_apache2_header(path)]
    assert files
    assert not missing, 'Files without the Apache-2.0 copyright header:\n' + '\n'.join(missing)
