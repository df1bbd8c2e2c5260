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
The reliability of a node's inputs: what their publishers offer, decided per topic.

Why: camera drivers publish reliable on their RMW's defaults. On Fast DDS' defaults (a 0.5 MB
shared-memory segment) a large frame goes as UDP fragments, and a best-effort reader loses the
whole frame with any one fragment (4 of 60 640x480 bgr8 frames arrived, issue 29); a reliable
reader has the lost fragments sent again. A best-effort publisher, though, matches only a
best-effort reader. So each input subscribes reliable at first, which a reliable camera matches at
once (no later swap, no frame lost), and turns best effort when a publisher of its topic is
best effort, reliable again once every publisher is. The ROS graph is polled
(``get_publishers_info_by_topic``, every ``POLL_PERIOD_S``): Humble's rclpy has no matched
events. The decision is logged once per topic (again only when it changes). History stays
keep-last with the node's depth, so the newest frame still wins.

``qos_overrides.<topic>.subscription.reliability`` (``best_available``, the default, adapts;
``reliable``, ``best_effort`` or ``system_default`` fixes it) is declared here, read-only as
rclpy declares it, so the override wins; history and depth overrides go through rclpy's
QoSOverridingOptions as before. ``best_available`` is Iron's name for "reliable unless a
publisher is best effort", which its rmw decides once, at creation; here it follows the graph.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.ros.rclpy_compat import with_message_info
from cl_vision_nodes.ros.topics import other_transport, Topic
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.node import Node, SubscriptionEventCallbacks
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSPolicyKind, QoSProfile,
                       ReliabilityPolicy)
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.subscription import Subscription
from rclpy.topic_endpoint_info import TopicEndpointInfo

ADAPT = 'best_available'
FIXED = {'reliable': ReliabilityPolicy.RELIABLE, 'best_effort': ReliabilityPolicy.BEST_EFFORT,
         'system_default': ReliabilityPolicy.SYSTEM_DEFAULT}
POLL_PERIOD_S = 0.5
SILENT_AFTER_S = 10.0
LOSS_LOG_PERIOD_S = 30.0
OVERRIDES = (QoSPolicyKind.HISTORY, QoSPolicyKind.DEPTH)  # reliability: ``Input.fixed``
ADAPTED_OVERRIDES = {'reliability': ADAPT, 'history': 'keep_last'}
"""An input's QoS overrides as ``ros2 param dump`` lists them untouched (depth: the node's)."""

Callback = Callable[[Any, Any], None]


def policy_name(reliability: ReliabilityPolicy) -> str:
    return next((name for name, kind in FIXED.items() if kind == reliability), str(reliability))


def type_name(msg_type: type) -> str:
    return f"{msg_type.__module__.split('.')[0]}/msg/{msg_type.__name__}"


def offered(publishers: list[TopicEndpointInfo]) -> ReliabilityPolicy | None:
    """Return what ``publishers`` offer together: best effort if any does, else reliable."""
    kinds = {p.qos_profile.reliability for p in publishers}
    for kind in (ReliabilityPolicy.BEST_EFFORT, ReliabilityPolicy.RELIABLE):
        if kind in kinds:
            return kind
    return None


class Input:
    """One input topic's subscription, whose reliability follows its publishers (or is fixed)."""

    def __init__(self, node: Node, msg_type: type, topic: str, callback: Callback, depth: int,
                 raw: bool, message_info: bool):
        self.node = node
        self.msg_type = msg_type
        self.topic = node.resolve_topic_name(topic)
        self.depth = depth
        self.raw = raw
        self.received = 0
        self.fixed = self._declare_reliability()
        self._logged: tuple[ReliabilityPolicy, ReliabilityPolicy | None] | None = None
        self._seen: tuple = ()
        self._callback = with_message_info(self._counted(callback), message_info)
        publishers = self.publishers()
        self.offered = offered(publishers)
        self.reliability = next(r for r in (self.fixed, self.offered, ReliabilityPolicy.RELIABLE)
                                if r is not None)
        self.subscription = self._create()
        self._seen = self._key(publishers)
        if publishers:
            self._log_decision()

    def _declare_reliability(self) -> ReliabilityPolicy | None:
        """Declare the reliability override (read-only); return the fixed one, None to adapt."""
        name = f'qos_overrides.{self.topic}.subscription.reliability'
        choices = ', '.join([ADAPT, *FIXED])
        descriptor = ParameterDescriptor(
            description=f'reliability for subscription `{self.topic}`: {ADAPT} (the default) '
                        "takes the publishers' (reliable unless one is best effort); "
                        f'{", ".join(FIXED)} fixes it',
            read_only=True)
        try:
            value = self.node.declare_parameter(name, ADAPT, descriptor).value
        except InvalidParameterTypeException as exc:
            raise ParameterError(f'{name}: expected one of {choices}') from exc
        if value != ADAPT and value not in FIXED:
            raise ParameterError(f'{name}: {value!r} is not one of {choices}')
        return FIXED.get(value)

    def _counted(self, callback: Callback) -> Callback:
        def counted(message: Any, info: Any) -> None:
            self.received += 1
            callback(message, info)
        return counted

    def _create(self) -> Subscription:
        qos = QoSProfile(reliability=self.reliability, history=HistoryPolicy.KEEP_LAST,
                         depth=self.depth, durability=DurabilityPolicy.VOLATILE)
        return self.node.create_subscription(
            self.msg_type, self.topic, self._callback, qos, raw=self.raw,
            event_callbacks=SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible),
            qos_overriding_options=QoSOverridingOptions(policy_kinds=OVERRIDES))

    def publishers(self) -> list[TopicEndpointInfo]:
        """Return the publishers of the topic with this input's message type."""
        wanted = type_name(self.msg_type)
        return [p for p in self.node.get_publishers_info_by_topic(self.topic)
                if p.topic_type == wanted]

    @staticmethod
    def _key(publishers: list[TopicEndpointInfo]) -> tuple:
        return tuple(sorted((bytes(p.endpoint_gid), p.qos_profile.reliability.value)
                            for p in publishers))

    def refresh(self) -> None:
        """Follow the publishers: a new subscription when what they offer asks for another."""
        publishers = self.publishers()
        key = self._key(publishers)
        if key == self._seen:
            return
        self._seen = key
        found = offered(publishers)
        if found is None:  # none left: keep the subscription for the next one
            return
        self.offered = found
        wanted = found if self.fixed is None else self.fixed
        if wanted != self.reliability:
            # One callback of the executor thread: no message is taken in between, so none comes
            # twice; the handler is the same callable.
            self.node.destroy_subscription(self.subscription)
            self.reliability = wanted
            self.subscription = self._create()
        self._log_decision()

    def _log_decision(self) -> None:
        decision = (self.reliability, self.offered)
        if decision == self._logged:
            return
        self._logged = decision
        offer = 'none' if self.offered is None else policy_name(self.offered)
        how = '' if self.fixed is None else ' (qos_overrides)'
        self.node.get_logger().info(
            f'input {self.topic}: publisher {offer}, subscribed '
            f'{policy_name(self.reliability)}{how}, keep-last {self.depth}')

    def _on_incompatible(self, event: Any) -> None:
        """Say why a publisher is not heard when the override excludes it (else: adapted)."""
        if self.fixed is not None:
            self.node.get_logger().warning(
                f'input {self.topic}: a publisher offers QoS that the {policy_name(self.fixed)} '
                'override (qos_overrides) cannot match: nothing is received from it',
                throttle_duration_sec=LOSS_LOG_PERIOD_S)

    def describe(self) -> str:
        """Say what publishes on the topic, for a node that receives nothing."""
        everyone = self.node.get_publishers_info_by_topic(self.topic)
        if not everyone:
            return f'{self.topic}: no publisher{self._other_transport()}'
        other = [p for p in everyone if p.topic_type != type_name(self.msg_type)]
        if other:
            return f'{self.topic}: publisher of {other[0].topic_type} (the node takes ' \
                   f'{type_name(self.msg_type)})'
        names = ', '.join(sorted({f'{p.node_namespace.rstrip("/")}/{p.node_name}'
                                  for p in everyone}))
        if self.fixed == ReliabilityPolicy.RELIABLE \
                and self.offered == ReliabilityPolicy.BEST_EFFORT:
            return f'{self.topic}: {names} publishes best_effort, incompatible with the ' \
                   'reliable override (qos_overrides)'
        return f'{self.topic}: {names}, nothing arrived'

    def _other_transport(self) -> str:
        """Name the image_transport that hears the camera, where it publishes the other way."""
        found = other_transport(Topic(self.topic, self.msg_type))
        if found is None:
            return ''
        topic, transport = found
        if not any(p.topic_type == topic.type_name
                   for p in self.node.get_publishers_info_by_topic(topic.name)):
            return ''
        return f' ({topic.name} has a {topic.type_name} publisher: set image_transport: ' \
               f'{transport})'


class InputQos:
    """A node's inputs: their subscriptions follow their publishers; silence and loss named."""

    def __init__(self, node: Node, message_info: bool):
        self.node = node
        self.message_info = message_info
        self.inputs: list[Input] = []
        self._ready_at: float | None = None
        self._silence_checked = False
        node.create_timer(POLL_PERIOD_S, self.poll)

    def subscribe(self, msg_type: type, topic: str, callback: Callback, depth: int,
                  raw: bool) -> Input:
        """Subscribe ``callback(msg, info)`` to ``topic`` (info None where rclpy gives none)."""
        entry = Input(self.node, msg_type, topic, callback, depth, raw, self.message_info)
        self.inputs.append(entry)
        return entry

    def ready(self) -> None:
        """Start the clock of the silence check: the node takes frames from now."""
        self._ready_at = time.monotonic()

    def poll(self) -> None:
        for entry in self.inputs:
            entry.refresh()
        if self._silence_checked or self._ready_at is None \
                or time.monotonic() - self._ready_at < SILENT_AFTER_S:
            return
        self._silence_checked = True
        silent = [entry for entry in self.inputs if not entry.received]
        if silent:
            self.node.get_logger().warning(
                f'no input {SILENT_AFTER_S:g} s after ready: '
                + '; '.join(entry.describe() for entry in silent))

    def loss_cause(self) -> str:
        """Name the likely cause of frames lost before the node, and the fix."""
        loose = [e for e in self.inputs if e.reliability != ReliabilityPolicy.RELIABLE]
        if not loose:
            return ('with reliable inputs, newer frames replaced them before the node took them '
                    '(its executor thread fell behind)')
        entry = loose[0]
        if entry.fixed is not None:
            return (f'{entry.topic} is subscribed best effort by qos_overrides: set its '
                    f'reliability to {ADAPT} or reliable, so lost fragments are sent again')
        return (f'{entry.topic} is published best effort: a large frame on Fast DDS defaults '
                '(0.5 MB shared memory) goes as UDP fragments and one lost fragment loses it; '
                "give the camera the package's Fast DDS profile (README, Large messages) or "
                'publish reliable')
