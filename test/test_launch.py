"""Launch files name installed executables and parameter files that hold only declared
parameters of the right type, take every node's parameter file from an argument (so a user's
file can replace it), and every shipped file applies to its node in any namespace (ros2 launch
itself is not on PyPI; this reads the XML and starts the nodes as launch would)."""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from cl_vision_nodes.schemas import NODE_SCHEMAS
from cl_vision_nodes.tools.gen_config import config_files
from test_packaging import setup_executables

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((REPO / 'launch').glob('*.launch.xml'))


ANY_NAMESPACE = '/**'


def substitute(text: str, args: dict[str, str]) -> str:
    """Resolve $(var x) with the launch args' defaults (which may name other args) and
    $(find-pkg-share cl_vision_nodes)."""
    while '$(var ' in text:
        text = re.sub(r'\$\(var (\w+)\)', lambda m: args[m.group(1)], text)
    return text.replace('$(find-pkg-share cl_vision_nodes)', str(REPO))


def declared_args(root: ET.Element) -> dict[str, str]:
    return {a.get('name'): a.get('default', '') for a in root.findall('arg')}


def launch_nodes(path: Path):
    root = ET.parse(path).getroot()
    args = declared_args(root)
    for node in root.iter('node'):
        files = [Path(substitute(p.get('from'), args)) for p in node.findall('param')
                 if p.get('from')]
        names = [p.get('name') for p in node.findall('param') if p.get('name')]
        yield node, files, names


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_nodes_and_parameters(path):
    nodes = list(launch_nodes(path))
    assert nodes, f'{path.name} starts no node'
    for node, files, names in nodes:
        assert node.get('pkg') == 'cl_vision_nodes'
        exe = node.get('exec')
        assert exe in setup_executables(), f'{path.name}: {exe} is not an executable'
        schema = NODE_SCHEMAS[exe]
        assert set(names) <= set(schema.specs), f'{path.name}: undeclared {names}'
        for file in files:
            assert file.is_file(), f'{path.name}: {file} does not exist'
            doc = yaml.safe_load(file.read_text())
            assert list(doc) == [ANY_NAMESPACE], f'{file.name}: keys {list(doc)}'
            for name, value in doc[ANY_NAMESPACE]['ros__parameters'].items():
                spec = schema.specs.get(name)
                assert spec is not None, f'{file.name}: {exe} declares no {name}'
                assert type(value) is spec.type, f'{file.name}: {name} type'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_parameter_file_is_an_argument_passed_down_to_includes(path):
    root = ET.parse(path).getroot()
    args = declared_args(root)
    for node in root.iter('node'):
        for param in node.findall('param'):
            if param.get('from'):
                match = re.fullmatch(r'\$\(var (\w+_params)\)', param.get('from'))
                assert match and match.group(1) in args, \
                    f"{path.name}: {node.get('exec')} loads {param.get('from')}, not an argument"
    for include in root.iter('include'):
        included = REPO / 'launch' / Path(include.get('file')).name
        wanted = {name for name in declared_args(ET.parse(included).getroot())
                  if name.endswith('_params')}
        passed = {arg.get('name') for arg in include.findall('arg')}
        assert wanted <= passed, f'{path.name} does not pass {wanted - passed} to {included.name}'


CONFIG_FILES = config_files(REPO)
USER_CHANGES = {'convert_node': {'output_encoding': '32FC1'}, 'flow_node': {'method': 'bm'},
                'surf_node': {'hessian_threshold': 400.0}, 'disparity_node': {'disp_max': 128}}
NAMESPACE = '/camera/left'


@pytest.fixture(scope='module')
def ros():
    from rosutil import RosHarness
    harness = RosHarness('config_test_harness')
    yield harness
    harness.close()


def assert_node_holds(ros, node: str, params_file: Path, values: dict) -> None:
    """Start ``node`` in NAMESPACE with ``params_file`` and read ``values`` back through its
    parameter service."""
    from rosutil import NodeProcess
    proc = NodeProcess(f'cl_vision_nodes.ros.{node}',
                       ['-r', f'__ns:={NAMESPACE}', '--params-file', str(params_file)])
    try:
        got = ros.get_parameters(f'{NAMESPACE}/{node}', list(values))
        assert got == values, proc.output()
        assert proc.alive()
    finally:
        assert proc.stop() == 0, proc.output()


@pytest.mark.parametrize('path', CONFIG_FILES, ids=lambda p: p.name)
def test_each_shipped_file_applies_to_its_node_in_a_namespace(ros, path):
    schema, values = CONFIG_FILES[path]
    assert yaml.safe_load(path.read_text())[ANY_NAMESPACE]['ros__parameters'] == values
    assert_node_holds(ros, schema.node_name, path, values)


@pytest.mark.parametrize('node', USER_CHANGES)
def test_a_user_file_for_the_node_applies_in_a_namespace(ros, tmp_path, node):
    """A user's file keyed for the node by name in any namespace, as for several nodes."""
    changes = USER_CHANGES[node]
    assert all(NODE_SCHEMAS[node].specs[k].default != v for k, v in changes.items())
    user_file = tmp_path / 'mine.yaml'
    user_file.write_text(yaml.safe_dump({f'/**/{node}': {'ros__parameters': changes},
                                         '/**/another_node': {'ros__parameters': {'x': 1}}}))
    assert_node_holds(ros, node, user_file, changes)
