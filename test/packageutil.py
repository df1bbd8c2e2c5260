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


"""What the package installs, read from its own setup.py, for the packaging and launch tests."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def setup_executables() -> list[str]:
    """Node executables named in setup.py's NODES dict, plus the cl-vision tool."""
    tree = ast.parse((REPO / 'setup.py').read_text())
    nodes = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and any(getattr(t, 'id', None) == 'NODES' for t in node.targets))
    return [*ast.literal_eval(nodes), 'cl-vision']


def flat(params: dict, prefix: str = '') -> dict:
    """Return YAML parameters with nested namespaces as dotted names, as rcl reads them."""
    names = {}
    for key, value in params.items():
        if isinstance(value, dict):
            names.update(flat(value, f'{prefix}{key}.'))
        else:
            names[f'{prefix}{key}'] = value
    return names
