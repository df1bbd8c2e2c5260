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
What the package needs from rclpy that Humble's rclpy (3.3) lacks, each with its Humble way.

Humble is the oldest ROS the package supports (every Jetson on JetPack 6). Its rclpy has no
pre- and post-set parameter callbacks, no count of a subscription's matched publishers, and
passes no MessageInfo to subscription callbacks; test/test_humble_rclpy.py checks the package
against the humble branch's API. The parameter client it lacks (``rclpy.parameter_client``) is
replaced by ros/remote_parameters.py.
"""
from __future__ import annotations

from typing import Any, Callable

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.subscription import Subscription

MessageCallback = Callable[[Any, dict[str, Any] | None], None]
"""A subscription callback that takes the message and rclpy's MessageInfo (None on Humble)."""
PreSet = Callable[[list[Parameter]], list[Parameter]]
OnSet = Callable[[list[Parameter]], SetParametersResult]
PostSet = Callable[[list[Parameter]], None]


def with_message_info(callback: MessageCallback, wanted: bool = True) -> Callable[..., None]:
    """
    Return ``callback(message, info)`` in the form this rclpy calls a subscription callback.

    Since Iron, rclpy passes MessageInfo (a dict: source and received timestamps, sequence
    numbers) to a callback that takes two arguments (``Subscription.CallbackType``, rclpy#922).
    Humble's executor passes the message only, so there ``info`` is None, as it is when not
    ``wanted`` (the EventsExecutor fails on such callbacks: ros/executor_choice.py).
    """
    if wanted and hasattr(Subscription, 'CallbackType'):  # Iron and later
        return callback
    return lambda message: callback(message, None)


def add_set_parameters_callbacks(node: Node, pre_set: PreSet, on_set: OnSet,
                                 post_set: PostSet) -> None:
    """
    Register the three stages of a parameter change, as Iron's rclpy runs them.

    ``pre_set`` may change the values before rclpy checks them against their descriptors,
    ``on_set`` accepts or refuses them, ``post_set`` sees those accepted. Humble's rclpy has only
    the ``on_set`` stage: there, the node's ``set_parameters_atomically`` (what its parameter
    services call, once per parameter for set_parameters) and ``set_parameters`` run the other
    two around it.
    """
    node.add_on_set_parameters_callback(on_set)
    if (hasattr(node, 'add_pre_set_parameters_callback')  # Iron and later
            and hasattr(node, 'add_post_set_parameters_callback')):
        node.add_pre_set_parameters_callback(pre_set)
        node.add_post_set_parameters_callback(post_set)
        return
    set_atomically = node.set_parameters_atomically

    def set_parameters_atomically(parameters: list[Parameter]) -> SetParametersResult:
        screened = pre_set(parameters)
        result = set_atomically(screened)
        if result.successful:
            post_set(screened)
        return result

    def set_parameters(parameters: list[Parameter]) -> list[SetParametersResult]:
        return [set_parameters_atomically([parameter]) for parameter in parameters]

    node.set_parameters_atomically = set_parameters_atomically  # type: ignore[method-assign]
    node.set_parameters = set_parameters  # type: ignore[method-assign]


def publisher_count(node: Node, subscription: Subscription) -> int:
    """
    Return how many publishers ``subscription`` is matched with.

    Humble's rclpy cannot tell matched publishers: there, those of its topic in the ROS graph,
    also one whose QoS does not match.
    """
    if hasattr(subscription, 'get_publisher_count'):  # Iron and later
        return subscription.get_publisher_count()
    return node.count_publishers(subscription.topic_name)
