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
Layer boundaries, checked rather than promised (README "Layout", the package docstring).

- The algorithm layer (every module outside ``ros/`` and ``tools/``) imports and computes in a
  Python where ROS and OpenCV cannot be imported, and loads no third-party package besides numpy,
  pyopencl and PyYAML; the few modules that need OpenCV (``NEEDS_OPENCV``) are named here and in
  the README.
- ``ros/`` is the only package that imports ROS at module level; ``tools/`` imports it only
  inside the subcommands that talk to ROS (``ROS_TOOLS``: modules loaded only by such a
  subcommand), so ``cl-vision`` and its offline subcommands run without ROS. The library packages
  above ``ros/`` (``LIBRARY_PACKAGES``: bags, evaluation, processes, benchmarks, tuning) follow
  the rules of ``tools/``.
- Floors, read from the imports (module level and inside functions): the algorithm layer imports
  neither ``ros/`` nor anything above it, ``ros/`` no library package, nothing imports ``tools/``
  (the command faces, reached by the console entry point) and a command imports no other
  command, only ``tools/cli_common`` (``cli`` and ``tune_cli`` dispatch: ``DISPATCHERS``). No
  modules import each other in a loop.
"""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path
import re
import subprocess
import sys

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / 'cl_vision_nodes'

ROS = (r'rclpy|rcl_\w+|rmw\w*|rosidl\w*|rpyutils|ament_\w+|launch|launch_ros|cv_bridge'
       r'|message_filters|builtin_interfaces|\w+_msgs|\w+_srvs|\w+_interfaces')
"""Top-level module names of ROS 2 (client library, middleware, message packages, launch)."""
OPENCV = 'cv2'
ALGORITHM_PACKAGES = ('opencl', 'imaging', 'flow', 'surf', 'elas', 'camera', 'stereo', 'dataio',
                      'capabilities')
ALGORITHM_THIRD_PARTY = {'numpy', 'pyopencl', 'yaml'}
LIBRARY_PACKAGES = ('bags', 'evaluation', 'processes', 'benchmarks', 'tuning')
FLOORS = ('algorithm', 'ros', 'bags', 'processes', ('evaluation', 'benchmarks'), 'tuning', 'tools')
"""From the ground up (the library packages one by one): a module imports from its own floor or
those below."""
SHARED_COMMAND_OPTIONS = 'cl_vision_nodes.tools.cli_common'
DISPATCHERS = {'cl_vision_nodes.tools.cli': 'every subcommand',
               'cl_vision_nodes.tools.tune_cli': 'tune --apply'}
NEEDS_OPENCV = {
    'cl_vision_nodes.dataio.compressed',  # CompressedImage payloads: JPEG/PNG decoding
    'cl_vision_nodes.dataio.formats',    # image files: PNG/PFM decoding and encoding
    'cl_vision_nodes.dataio.stereo_files',  # disparity and depth PNGs are formats' PNGs
    'cl_vision_nodes.dataio.synthetic',  # generated scenes: blur, shapes, Lanczos warps
    'cl_vision_nodes.elas.colormap',     # disparity/color: the jet colour map
    'cl_vision_nodes.surf.draw',         # keypoints/image: circles and lines
    'cl_vision_nodes.capabilities.surf',  # its picture's painter is surf.draw's
    'cl_vision_nodes.capabilities.disparity',  # its picture's colours are elas.colormap's
}
ROS_TOOLS: set[str] = set()  # none: every tools module imports ROS inside its functions

# Runs in a fresh interpreter: argv[1] is a regex of top-level names that cannot be imported,
# argv[2] the allowed third-party packages, argv[3] the modules to import (JSON lists). Prints
# JSON: the modules that failed (with the error), the third-party packages the rest loaded
# beyond the allowed ones, and the result of a tiny device computation when argv[4] names a
# device.
CHILD = r"""
import importlib, json, re, sys
blocked = re.compile(sys.argv[1])

class Unimportable:
    def find_spec(self, name, path=None, target=None):
        if blocked.fullmatch(name.partition('.')[0]):
            raise ImportError(f'{name} is made unimportable by the test')
        return None

sys.meta_path.insert(0, Unimportable())
for name in json.loads(sys.argv[2]):
    importlib.import_module(name)

def third_party():
    return {name.partition('.')[0] for name in sys.modules} - set(sys.stdlib_module_names)

before = third_party()
failed = {}
for name in json.loads(sys.argv[3]):
    try:
        importlib.import_module(name)
    except ImportError as exc:
        failed[name] = str(exc)
extra = sorted(third_party() - before - {'cl_vision_nodes'})
computed = None
if len(sys.argv) > 4:
    import numpy
    from cl_vision_nodes.imaging.device_image import DeviceImages
    from cl_vision_nodes.imaging.encodings import gray_to_raw, raw_to_array
    from cl_vision_nodes.opencl.runtime import ClRuntime
    from cl_vision_nodes.schemas import NODE_SCHEMAS
    gray = numpy.arange(35, dtype=numpy.uint8).reshape(5, 7)
    mono8 = DeviceImages(ClRuntime(sys.argv[4])).convert(gray_to_raw(gray * 3), 'mono8')
    method = NODE_SCHEMAS['flow_node'].parse_assignments(['method=hs'])['method']
    computed = {'mono8': raw_to_array(mono8).tolist(), 'method': method}
print(json.dumps({'failed': failed, 'extra': extra, 'computed': computed}))
"""


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def layer(name: str) -> str:
    """'ros', 'tools', 'library' or 'algorithm' (the rest, the top-level modules too)."""
    part = name.split('.')[1] if name.count('.') else ''
    if part in LIBRARY_PACKAGES:
        return 'library'
    return part if part in ('ros', 'tools') else 'algorithm'


MODULES = sorted(module_name(path) for path in PACKAGE.rglob('*.py'))


def run_child(blocked: str, modules: list[str], device: str | None = None) -> dict:
    argv = [sys.executable, '-c', CHILD, blocked, json.dumps(sorted(ALGORITHM_THIRD_PARTY)),
            json.dumps(modules), *([device] if device else [])]
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_every_package_belongs_to_a_layer() -> None:
    packages = {path.parent.name for path in PACKAGE.glob('*/__init__.py')}
    assert packages == {*ALGORITHM_PACKAGES, *LIBRARY_PACKAGES, 'ros', 'tools'}, \
        'a new package: add it to ALGORITHM_PACKAGES or LIBRARY_PACKAGES (and the README Layout)'


def test_readme_layout_names_every_package() -> None:
    readme = (REPO / 'README.md').read_text()
    layout = readme[readme.index('## Layout'):]
    layout = layout[:layout.index('\n## ', 1)]
    for package in (*ALGORITHM_PACKAGES, *LIBRARY_PACKAGES, 'ros', 'tools', 'kernels'):
        assert f'cl_vision_nodes/{package}/' in layout, package


def test_algorithm_layer_runs_without_ros_and_opencv() -> None:
    algorithm = [name for name in MODULES if layer(name) == 'algorithm']
    got = run_child(f'{ROS}|{OPENCV}', algorithm, os.environ.get('CL_VISION_TEST_DEVICE', 'auto'))
    assert set(got['failed']) == NEEDS_OPENCV, got['failed']
    assert all(f'{OPENCV} is made unimportable' in why for why in got['failed'].values()), got
    assert got['extra'] == [], f'the algorithm layer loads {got["extra"]} beyond ' \
        f'{sorted(ALGORITHM_THIRD_PARTY)}'
    assert got['computed'] == {'mono8': [[3 * (7 * r + c) for c in range(7)] for r in range(5)],
                               'method': 'hs'}


def test_everything_but_ros_imports_without_ros() -> None:
    """The CLI and every offline subcommand run where ROS is absent (OpenCV allowed)."""
    outside_ros = [name for name in MODULES if layer(name) != 'ros']
    got = run_child(ROS, outside_ros)
    assert set(got['failed']) == ROS_TOOLS, got['failed']
    assert 'cl_vision_nodes.tools.cli' in outside_ros


def ros_imports(path: Path) -> list[tuple[str, int, bool]]:
    """(top-level name, line, at module level) of every ROS or OpenCV import in ``path``."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        for name in names:
            top = name.partition('.')[0]
            if re.fullmatch(f'{ROS}|{OPENCV}', top):
                found.append((top, node.lineno, not in_function))
        nested = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, nested)

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


@pytest.mark.parametrize('path', sorted(PACKAGE.rglob('*.py')),
                         ids=lambda path: str(path.relative_to(PACKAGE)))
def test_only_the_ros_layer_imports_ros_at_module_level(path: Path) -> None:
    name = module_name(path)
    where = layer(name)
    for top, line, module_level in ros_imports(path):
        at = f'{path.relative_to(REPO)}:{line} imports {top}'
        if where == 'algorithm':
            assert top == OPENCV and name in NEEDS_OPENCV, \
                f'{at}: the algorithm layer never imports ROS (or OpenCV outside NEEDS_OPENCV)'
        elif where in ('tools', 'library') and top != OPENCV:
            assert not module_level or name in ROS_TOOLS, \
                f'{at}: tools import ROS inside the subcommands that talk to ROS'


def package_imports(path: Path) -> set[str]:
    """Return the package's modules that ``path`` imports, at module level or in functions."""
    here = module_name(path).split('.')
    package = here if path.name == '__init__.py' else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                base = '.'.join(package[:len(package) - node.level + 1] + ([base] if base else []))
            candidates = [f'{base}.{alias.name}' if f'{base}.{alias.name}' in MODULES else base
                          for alias in node.names]
        else:
            continue
        found |= {name for name in candidates if name in MODULES}
    return found


IMPORTS = {module_name(path): package_imports(path) for path in PACKAGE.rglob('*.py')}


def floor(name: str) -> int:
    """Return the floor of module ``name`` (``FLOORS``)."""
    where = layer(name)
    part = name.split('.')[1] if where == 'library' else where
    return next(i for i, f in enumerate(FLOORS) if part == f or part in f)


@pytest.mark.parametrize('name', MODULES)
def test_a_module_imports_from_its_floor_or_below(name: str) -> None:
    above = sorted(m for m in IMPORTS[name] if floor(m) > floor(name))
    assert not above, f'{name} (floor {floor(name)}) imports {above}, from a floor above it'


@pytest.mark.parametrize('name', [m for m in MODULES if layer(m) == 'tools'])
def test_a_command_imports_no_other_command(name: str) -> None:
    commands = {m for m in IMPORTS[name] if layer(m) == 'tools'} - {SHARED_COMMAND_OPTIONS}
    if name in DISPATCHERS:
        return
    assert not commands, f'{name} imports the commands {sorted(commands)}: move what they ' \
        'share into a library package below tools/'


def test_nothing_outside_the_commands_imports_them() -> None:
    importers = {name: sorted(m for m in imported if layer(m) == 'tools')
                 for name, imported in IMPORTS.items() if layer(name) != 'tools'}
    assert {name: found for name, found in importers.items() if found} == {}
    entry_points = re.findall(r"'[\w-]+ = (cl_vision_nodes[\w.]+):",
                              (REPO / 'setup.py').read_text())
    assert [name for name in entry_points if layer(name) == 'tools'] == \
        ['cl_vision_nodes.tools.cli']


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_circles_are_found() -> None:
    assert circles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
    assert circles({'a': {'b'}, 'b': set()}) == []


def test_no_modules_import_each_other_in_a_loop() -> None:
    assert circles(IMPORTS) == []


OPTIONAL = {'matplotlib', 'optuna', 'ray', 'elas', 'skimage'}
"""Optional dependencies: imported where used, so that everything else runs without them."""
FACE_LINES = 220
"""At most this many lines in one command face (cli.py, the longest, has 215)."""


def _imports_in(tree: ast.AST, path: Path) -> list[tuple[int, str]]:
    """Return (line, dotted name) of each import in ``tree`` (relative ones resolved)."""
    here = module_name(path).split('.')
    package = here if path.name == '__init__.py' else here[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                base = '.'.join(package[:len(package) - node.level + 1] + ([base] if base else []))
            found += [(node.lineno, f'{base}.{alias.name}' if f'{base}.{alias.name}' in MODULES
                       else base) for alias in node.names]
    return found


def _module_level_tops(name: str, seen: set[str]) -> set[str]:
    """Return the third-party top-level names ``name`` loads at import, through the package."""
    if name in seen:
        return set()
    seen.add(name)
    path = PACKAGE.parent / (name.replace('.', '/') + '.py')
    if not path.exists():
        path = PACKAGE.parent / name.replace('.', '/') / '__init__.py'
    tree = ast.parse(path.read_text())
    level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    tops: set[str] = set()
    for _, imported in _imports_in(ast.Module(body=level, type_ignores=[]), path):
        if imported in MODULES:
            tops |= _module_level_tops(imported, seen)
        else:
            tops.add(imported.partition('.')[0])
    return tops


def _deferrable(imported: str, importer: str) -> bool:
    """Whether an import may wait inside a function: ROS, an optional package, lazy dispatch."""
    if importer in DISPATCHERS and layer(imported) == 'tools':
        return True
    tops = _module_level_tops(imported, set()) if imported in MODULES \
        else {imported.partition('.')[0]}
    return any(re.fullmatch(ROS, top) or top in OPTIONAL for top in tops)


@pytest.mark.parametrize('path', sorted(PACKAGE.rglob('*.py')),
                         ids=lambda path: str(path.relative_to(PACKAGE)))
def test_imports_inside_functions_only_for_ros_optional_packages_and_dispatch(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    late = [(line, imported) for function in ast.walk(tree)
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            for line, imported in _imports_in(function, path)]
    needless = sorted({f'{path.relative_to(REPO)}:{line} {imported}' for line, imported in late
                       if not _deferrable(imported, module_name(path))})
    assert not needless, f'imports inside functions that can go to the top: {needless}'


@pytest.mark.parametrize('path', sorted((PACKAGE / 'tools').glob('*.py')),
                         ids=lambda path: path.name)
def test_tools_are_command_faces(path: Path) -> None:
    """Argument parsing and printing over the library: its types and work live below tools/."""
    tree = ast.parse(path.read_text(), str(path))
    classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
               and not any(getattr(base, 'attr', '') == 'ArgumentParser' for base in node.bases)]
    assert not classes, f'{path.name} defines {classes}: move them into a library package'
    lines = len(path.read_text().splitlines())
    assert lines <= FACE_LINES, f'{path.name} has {lines} lines: move its work below tools/'
