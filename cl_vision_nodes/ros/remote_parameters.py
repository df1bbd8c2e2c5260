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
Parameters of another, running node through its parameter services, as ``ros2 param`` uses them.

``ParameterServices`` calls ``<node>/list_parameters``, ``get_parameters``, ``set_parameters``
and ``describe_parameters`` with plain service clients: rclpy's own client
(``rclpy.parameter_client``) exists only since Iron, and the package runs on Humble too. The
test harness (test/rosutil.py) talks to nodes through it as well.

``apply_parameters`` (``cl-vision tune --apply``) is ``ros2 param load``: only the values that
differ from the node's current ones are sent (a name the node does not declare is refused here:
rclpy's reason for it names no parameter), each accepted or refused on its own with the node's
reason (the set_parameters service, not the atomic one, so one refusal does not undo the rest).
A value refused because of another one sent with it (a check between two parameters, e.g.
``disp_min`` below ``disp_max``) is sent again once the others are set, until a round sets
nothing more.

A read (list, get, describe) unanswered after ``RESEND_S`` is sent again: a request sent
before the node's request reader matched the client is lost (a node just started under the
name of one that stopped is still seen ready through the old one's discovery entries). A set
is sent once: its answer is the node's decision.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
import threading
import time
from typing import Any, Callable, Mapping

from cl_vision_nodes.errors import DataFormatError, NodeNotFoundError
from cl_vision_nodes.params import Value
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters
import rclpy
from rclpy.client import Client
from rclpy.context import Context
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.task import Future

CLIENT_NODE = 'cl_vision_tune_apply'
SERVICES = {'list_parameters': ListParameters, 'get_parameters': GetParameters,
            'set_parameters': SetParameters, 'describe_parameters': DescribeParameters}
INT64 = range(-2**63, 2**63)
READS = frozenset({'list_parameters', 'get_parameters', 'describe_parameters'})
RESEND_S = 2.0

Wait = Callable[[Future, float], None]
"""Return once a future is done or the seconds passed: what spins the client node differs."""


def spinning(executor: Executor) -> Wait:
    """Wait by spinning ``executor``, the client node's, in this thread."""
    return lambda future, timeout_s: executor.spin_until_future_complete(
        future, timeout_sec=timeout_s)


def answered(future: Future, timeout_s: float) -> None:
    """Wait for a future that another thread's executor completes (the node spins there)."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    done.wait(timeout_s)


def first_answer(answer: Future, done: Future) -> None:
    """Give ``answer`` the result of ``done``, the first of the sent requests answered."""
    if not answer.done() and not done.cancelled():
        answer.set_result(done.result())


class ParameterServices:
    """
    The parameter services of node ``remote``, called from ``node``.

    Every call waits (``wait``) at most ``timeout_s`` for its answer and raises
    NodeNotFoundError without one, as for services that never appear (``wait_for_services``).
    """

    def __init__(self, node: Node, remote: str, wait: Wait, timeout_s: float):
        self.remote = remote
        self.wait = wait
        self.timeout_s = timeout_s
        self._clients: dict[str, Client] = {
            name: node.create_client(srv_type, f'{remote}/{name}')
            for name, srv_type in SERVICES.items()}

    def wait_for_services(self) -> None:
        """Return once every service is there; NodeNotFoundError after ``timeout_s``."""
        deadline = time.monotonic() + self.timeout_s
        for client in self._clients.values():
            if not client.wait_for_service(timeout_sec=max(deadline - time.monotonic(), 0.0)):
                raise NodeNotFoundError(
                    f'node {self.remote} does not answer: no parameter services within '
                    f'{self.timeout_s:g} s (is it running, under this name and in this '
                    'ROS_DOMAIN_ID?)')

    def _call(self, service: str, request: Any) -> Any:
        client = self._clients[service]
        answer = Future()
        sent: list[Future] = []
        deadline = time.monotonic() + self.timeout_s
        interval = RESEND_S if service in READS else self.timeout_s
        while not answer.done() and (left := deadline - time.monotonic()) > 0:
            sent.append(client.call_async(request))
            sent[-1].add_done_callback(lambda done: first_answer(answer, done))
            self.wait(answer, min(interval, left))
        for future in sent:
            future.cancel()
        if not answer.done():
            raise NodeNotFoundError(
                f'node {self.remote} did not answer {service} within {self.timeout_s:g} s')
        return answer.result()

    def names(self) -> list[str]:
        """Return the names of every declared parameter (``ros2 param list``)."""
        return list(self._call('list_parameters', ListParameters.Request()).result.names)

    def values(self, names: list[str]) -> dict[str, Any]:
        """
        Return the values of ``names`` (``ros2 param get``), by name.

        None at all if one is not declared: the service answers none then.
        """
        answer = self._call('get_parameters', GetParameters.Request(names=names))
        return {name: parameter_value_to_python(value)
                for name, value in zip(names, answer.values)}

    def set_each(self, parameters: list[Parameter]) -> list[SetParametersResult]:
        """Set each of ``parameters`` on its own (``ros2 param set``); the node's results."""
        request = SetParameters.Request(parameters=[p.to_parameter_msg() for p in parameters])
        return list(self._call('set_parameters', request).results)

    def descriptors(self, names: list[str]) -> list[ParameterDescriptor]:
        """Return the descriptors of ``names`` (``ros2 param describe``)."""
        request = DescribeParameters.Request(names=names)
        return list(self._call('describe_parameters', request).descriptors)


def to_parameter(name: str, value: Any) -> Parameter:
    """
    Return ``value`` as a parameter; DataFormatError for a value no parameter can hold.

    rclpy's own check raises TypeError, and an integer beyond 64 bits fails inside rclpy's
    C code when sent. None stays a parameter without value, refused by a node with a reason.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    if not any(type(v) is int and v not in INT64 for v in items):
        with contextlib.suppress(TypeError):
            return Parameter(name, value=value)
    raise DataFormatError(f'{name}: {value!r} is not a parameter value (a bool, a 64-bit '
                          'integer, a double, a string, or a list of one of these)')


@dataclass
class AppliedParameters:
    """What a node made of the values sent to it."""

    set: dict[str, Value] = field(default_factory=dict)  # noqa: A003 (a field only)
    """Values the node accepted, by name."""
    unchanged: list[str] = field(default_factory=list)
    """Names whose value the node already had (not sent)."""
    refused: dict[str, str] = field(default_factory=dict)
    """The node's reason, by name."""


def _as_sent(value: Value, current: Any) -> Value:
    """Return ``value`` as the node's type: 2 for a double parameter is 2.0 (YAML drops .0)."""
    return float(value) if type(value) is int and type(current) is float else value


def apply_parameters(node_name: str, values: Mapping[str, Value],
                     timeout_s: float) -> AppliedParameters:
    """
    Set ``values`` on the running node ``node_name``; NodeNotFoundError if it does not answer.

    ``timeout_s`` bounds the wait for its parameter services to appear and for each answer.
    DataFormatError, before any ROS traffic, for a value no parameter can hold.
    """
    for name, value in values.items():
        to_parameter(name, value)
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(CLIENT_NODE, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        services = ParameterServices(node, node_name, spinning(executor), timeout_s)
        services.wait_for_services()
        return _apply(services, values)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _apply(services: ParameterServices, values: Mapping[str, Value]) -> AppliedParameters:
    listed = set(services.names())
    current = services.values([name for name in values if name in listed])
    applied = AppliedParameters()
    pending: dict[str, Value] = {}
    for name, now in current.items():
        sent = _as_sent(values[name], now)
        if sent == now and type(sent) is type(now):
            applied.unchanged.append(name)
        else:
            pending[name] = sent
    while pending:
        results = dict(zip(pending, services.set_each(
            [to_parameter(n, v) for n, v in pending.items()])))
        taken = {n: pending[n] for n, r in results.items() if r.successful}
        applied.set.update(taken)
        applied.refused = {n: r.reason for n, r in results.items() if not r.successful}
        pending = {n: pending[n] for n in applied.refused} if taken else {}
    applied.refused.update({name: f'{services.remote} has no parameter {name}'
                            for name in values if name not in current})  # rclpy's names none
    return applied
