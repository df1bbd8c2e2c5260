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
Parameters set on another, running node through its parameter services, as ``ros2 param load``.

Only the values that differ from the node's current ones are sent (a name the node does not
declare is refused here: rclpy's reason for it names no parameter), each accepted or refused on
its own with the node's reason (the set_parameters service, not the atomic one, so one refusal
does not undo the rest). A value refused because of another one sent with it (a check between
two parameters, e.g. ``disp_min`` below ``disp_max``) is sent again once the others are set,
until a round sets nothing more.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from cl_vision_nodes.errors import NodeNotFoundError
from cl_vision_nodes.params import Value
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient
from rclpy.task import Future

CLIENT_NODE = 'cl_vision_tune_apply'


@dataclass
class AppliedParameters:
    """What a node made of the values sent to it."""

    set: dict[str, Value] = field(default_factory=dict)  # noqa: A003 (a field only)
    """Values the node accepted, by name."""
    unchanged: list[str] = field(default_factory=list)
    """Names whose value the node already had (not sent)."""
    refused: dict[str, str] = field(default_factory=dict)
    """The node's reason, by name."""


def _answer(executor: SingleThreadedExecutor, future: Future, what: str, node_name: str,
            timeout_s: float) -> Any:
    executor.spin_until_future_complete(future, timeout_sec=timeout_s)
    if not future.done():
        future.cancel()
        raise NodeNotFoundError(f'node {node_name} did not answer {what} within {timeout_s:g} s')
    return future.result()


def _as_sent(value: Value, current: Any) -> Value:
    """Return ``value`` as the node's type: 2 for a double parameter is 2.0 (YAML drops .0)."""
    return float(value) if type(value) is int and type(current) is float else value


def apply_parameters(node_name: str, values: Mapping[str, Value],
                     timeout_s: float) -> AppliedParameters:
    """
    Set ``values`` on the running node ``node_name``; NodeNotFoundError if it does not answer.

    ``timeout_s`` bounds the wait for its parameter services to appear and for each answer.
    """
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(CLIENT_NODE, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        return _apply(executor, AsyncParameterClient(node, node_name), node_name, values,
                      timeout_s)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _apply(executor: SingleThreadedExecutor, client: AsyncParameterClient, node_name: str,
           values: Mapping[str, Value], timeout_s: float) -> AppliedParameters:
    if not client.wait_for_services(timeout_sec=timeout_s):
        raise NodeNotFoundError(
            f'node {node_name} does not answer: no parameter services within {timeout_s:g} s '
            '(is it running, under this name and in this ROS_DOMAIN_ID?)')
    listed = _answer(executor, client.list_parameters(), 'list_parameters', node_name,
                     timeout_s).result.names
    declared = [name for name in values if name in set(listed)]
    answer = _answer(executor, client.get_parameters(declared), 'get_parameters', node_name,
                     timeout_s)
    current = {n: parameter_value_to_python(v) for n, v in zip(declared, answer.values)}
    applied = AppliedParameters()
    pending: dict[str, Value] = {}
    for name in declared:
        value = values[name]
        sent = _as_sent(value, current[name])
        if sent == current[name] and type(sent) is type(current[name]):
            applied.unchanged.append(name)
        else:
            pending[name] = sent
    while pending:
        answer = _answer(executor, client.set_parameters(
            [Parameter(n, value=v) for n, v in pending.items()]), 'set_parameters', node_name,
            timeout_s)
        results = dict(zip(pending, answer.results))
        taken = {n: pending[n] for n, r in results.items() if r.successful}
        applied.set.update(taken)
        applied.refused = {n: r.reason for n, r in results.items() if not r.successful}
        pending = {n: pending[n] for n in applied.refused} if taken else {}
    applied.refused.update({name: f'{node_name} has no parameter {name}' for name in values
                            if name not in current})  # rclpy's own reason names none
    return applied
