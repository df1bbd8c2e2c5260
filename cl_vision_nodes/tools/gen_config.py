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
Regenerate the parameter files and README tables from the node schemas (schema_files.py).

Run ``python -m cl_vision_nodes.tools.gen_config`` after changing a schema; the test suite
fails while a generated file is out of date.
"""
from __future__ import annotations

from pathlib import Path
import sys

from cl_vision_nodes.schema_files import expected_files


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    for path, text in expected_files(root).items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f'wrote {path.relative_to(root)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
