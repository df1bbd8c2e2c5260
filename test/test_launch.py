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
Launch files: installed executables, checked parameter files, any namespace.

They name installed executables and parameter files that hold only declared parameters of the right
type, take every node's parameter file from an argument (so a user's file can replace it), and
every shipped file applies to its node in any namespace (ros2 launch itself is not on PyPI; this
reads the XML and starts the nodes as launch would).
"""
from dataclasses import dataclass, field
import os
from pathlib import Path
import re
import xml.etree.ElementTree as ET

from cl_vision_nodes.ros.allocator import SETTINGS
from cl_vision_nodes.ros.dds_profile import profile_path, PROFILE_VARIABLES
from cl_vision_nodes.ros.topics import node_topics
from cl_vision_nodes.schema_files import config_files
from cl_vision_nodes.schemas import NODE_SCHEMAS
from packageutil import flat, setup_executables
import pytest
import yaml

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((REPO / 'launch').glob('*.launch.xml'))


ANY_NAMESPACE = '/**'


def substitute(text: str, args: dict[str, str]) -> str:
    """
    Resolve the substitutions our launch files use, nested: var, find-pkg-share, and, or, equals.

    $(var x) takes the launch args' values, which may hold substitutions themselves.
    """
    out, index = [], 0
    while index < len(text):
        if text.startswith('$(', index):
            inner, index = _enclosed(text, index + 2)
            out.append(_evaluate(inner, args))
        else:
            out.append(text[index])
            index += 1
    return ''.join(out)


def _enclosed(text: str, start: int) -> tuple[str, int]:
    """Return the text up to the ``)`` closing the ``$(`` before ``start``, and the index after."""
    depth = 1
    for index in range(start, len(text)):
        depth += {'(': 1, ')': -1}.get(text[index], 0)
        if depth == 0:
            return text[start:index], index + 1
    raise ValueError(f'unclosed substitution in {text!r}')


def _evaluate(inner: str, args: dict[str, str]) -> str:
    name, _, rest = inner.partition(' ')
    words, depth, word = [], 0, ''
    for char in rest:
        depth += {'(': 1, ')': -1}.get(char, 0)
        if char == ' ' and depth == 0:
            words.append(word)
            word = ''
        else:
            word += char
    values = [substitute(w, args) for w in [*words, word] if w]
    if name == 'var':
        return substitute(args[values[0]], args)
    if name == 'file-content':  # launch raises SubstitutionFailure: the launch stops
        if not Path(values[0]).is_file():
            raise LaunchError(f'File not found: {values[0]}')
        return Path(values[0]).read_text()
    if name == 'find-pkg-share':
        return str(REPO)
    if name == 'env':
        return os.environ.get(values[0], values[1] if len(values) > 1 else '')
    truth = [value.lower() in TRUE for value in values]
    results = {'and': all(truth), 'or': any(truth), 'not': not any(truth),
               'equals': len({v.lower() for v in values}) == 1}
    return str(results[name]).lower()


class LaunchError(Exception):
    """What stops ros2 launch before it starts anything (its '[ERROR] [launch]: ...' line)."""


def declared_args(root: ET.Element) -> dict[str, str]:
    return {a.get('name'): a.get('default', '') for a in root.findall('arg')}


def arg_choices(root: ET.Element) -> dict[str, list[str]]:
    """Return the ``<choice>`` values of each argument that has them."""
    return {a.get('name'): [c.get('value') for c in a.findall('choice')]
            for a in root.findall('arg') if a.findall('choice')}


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
        assert set(names) - {'use_sim_time'} <= set(schema.specs), \
            f'{path.name}: undeclared {names}'
        for file in files:
            assert file.is_file(), f'{path.name}: {file} does not exist'
            doc = yaml.safe_load(file.read_text())
            assert list(doc) == [ANY_NAMESPACE], f'{file.name}: keys {list(doc)}'
            for name, value in flat(doc[ANY_NAMESPACE]['ros__parameters']).items():
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


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_process_started_gets_the_large_message_allocator(path):
    """
    Each MALLOC_* variable of ros/allocator.py is set before the first node, a user's kept.

    At the top level, so the nodes and any consumer started by the same launch share it.
    """
    root = ET.parse(path).getroot()
    first_node = next(i for i, child in enumerate(root) if child.tag in ('group', 'node'))
    set_env = {child.get('name'): child.get('value') for child in list(root)[:first_node]
               if child.tag == 'set_env'}
    assert {k: v for k, v in set_env.items() if k.startswith('MALLOC')} == \
        {s.variable: f'$(env {s.variable} {s.value})' for s in SETTINGS}


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_process_started_gets_the_large_image_dds_profile(path, monkeypatch):
    """
    The profile the nodes apply to themselves, also for a camera started by the same launch.

    Before the first node; a profile the user set under either variable name is kept.
    """
    root = ET.parse(path).getroot()
    first_node = next(i for i, child in enumerate(root) if child.tag in ('group', 'node'))
    value = next(child.get('value') for child in list(root)[:first_node]
                 if child.tag == 'set_env' and child.get('name') == PROFILE_VARIABLES[0])
    for name in PROFILE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    installed = REPO / 'config' / Path(profile_path()).name  # share/<pkg>/config, installed
    assert Path(substitute(value, {})) == installed
    monkeypatch.setenv(PROFILE_VARIABLES[1], '/users/own.xml')
    assert substitute(value, {}) == '/users/own.xml'
    monkeypatch.setenv(PROFILE_VARIABLES[0], '/users/newer.xml')
    assert substitute(value, {}) == '/users/newer.xml'


CONFIG_FILES = config_files(REPO)
USER_CHANGES = {'convert_node': {'output_encoding': '32FC1'}, 'flow_node': {'method': 'bm'},
                'surf_node': {'hessian_threshold': 400.0}, 'disparity_node': {'disp_max': 128},
                'rectify_node': {'interpolation': 'cubic'}}
NAMESPACE = '/camera/left'
READY_TIMEOUT_S = 120.0  # a bound on kernel builds with cold caches (the ready line's end)


def assert_node_holds(ros, node: str, params_file: Path, values: dict) -> None:
    """
    Start ``node`` in NAMESPACE with ``params_file``; check ``values`` through its service.

    The values are read back through its parameter service once the node is ready: it answers
    no service while it builds its kernels (cold caches: longer than a request's wait).
    """
    from rosutil import NodeProcess
    proc = NodeProcess(f'cl_vision_nodes.ros.{node}',
                       ['-r', f'__ns:={NAMESPACE}', '--params-file', str(params_file)])
    try:
        assert proc.wait_for_output(' executor\n', READY_TIMEOUT_S), proc.output()
        got = ros.get_parameters(f'{NAMESPACE}/{node}', list(values))
        assert got == values, proc.output()
        assert proc.alive()
    finally:
        assert proc.stop() == 0, proc.output()


@pytest.mark.parametrize('path', CONFIG_FILES, ids=lambda p: p.name)
def test_each_shipped_file_applies_to_its_node_in_a_namespace(ros, path):
    schema, values = CONFIG_FILES[path]
    assert flat(yaml.safe_load(path.read_text())[ANY_NAMESPACE]['ros__parameters']) == values
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


# --- stereo.launch.xml as stereo_image_proc's drop-in ----------------------------------------

STEREO_IMAGE_PROC_ARGS = {'namespace', 'left_namespace', 'right_namespace', 'approximate_sync',
                          'avoid_point_cloud_padding', 'use_color', 'launch_image_proc'}
TRUE = ('true', '1')


@dataclass
class Started:
    """A node as ros2 launch would start it: its namespace, parameters and remappings."""

    exe: str
    namespace: str
    params: dict = field(default_factory=dict)
    remaps: dict = field(default_factory=dict)
    args: list = field(default_factory=list)
    files: list = field(default_factory=list)
    types: dict = field(default_factory=dict)

    def typed_params(self) -> dict:
        """
        Return the ``<param name=...>`` values as launch_ros passes them to the node.

        YAML-typed (``1:0`` is the integer 60 in YAML 1.1), or as the ``type`` attribute says.
        """
        return {name: value if self.types.get(name) == 'str' else yaml.safe_load(value)
                for name, value in self.params.items()}

    def command(self, tmp_path: Path) -> tuple[list[str], list[str]]:
        """
        Return the node's own arguments and its ROS arguments as ros2 launch builds them.

        The parameter files, then the named values in a temporary file of launch's, keyed by
        the node's full name (what launch_ros does for a named node).
        """
        launch_file = tmp_path / f'launch_params_{self.exe}.yaml'
        launch_file.write_text(yaml.safe_dump(
            {f"{self.namespace.rstrip('/')}/{self.exe}": {'ros__parameters':
                                                          self.typed_params()}}))
        ros_args = ['-r', f'__ns:={self.namespace}']
        for file in [*self.files, launch_file]:
            ros_args += ['--params-file', str(file)]
        return self.args, ros_args

    def topic(self, name: str) -> str:
        """Return the absolute name of the node's relative topic ``name``."""
        name = self.remaps.get(name, name)
        return name if name.startswith('/') else f'{self.namespace.rstrip("/")}/{name}'


def push(namespace: str, pushed: str) -> str:
    if not pushed:
        return namespace
    return pushed if pushed.startswith('/') else f'{namespace.rstrip("/")}/{pushed}'


def enabled(element: ET.Element, args: dict[str, str]) -> bool:
    if element.get('if') is not None:
        return substitute(element.get('if'), args).lower() in TRUE
    if element.get('unless') is not None:
        return substitute(element.get('unless'), args).lower() not in TRUE
    return True


def started(path: Path, overrides: dict[str, str] | None = None,
            namespace: str = '/') -> list[Started]:
    """Return the nodes a launch file starts with these argument values."""
    return launched(path, overrides, namespace)[0]


def launched(path: Path, overrides: dict[str, str] | None = None,
             namespace: str = '/') -> tuple[list[Started], list[str]]:
    """
    Return the nodes a launch file starts with these argument values, and its log messages.

    Groups scope namespaces, if/unless are applied, includes are followed, an argument outside
    its choices and a file-content substitution of a missing file raise LaunchError (launch's
    XML semantics, for what our files use).
    """
    root = ET.parse(path).getroot()
    args = {**declared_args(root), **(overrides or {})}
    for name, choices in arg_choices(root).items():
        if args[name] not in choices:
            raise LaunchError(f'Argument "{name}" provided value "{args[name]}" is not valid. '
                              f'Valid options are: {choices}')
    nodes: list[Started] = []
    logs: list[str] = []

    def walk(element: ET.Element, namespace: str) -> None:
        for child in element:
            if not enabled(child, args):
                continue
            if child.tag == 'let':
                args[child.get('name')] = substitute(child.get('value'), args)
            elif child.tag == 'push-ros-namespace':
                namespace = push(namespace, substitute(child.get('namespace'), args))
            elif child.tag == 'group':
                walk(child, namespace)
            elif child.tag == 'include':
                included = REPO / 'launch' / Path(child.get('file')).name
                passed = {a.get('name'): substitute(a.get('value'), args)
                          for a in child.findall('arg')}
                more_nodes, more_logs = launched(included, passed, namespace)
                nodes.extend(more_nodes)
                logs.extend(more_logs)
            elif child.tag == 'log':
                logs.append(substitute(child.get('message'), args))
            elif child.tag == 'node':
                node = Started(child.get('exec'),
                               push(namespace, substitute(child.get('namespace', ''), args)))
                node.params = {p.get('name'): substitute(p.get('value'), args)
                               for p in child.findall('param') if p.get('name')}
                node.types = {p.get('name'): p.get('type') for p in child.findall('param')
                              if p.get('name') and p.get('type')}
                node.files = [Path(substitute(p.get('from'), args))
                              for p in child.findall('param') if p.get('from')]
                node.args = substitute(child.get('args', ''), args).split()
                node.remaps = {r.get('from'): substitute(r.get('to'), args)
                               for r in child.findall('remap')}
                nodes.append(node)

    walk(root, namespace)
    return nodes, logs


def topics(node: Started) -> tuple[set[str], set[str]]:
    """Return the (inputs, outputs) of a started node, absolute, as the node declares them."""
    schema = NODE_SCHEMAS[node.exe]
    values = schema.parse_assignments(f'{k}={v}' for k, v in node.params.items()
                                      if k in schema.specs)
    declared = node_topics(node.exe, values)
    return ({node.topic(t.name) for t in declared.inputs},
            {node.topic(t.name) for t in declared.outputs})


STEREO = REPO / 'launch' / 'stereo.launch.xml'


def test_stereo_launch_takes_stereo_image_procs_arguments():
    declared = declared_args(ET.parse(STEREO).getroot())
    assert STEREO_IMAGE_PROC_ARGS | {'queue_size'} <= set(declared)


def test_stereo_launch_by_default_rectifies_raw_cameras_with_a_rectify_node_each():
    nodes = started(STEREO, {'namespace': 'front'})
    assert sorted(n.exe for n in nodes) == ['disparity_node', 'rectify_node', 'rectify_node']
    rectify = [n for n in nodes if n.exe == 'rectify_node']
    assert {n.namespace for n in rectify} == {'/front/left', '/front/right'}
    rectified = set().union(*(topics(n)[1] for n in rectify))
    assert rectified == {'/front/left/image_rect', '/front/right/image_rect'}
    assert set().union(*(topics(n)[0] for n in rectify)) == {
        f'/front/{side}/{name}' for side in ('left', 'right')
        for name in ('image_raw', 'camera_info')}
    disparity = next(n for n in nodes if n.exe == 'disparity_node')
    inputs, outputs = topics(disparity)
    assert inputs == rectified | {'/front/left/camera_info', '/front/right/camera_info'}
    assert outputs == {'/front/disparity', '/front/disparity/color', '/front/depth',
                       '/front/points'}


def test_stereo_launch_with_rectify_runs_raw_to_points_in_one_node():
    arguments = {'namespace': 'front', 'rectify': 'true', 'flow': 'true'}
    pipeline = started(STEREO, arguments)
    assert [n.exe for n in pipeline] == ['vision_pipeline']
    assert pipeline[0].params['disparity.rectify'] == 'true'
    assert topics(pipeline[0])[0] == {f'/front/{side}/{name}' for side in ('left', 'right')
                                      for name in ('image_raw', 'camera_info')}
    nodes = started(STEREO, {**arguments, 'pipeline': 'false'})
    assert sorted(n.exe for n in nodes) == ['disparity_node', 'flow_node']
    disparity = next(n for n in nodes if n.exe == 'disparity_node')
    assert disparity.params['rectify'] == 'true'
    assert topics(disparity)[0] == {f'/front/{side}/{name}' for side in ('left', 'right')
                                    for name in ('image_raw', 'camera_info')}
    flow = next(n for n in nodes if n.exe == 'flow_node')
    assert topics(flow)[0] == {'/front/left/image_raw'}


def test_stereo_launch_of_rectified_inputs_and_stereo_image_proc_names():
    nodes = started(STEREO, {'launch_image_proc': 'false', 'image_rect': 'image_rect_color',
                             'points_topic': 'points2', 'use_color': 'false',
                             'left_namespace': 'cam0', 'right_namespace': 'cam1'})
    assert [n.exe for n in nodes] == ['disparity_node']
    inputs, outputs = topics(nodes[0])
    assert {'/cam0/image_rect_color', '/cam1/image_rect_color'} <= inputs
    assert '/points2' in outputs and nodes[0].params['use_color'] == 'false'


MONO = REPO / 'launch' / 'mono.launch.xml'


@pytest.mark.parametrize('flow, surf, pipeline, expected', [
    ('true', 'true', 'auto', ['vision_pipeline']),
    ('true', 'true', 'false', ['flow_node', 'surf_node']),
    ('true', 'false', 'auto', ['flow_node']),
    ('false', 'true', 'true', ['vision_pipeline']),
])
def test_mono_launch_runs_flow_and_surf_in_one_pipeline_unless_told(flow, surf, pipeline,
                                                                    expected):
    arguments = {'camera': 'front', 'flow': flow, 'surf': surf, 'pipeline': pipeline}
    nodes = started(MONO, arguments)
    assert sorted(n.exe for n in nodes) == expected
    if expected == ['vision_pipeline']:
        node = nodes[0]
        assert node.params['stereo'] == 'false' and node.params['disparity.enabled'] == 'false'
        assert (node.params['flow.enabled'], node.params['surf.enabled']) == (flow, surf)
        inputs, outputs = topics(node)
        assert inputs == {'/front/image_raw'}
        separate = started(MONO, {**arguments, 'flow': 'true', 'surf': 'true',
                                  'pipeline': 'false'})
        assert outputs == set().union(*(topics(n)[1] for n in separate))


def test_two_stereo_pairs_in_two_namespaces_share_no_topic():
    front, rear = ([t for n in started(STEREO, {'namespace': ns}) for t in set.union(*topics(n))]
                   for ns in ('front', 'rear'))
    assert not set(front) & set(rear)


def test_stereo_launch_with_pipeline_publishes_what_the_separate_nodes_publish():
    """pipeline:=true starts one vision_pipeline with the inputs and outputs of the three nodes."""
    arguments = {'namespace': 'front', 'launch_image_proc': 'false', 'flow': 'true',
                 'surf': 'true'}
    separate = started(STEREO, {**arguments, 'pipeline': 'false'})
    assert sorted(n.exe for n in separate) == ['disparity_node', 'flow_node', 'surf_node']
    pipeline = started(STEREO, {**arguments, 'pipeline': 'true'})
    assert [n.exe for n in pipeline] == ['vision_pipeline']
    assert started(STEREO, arguments) == pipeline  # pipeline auto: flow and SURF beside it
    assert pipeline[0].params['flow.enabled'] == pipeline[0].params['surf.enabled'] == 'true'
    inputs, outputs = topics(pipeline[0])
    separate_inputs = set().union(*(topics(n)[0] for n in separate))
    separate_outputs = set().union(*(topics(n)[1] for n in separate))
    assert inputs == separate_inputs and outputs == separate_outputs


# --- parameter files and arguments, as a user gives them ---------------------------------------

def test_every_node_takes_device_as_a_string_and_use_sim_time():
    """
    launch_ros reads a ``<param>`` value as YAML: ``device:=1:0`` would be the integer 60.

    ``type="str"`` keeps it a string; use_sim_time reaches every node of every file, included
    ones too.
    """
    for path in LAUNCH_FILES:
        nodes = started(path, {'device': '1:0', 'use_sim_time': 'true', 'flow': 'true',
                               'surf': 'true', 'pipeline': 'false'})
        assert nodes, path.name
        for node in nodes:
            assert node.typed_params()['device'] == '1:0', (path.name, node.exe)
            assert node.typed_params()['use_sim_time'] is True, (path.name, node.exe)
    assert Started('x', '/', {'device': '1:0'}).typed_params() == {'device': 60}  # untyped


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_boolean_arguments_take_true_or_false_only(path):
    root = ET.parse(path).getroot()
    choices = arg_choices(root)
    for name, default in declared_args(root).items():
        if default in ('true', 'false'):
            assert choices.get(name) == ['true', 'false'], f'{path.name}: {name}'
    with pytest.raises(LaunchError, match='"maybe" is not valid'):
        launched(path, {'use_sim_time': 'maybe'})


def test_pipeline_maybe_and_an_unknown_preset_stop_the_launch():
    with pytest.raises(LaunchError, match='"maybe" is not valid'):
        launched(MONO, {'pipeline': 'maybe'})
    with pytest.raises(LaunchError, match='"fast" is not valid'):
        launched(STEREO, {'preset': 'fast'})


@pytest.mark.parametrize('path, argument', [
    (MONO, 'flow_params'), (MONO, 'surf_params'), (MONO, 'pipeline_params'),
    (STEREO, 'disparity_params'), (STEREO, 'rectify_params'), (STEREO, 'flow_params'),
    (REPO / 'launch' / 'convert.launch.xml', 'convert_params')], ids=str)
def test_a_missing_parameter_file_stops_the_launch_with_its_path(path, argument):
    with pytest.raises(LaunchError, match='File not found: /nonexistent/mine.yaml'):
        launched(path, {argument: '/nonexistent/mine.yaml'})


def test_mono_launch_with_nothing_to_run_says_so():
    nodes, logs = launched(MONO, {'flow': 'false', 'surf': 'false'})
    assert nodes == [] and any(line.startswith('nothing to run') for line in logs), logs
    assert not any('nothing to run' in line for line in launched(MONO)[1])


@pytest.mark.parametrize('path, pipeline_files', [
    (MONO, {'--flow-params': 'flow_params', '--surf-params': 'surf_params'}),
    (STEREO, {'--disparity-params': 'disparity_params', '--flow-params': 'flow_params',
              '--surf-params': 'surf_params'})], ids=['mono', 'stereo'])
def test_the_pipeline_gets_every_node_file_for_its_section(tmp_path, path, pipeline_files):
    files = {arg: tmp_path / f'{arg}.yaml' for arg in pipeline_files.values()}
    for file in files.values():
        file.write_text('')
    pipeline = started(path, {'flow': 'true', 'surf': 'true', 'pipeline': 'true',
                              **{arg: str(file) for arg, file in files.items()}})
    pipeline = [n for n in pipeline if n.exe != 'rectify_node']
    assert [n.exe for n in pipeline] == ['vision_pipeline']
    given = dict(zip(pipeline[0].args[::2], pipeline[0].args[1::2]))
    assert given == {option: str(files[arg]) for option, arg in pipeline_files.items()}


def start_as_launched(node: Started, tmp_path: Path):
    """Start a node of ``started`` with the command line ros2 launch gives it."""
    from rosutil import NodeProcess
    own_args, ros_args = node.command(tmp_path)
    return NodeProcess(f'cl_vision_nodes.ros.{node.exe}', [*ros_args, '--', *own_args])


def test_flow_params_apply_to_the_pipeline_started_by_the_mono_launch(ros, tmp_path):
    """A flow_node file's flat values land in flow.*, read back through the services."""
    mine = tmp_path / 'my_flow.yaml'
    dumped_qos = {'/front/image_raw': {'subscription': {  # as ros2 param dump lists them
        'depth': 1, 'history': 'keep_last', 'reliability': 'best_available'}}}
    mine.write_text(yaml.safe_dump({'/**': {'ros__parameters': {
        'method': 'hs', 'alpha': 7, 'metod': 'lk', 'image_transport': 'compressed',
        'warm_up_width': 800, 'qos_overrides': dumped_qos, 'use_sim_time': False}}}))
    pipeline_file = tmp_path / 'my_pipeline.yaml'
    pipeline_file.write_text(yaml.safe_dump({'/**': {'ros__parameters': {
        'image_transport': 'compressed', 'warm_up_width': 320}}}))
    nodes = started(MONO, {'camera': 'front', 'flow_params': str(mine),
                           'pipeline_params': str(pipeline_file)})
    assert [n.exe for n in nodes] == ['vision_pipeline']
    proc = start_as_launched(nodes[0], tmp_path)
    try:
        got = ros.get_parameters('/front/vision_pipeline', ['flow.method', 'flow.alpha'])
        assert got == {'flow.method': 'hs', 'flow.alpha': 7.0}, proc.output()
        assert proc.wait_for_output(f"flow.method='hs' (--flow-params {mine})"), proc.output()
        assert "no parameter 'metod', ignored (did you mean method?)" in proc.output()
        assert 'nothing in it' not in proc.output()  # its /** files are its own
        # the pipeline's one input and warm-up: a node file's other value is not taken, and the
        # log says where it goes; not the same value, nor the shipped surf file's defaults, nor
        # the ROS parameters a dump lists as the pipeline has them
        assert f"{mine}: warm_up_width=800 not taken: vision_pipeline's own, one for all its " \
            'capabilities (its file: pipeline_params in the launch files)' in proc.output()
        assert proc.output().count('not taken') == 1, proc.output()
    finally:
        assert proc.stop() == 0, proc.output()


def test_a_file_keyed_for_other_nodes_is_named_with_how_to_key_it(tmp_path):
    """A file keyed ``flow_node:`` (``/flow_node``): rcl passes over it for /front/flow_node."""
    mine = tmp_path / 'my_flow.yaml'
    mine.write_text(yaml.safe_dump({'flow_node': {'ros__parameters': {'method': 'hs'}}}))
    nodes = started(MONO, {'camera': 'front', 'surf': 'false', 'flow_params': str(mine)})
    assert [n.exe for n in nodes] == ['flow_node']
    proc = start_as_launched(nodes[0], tmp_path)
    try:
        assert proc.wait_for_output(f'{mine}: nothing in it for /front/flow_node (a file for '
                                    'it is keyed /**: or /**/flow_node:)'), proc.output()
    finally:
        assert proc.stop() == 0, proc.output()


def test_a_device_through_the_launch_file_reaches_the_node_as_a_string(tmp_path):
    """``device:=1:0``: YAML's 60 without the launch file's type="str"."""
    nodes = started(MONO, {'device': '1:0', 'surf': 'false'})
    proc = start_as_launched(nodes[0], tmp_path)
    try:  # ready with it, no such device here, or that device is one that cannot build
        assert proc.wait_for_output('1:0'), proc.output()
        output = proc.output()
        assert ("set at start: device='1:0' (the launch file)" in output
                or "no OpenCL device matches '1:0'" in output
                or re.search(r'OpenCL device .*, 1:0\) cannot build kernels', output)), output
    finally:
        proc.stop()


def test_an_int_for_a_float_on_the_command_line_starts_the_node(ros):
    """``ros2 run ... -p hessian_threshold:=400``: 400.0, as ros2 param set takes it."""
    from rosutil import NodeProcess
    proc = NodeProcess('cl_vision_nodes.ros.surf_node', ['-p', 'hessian_threshold:=400'])
    try:
        got = ros.get_parameters('/surf_node', ['hessian_threshold'])
        assert got == {'hessian_threshold': 400.0}, proc.output()
    finally:
        assert proc.stop() == 0, proc.output()


def test_a_value_of_the_wrong_type_stops_the_node_with_one_line(tmp_path):
    from rosutil import NodeProcess
    mine = tmp_path / 'bad.yaml'
    mine.write_text(yaml.safe_dump({'/**': {'ros__parameters': {'alpha': 'abc'}}}))
    proc = NodeProcess('cl_vision_nodes.ros.flow_node', ['--params-file', str(mine)])
    assert proc.proc.wait(60) == 2, proc.output()
    lines = proc.output().strip().splitlines()
    assert len(lines) == 1 and '[FATAL]' in lines[0], proc.output()
    assert f"alpha: expected float, got str 'abc' (from {mine})" in proc.output()
