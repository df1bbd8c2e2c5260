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
A change the algorithm cannot take is refused with its reason, not accepted and then failed.

The binding applies a change in the set-parameters callback (what `ros2 param set` waits for).
Each test runs on this rclpy's Node and on one without pre- and post-set callbacks, as
Humble's (``HumbleNode``), where ``rclpy_compat`` runs them.
"""
from pathlib import Path

from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.errors import KernelBuildError, ParameterError
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.ros.parameters import ParameterBinding
from cl_vision_nodes.schemas import CAPABILITIES, PIPELINE_SCHEMA
import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
import yaml

pytestmark = pytest.mark.ros  # an rclpy node in this process

REPO = Path(__file__).resolve().parents[1]


class HumbleNode(Node):
    """A Node as Humble's rclpy has it: without pre- and post-set parameter callbacks."""

    @property
    def add_pre_set_parameters_callback(self):
        raise AttributeError('Humble has no pre-set parameter callbacks')

    add_post_set_parameters_callback = add_pre_set_parameters_callback


@pytest.fixture(params=[Node, HumbleNode])
def node(request):
    context = Context()
    rclpy.init(context=context)
    node = request.param('binding_test', context=context)
    yield node
    node.destroy_node()
    rclpy.shutdown(context=context)


def test_a_change_the_algorithm_refuses_is_not_accepted(node):
    applied = []

    def apply(values, changed):
        if values['block_size'] == 16:
            raise KernelBuildError('building kernels/flow/block_matching.cl failed: error: x')
        applied.append((values['block_size'], changed))

    binding = ParameterBinding(node, FLOW_SCHEMA, apply)
    refused = node.set_parameters([Parameter('block_size', value=16)])[0]
    assert not refused.successful and 'block_matching.cl failed' in refused.reason
    assert binding.values['block_size'] == 8
    assert node.get_parameter('block_size').value == 8 and applied == []
    taken = node.set_parameters([Parameter('block_size', value=12)])[0]
    assert taken.successful, taken.reason
    assert binding.values['block_size'] == 12 and applied == [(12, {'block_size'})]


def test_values_are_screened_before_rclpy_checks_them(node):
    # What the parameter services call: an int for a double is widened (rclpy alone refuses it
    # as the wrong type), a value out of range is refused with the schema's reason.
    binding = ParameterBinding(node, FLOW_SCHEMA)
    widened = node.set_parameters_atomically([Parameter('alpha', value=2)])
    assert widened.successful, widened.reason
    assert node.get_parameter('alpha').value == 2.0 and binding.values['alpha'] == 2.0
    refused = node.set_parameters_atomically([Parameter('warps', value=0)])
    assert not refused.successful and 'warps' in refused.reason, refused.reason
    assert node.get_parameter('warps').value == 3 and binding.values['warps'] == 3


@pytest.fixture
def start_node():
    """Make a node with start-up overrides (what --params-file and -p give rcl)."""
    context = Context()
    rclpy.init(context=context)
    nodes = []

    def make(name, overrides, node_class=Node):
        nodes.append(node_class(name, context=context, parameter_overrides=[
            Parameter(key, value=value) for key, value in overrides.items()]))
        return nodes[-1]
    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


@pytest.mark.parametrize('node_class', [Node, HumbleNode])
def test_an_int_for_a_float_and_for_a_string_are_taken_at_start(start_node, node_class):
    # `-p hessian_threshold:=400`, `alpha: 5` in a file, `-p device:=3090`: rclpy alone
    # refuses them at declaration ("expecting type 'DOUBLE'"), ros2 param set takes 5 for 5.0
    node = start_node('flow_node', {'alpha': 7, 'device': 3090}, node_class)
    binding = ParameterBinding(node, FLOW_SCHEMA)
    assert binding.values['alpha'] == 7.0 and binding.values['device'] == '3090'
    assert node.get_parameter('alpha').value == 7.0
    assert node.get_parameter('device').value == '3090'


@pytest.mark.parametrize('node_class', [Node, HumbleNode])
def test_image_procs_interpolation_numbers_at_start_and_by_param_set(start_node, node_class):
    # an image_proc parameter file's `interpolation: 1`, `ros2 param set .. interpolation 2`
    node = start_node('rectify_node', {'interpolation': 0}, node_class)
    binding = ParameterBinding(node, RECTIFY_SCHEMA)
    assert binding.values['interpolation'] == 'nearest'
    assert node.get_parameter('interpolation').value == 'nearest'
    taken = node.set_parameters([Parameter('interpolation', value=2)])[0]
    assert taken.successful, taken.reason
    assert binding.values['interpolation'] == 'cubic'
    assert node.get_parameter('interpolation').value == 'cubic'
    refused = node.set_parameters([Parameter('interpolation', value=4)])[0]  # INTER_LANCZOS4
    assert not refused.successful and 'one of nearest (0), linear (1)' in refused.reason
    assert node.get_parameter('interpolation').value == 'cubic'


def test_a_value_of_the_wrong_type_at_start_names_the_parameter(start_node):
    node = start_node('flow_node', {'alpha': 'abc'})
    with pytest.raises(ParameterError, match=r"^alpha: expected float, got str 'abc'"):
        ParameterBinding(node, FLOW_SCHEMA)


def flow_file(tmp_path, key, values):
    path = tmp_path / 'mine.yaml'
    path.write_text(yaml.safe_dump({key: {'ros__parameters': values}}))
    return str(path)


@pytest.mark.parametrize('key', ['/**', '/**/flow_node', '/cam/flow_node', '/*/flow_node'])
def test_the_pipeline_takes_a_flow_node_file_into_its_flow_section(start_node, tmp_path, key):
    path = flow_file(tmp_path, key, {'method': 'hs', 'alpha': 7, 'device': 'gpu'})
    node = start_node('vision_pipeline', {}, lambda *a, **k: Node(*a, namespace='/cam', **k))
    binding = ParameterBinding(node, PIPELINE_SCHEMA, argv=['x', '--flow-params', path],
                               sections=CAPABILITIES)
    assert binding.values['flow.method'] == 'hs' and binding.values['flow.alpha'] == 7.0
    assert binding.values['device'] == 'auto'  # shared parameters stay the pipeline's own
    assert node.get_parameter('flow.method').value == 'hs'


def test_a_node_files_defaults_leave_the_pipelines_own_values(start_node, tmp_path):
    """A shipped or tuned file lists every parameter: its defaults undo nothing."""
    shipped = str(REPO / 'config' / 'flow_node.yaml')
    mine = flow_file(tmp_path, '/**', {'method': 'hs'})
    for path, method in ((shipped, 'bm'), (mine, 'hs')):
        node = start_node(f'vision_pipeline_{method}', {'flow.method': 'bm'})
        binding = ParameterBinding(node, PIPELINE_SCHEMA, argv=['x', '--flow-params', path],
                                   sections=CAPABILITIES)
        assert binding.values['flow.method'] == method


def test_a_file_for_another_node_or_a_missing_one(start_node, tmp_path):
    node = start_node('vision_pipeline', {})
    elsewhere = flow_file(tmp_path, '/other/flow_node', {'method': 'hs'})
    binding = ParameterBinding(node, PIPELINE_SCHEMA, argv=['x', '--flow-params', elsewhere],
                               sections=CAPABILITIES)
    assert binding.values['flow.method'] == 'auto'
    with pytest.raises(ParameterError, match='--surf-params /nonexistent.yaml: no such file'):
        ParameterBinding(start_node('vision_pipeline_2', {}), PIPELINE_SCHEMA,
                         argv=['x', '--surf-params', '/nonexistent.yaml'],
                         sections=CAPABILITIES)
