"""Launch files name installed executables and parameter files that hold only declared
parameters of the right type (ros2 launch itself is not on PyPI; this reads the XML)."""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from cl_vision_nodes.schemas import NODE_SCHEMAS
from test_packaging import setup_executables

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((REPO / 'launch').glob('*.launch.xml'))


def substitute(text: str, args: dict[str, str]) -> str:
    """Resolve $(var x) with the launch args' defaults and $(find-pkg-share cl_vision_nodes)."""
    text = re.sub(r'\$\(var (\w+)\)', lambda m: args[m.group(1)], text)
    return text.replace('$(find-pkg-share cl_vision_nodes)', str(REPO))


def launch_nodes(path: Path):
    root = ET.parse(path).getroot()
    args = {a.get('name'): a.get('default', '') for a in root.iter('arg')}
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
            for section in yaml.safe_load(file.read_text()).values():
                for name, value in section['ros__parameters'].items():
                    spec = schema.specs.get(name)
                    assert spec is not None, f'{file.name}: {exe} declares no {name}'
                    assert type(value) is spec.type, f'{file.name}: {name} type'


CONFIG_FILES = sorted((REPO / 'config').glob('*.yaml'))


@pytest.fixture(scope='module')
def ros():
    from rosutil import RosHarness
    harness = RosHarness('config_test_harness')
    yield harness
    harness.close()


@pytest.mark.parametrize('path', CONFIG_FILES, ids=lambda p: p.name)
def test_each_node_starts_with_its_parameter_file(ros, path):
    from rosutil import NodeProcess
    (node, section), = yaml.safe_load(path.read_text()).items()
    values = section['ros__parameters']
    proc = NodeProcess(f'cl_vision_nodes.ros.{node}', ['--params-file', str(path)])
    try:
        got = ros.get_parameters(node, list(values))
        assert got == values, proc.output()
        assert proc.alive()
    finally:
        assert proc.stop() == 0, proc.output()
