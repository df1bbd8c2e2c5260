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
package.xml declares what the code imports, with keys that rosdep resolves.

`rosdep install` reads package.xml on a robot: a key no module needs installs something for
nothing (cv_bridge did), a missing one breaks a node at start, and a key that neither
ros/rosdistro nor rosdep/cl_vision_nodes.yaml defines stops the install for everyone. The
dependencies are derived here from the imports, through one module -> key table.
"""
import ast
from pathlib import Path
import sys
import xml.etree.ElementTree as ElementTree

import yaml

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / 'cl_vision_nodes'
ROSDEP_YAML = REPO / 'rosdep' / 'cl_vision_nodes.yaml'

# The rosdep key of every module the package or its tests import.
KEYS = {
    'ament_flake8': 'ament_flake8',
    'ament_index_python': 'ament_index_python',
    'ament_pep257': 'ament_pep257',
    'builtin_interfaces': 'builtin_interfaces',
    'cv2': 'python3-opencv',
    'diagnostic_msgs': 'diagnostic_msgs',
    'numpy': 'python3-numpy',
    'pyopencl': 'python3-pyopencl',
    'pytest': 'python3-pytest',
    'rcl_interfaces': 'rcl_interfaces',
    'rclpy': 'rclpy',
    'rosgraph_msgs': 'rosgraph_msgs',
    'scipy': 'python3-scipy',
    'sensor_msgs': 'sensor_msgs',
    'std_msgs': 'std_msgs',
    'stereo_msgs': 'stereo_msgs',
    'yaml': 'python3-yaml',
}
# Extras of cl-vision's workstation subcommands, installed with pip and not declared (package.xml
# says why), so no node may need them.
TOOL_EXTRAS = {'elas', 'matplotlib', 'optuna', 'ray', 'rosbags', 'skimage'}
# Declared without an import: the launch files need `ros2 launch`; PoCL is the CPU device.
NOT_IMPORTED = {'ros2launch', 'pocl-opencl-icd'}
# The keys of package.xml that ros/rosdistro defines, checked with rosdep 0.27.0 against its
# master of 2026-08-22 (docs/ROSDEP.md): ROS packages released for humble, jazzy and kilted, and
# rules of rosdep/base.yaml and rosdep/python.yaml.
ROSDISTRO_KEYS = {
    'ament_flake8', 'ament_index_python', 'ament_pep257', 'builtin_interfaces',
    'diagnostic_msgs', 'rcl_interfaces', 'rclpy', 'ros2launch', 'rosgraph_msgs', 'sensor_msgs',
    'std_msgs', 'stereo_msgs',
    'python3-numpy', 'python3-opencv', 'python3-pytest', 'python3-scipy', 'python3-yaml',
}


def imports(folder: Path) -> dict[Path, set[str]]:
    """
    Return the modules each file of a folder imports, lazy imports included.

    Left out: the standard library and the test helpers, which tests import by file name. The
    package's own modules stay, for following what the nodes load.
    """
    skip = {*sys.stdlib_module_names, *(path.stem for path in (REPO / 'test').glob('*.py')),
            *(path.parent.name for path in (REPO / 'test').glob('*/__init__.py'))}
    found = {}
    for path in sorted(folder.rglob('*.py')):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.update([node.module, *(f'{node.module}.{a.name}' for a in node.names)])
        found[path] = {name for name in names if name.split('.')[0] not in skip}
    return found


def top_level(modules: set[str]) -> set[str]:
    """Return the top-level names of the modules outside the package: numpy for numpy.linalg."""
    return {name.split('.')[0] for name in modules} - {'cl_vision_nodes'}


def dependencies(kind: str) -> set[str]:
    """Return the keys of one dependency kind of package.xml, such as exec_depend."""
    return {tag.text for tag in ElementTree.parse(REPO / 'package.xml').getroot().iter(kind)}


def package_keys(modules: set[str]) -> set[str]:
    """Return the rosdep keys of the modules, leaving out the tools' pip extras."""
    return {KEYS[name] for name in top_level(modules) - TOOL_EXTRAS}


def test_every_import_has_a_key_or_is_a_tool_extra():
    modules = set().union(*imports(PACKAGE).values(), *imports(REPO / 'test').values())
    unknown = top_level(modules) - KEYS.keys() - TOOL_EXTRAS
    assert not unknown, f'add these imports to KEYS (or TOOL_EXTRAS) and package.xml: {unknown}'


def test_exec_depends_are_what_the_package_imports():
    expected = package_keys(set().union(*imports(PACKAGE).values())) | NOT_IMPORTED
    declared = dependencies('exec_depend')
    assert declared == expected, \
        f'not imported: {declared - expected}; imported, not declared: {expected - declared}'


def test_test_depends_are_what_only_the_tests_import():
    expected = package_keys(set().union(*imports(REPO / 'test').values()))
    expected -= dependencies('exec_depend')
    declared = dependencies('test_depend')
    assert declared == expected, \
        f'not imported: {declared - expected}; imported, not declared: {expected - declared}'


def test_no_node_needs_a_tool_extra():
    """The nodes run on what rosdep installs: nothing they load imports a pip extra."""
    files = imports(PACKAGE)
    by_module = {'.'.join(path.relative_to(REPO).with_suffix('').parts).removesuffix(
        '.__init__'): modules for path, modules in files.items()}
    loaded, todo = set(), [name for name in by_module if name.startswith('cl_vision_nodes.ros.')]
    while todo:
        name = todo.pop()
        if name in loaded or name not in by_module:
            continue
        loaded.add(name)
        parents = ['.'.join(name.split('.')[:i]) for i in range(1, name.count('.') + 1)]
        todo += parents + [module for module in by_module[name] if module not in loaded]
    extras = {name: top_level(by_module[name]) & TOOL_EXTRAS for name in loaded}
    assert not any(extras.values()), {name: found for name, found in extras.items() if found}


def test_keys_rosdistro_lacks_are_the_ones_our_rosdep_yaml_defines():
    declared = dependencies('exec_depend') | dependencies('test_depend')
    ours = set(yaml.safe_load(ROSDEP_YAML.read_text()))
    assert declared - ROSDISTRO_KEYS == ours, \
        f'undefined: {declared - ROSDISTRO_KEYS - ours}; unused rules: {ours - declared}'


def test_our_rosdep_rules_name_packages_for_debian_ubuntu_and_fedora():
    for key, rule in yaml.safe_load(ROSDEP_YAML.read_text()).items():
        assert {'debian', 'fedora', 'ubuntu'} <= rule.keys(), key
        for os_name, packages in rule.items():
            assert isinstance(packages, list) and packages, (key, os_name)
            assert all(isinstance(name, str) and name for name in packages), (key, os_name)


def test_readme_adds_the_rosdep_source_before_rosdep_update():
    readme = (REPO / 'README.md').read_text()
    source = 'yaml file://$PWD/src/cl_vision_nodes/rosdep/cl_vision_nodes.yaml'
    assert source in readme
    assert readme.index(source) < readme.index('rosdep update') < readme.index('rosdep install')
