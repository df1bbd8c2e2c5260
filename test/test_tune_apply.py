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
``cl-vision tune --apply``: a tune's parameter file set on a running disparity_node over Fast DDS.

The node runs as its own process; the values go through its real parameter services, and the
test reads them back with ``ros2 param get``'s service.
"""
from __future__ import annotations

from pathlib import Path
import re
import threading

from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import DataFormatError, NodeNotFoundError
from cl_vision_nodes.ros.remote_parameters import answered, ParameterServices
from cl_vision_nodes.tools import tune_apply
from cl_vision_nodes.tools.cli import OneLineParser
import pytest
import rclpy
from rosutil import NodeProcess
import yaml

pytestmark = pytest.mark.ros

NODE = '/tune_apply_test/disparity_node'


def parse(argv: list[str]):
    parser = OneLineParser(prog='cl-vision tune')
    tune_apply.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture(scope='module')
def node(ros):
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       ['-r', '__ns:=/tune_apply_test', '-p', 'disp_max:=32'])
    assert ros.get_parameters(NODE, ['disp_max']) == {'disp_max': 32}, proc.output()
    yield proc
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


def write_file(path: Path, values: dict) -> Path:
    path.write_text(yaml.safe_dump(ELAS_SCHEMA.yaml_document(values), sort_keys=False))
    return path


def test_apply_sets_values_and_names_refusals(ros, node, tmp_path, capsys):
    # disp_min 30 is refused while disp_max is 32 (a range under 10): sent again once disp_max is
    # 64; gamma 5 (YAML's int) is the double 5.0; queue_size is read-only, lr_threshold -1 out of
    # range; beta is the node's value already; flow.method is not one of its parameters.
    path = write_file(tmp_path / 'disparity.yaml', {
        'disp_min': 30, 'disp_max': 64, 'support_threshold': 0.9, 'gamma': 5, 'beta': 0.02,
        'queue_size': 9, 'lr_threshold': -1, 'flow.method': 'hs'})
    code = tune_apply.run(parse(['--apply', NODE, '--from', str(path)]))
    out, err = capsys.readouterr()
    assert code == tune_apply.EXIT_REFUSED, (out, err, node.output())
    assert ros.get_parameters(NODE, ['disp_min', 'disp_max', 'support_threshold', 'gamma',
                                     'beta', 'queue_size', 'lr_threshold']) == {
        'disp_min': 30, 'disp_max': 64, 'support_threshold': 0.9, 'gamma': 5.0, 'beta': 0.02,
        'queue_size': 5, 'lr_threshold': 2}
    assert f'{NODE}: 4 set, 1 unchanged, 3 refused (from {path})' in out
    refused = dict(line.split(': refused ')[1].split(': ', 1) for line in err.splitlines())
    assert set(refused) == {'queue_size', 'lr_threshold', 'flow.method'}, err
    assert 'read-only' in refused['queue_size'], err
    assert 'below the minimum 0' in refused['lr_threshold'], err
    assert refused['flow.method'] == f'{NODE} has no parameter flow.method', err
    # The same file again: nothing left to set but the refusals.
    assert tune_apply.run(parse(['--apply', NODE, '--from', str(path)])) == \
        tune_apply.EXIT_REFUSED
    assert f'{NODE}: 0 set, 5 unchanged, 3 refused' in capsys.readouterr().out


def test_apply_all_taken_from_the_tune_output_folder(ros, node, tmp_path, capsys):
    write_file(tmp_path / 'disparity.yaml', {'ipol_gap_width': 7, 'filter_median': True})
    args = parse(['--apply', NODE.lstrip('/')])
    args.out, args.node = tmp_path, 'disparity'  # the tune command's own --out and --node
    assert tune_apply.run(args) == 0, capsys.readouterr()
    assert ros.get_parameters(NODE, ['ipol_gap_width', 'filter_median']) == {
        'ipol_gap_width': 7, 'filter_median': True}
    assert capsys.readouterr().err == ''


def test_a_read_sent_before_the_node_is_there_is_sent_again(ros):
    # The first get goes out while no node serves it (lost: services are volatile); the node
    # appears a second later, and a resent get finds it.
    services = ParameterServices(ros.node, '/late_node', answered, 30.0)
    started = []

    def start() -> None:
        late = rclpy.create_node('late_node', context=ros.context)
        late.declare_parameter('x', 3)
        ros.executor.add_node(late)
        started.append(late)

    timer = threading.Timer(1.0, start)
    timer.start()
    try:
        assert services.values(['x']) == {'x': 3}
    finally:
        timer.join()
        for late in started:
            ros.executor.remove_node(late)
            late.destroy_node()


def test_a_node_that_does_not_answer(tmp_path):
    path = write_file(tmp_path / 'disparity.yaml', {'disp_max': 64})
    with pytest.raises(NodeNotFoundError, match='node /no_such_node does not answer: no '
                                                'parameter services within 0.5 s'):
        tune_apply.run(parse(['--apply', '/no_such_node', '--from', str(path),
                              '--apply-timeout', '0.5']))


@pytest.mark.parametrize('value', ['2024-01-01', '[1, a]', '99999999999999999999999'])
def test_a_value_no_parameter_can_hold(tmp_path, value):
    # A date, a list of mixed types, an integer beyond 64 bits: one line naming the file and the
    # parameter (exit 2), before any ROS traffic (the node named does not exist).
    path = tmp_path / 'disparity.yaml'
    path.write_text(f'/**:\n  ros__parameters:\n    disp_max: {value}\n')
    problem = re.escape(f'{path}: disp_max: ') + '.* is not a parameter value'
    with pytest.raises(DataFormatError, match=problem):
        tune_apply.run(parse(['--apply', '/no_such_node', '--from', str(path),
                              '--apply-timeout', '0.5']))


@pytest.mark.parametrize('text, problem', [
    (None, 'cannot read it'),
    ('a: [unclosed', 'not a parameter file'),
    ('/other_node:\n  ros__parameters:\n    disp_max: 64\n', 'no ros__parameters for /x'),
])
def test_unusable_parameter_files(tmp_path, text, problem):
    path = tmp_path / 'disparity.yaml'
    if text is not None:
        path.write_text(text)
    with pytest.raises(DataFormatError, match=problem):
        tune_apply.parameter_file_values(path, '/x')


def test_sections_for_the_node_and_nested_names(tmp_path):
    path = tmp_path / 'pipeline.yaml'
    path.write_text(yaml.safe_dump({
        '/**': {'ros__parameters': {'flow': {'method': 'hs', 'alpha': 2.0}, 'stereo': True}},
        '/**/vision_pipeline': {'ros__parameters': {'surf': {'upright': True}}},
        '/other': {'ros__parameters': {'flow': {'method': 'lk'}}}}))
    assert tune_apply.parameter_file_values(path, '/robot/vision_pipeline') == {
        'flow.method': 'hs', 'flow.alpha': 2.0, 'stereo': True, 'surf.upright': True}
    with pytest.raises(DataFormatError, match='--from FILE'):
        tune_apply.parameter_file(parse(['--apply', '/x']))
