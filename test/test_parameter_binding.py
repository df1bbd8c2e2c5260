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
from cl_vision_nodes.errors import KernelBuildError
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.ros.parameters import ParameterBinding
import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter

pytestmark = pytest.mark.ros  # an rclpy node in this process


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
