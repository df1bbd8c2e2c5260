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
Publish a rosbag2 (mcap or sqlite3) for machines without ros2 bag (`cl-vision replay BAG`).

Messages go out as their stored CDR bytes (``Publisher.publish(bytes)``), so nothing is
deserialised, at their recorded pace divided by the rate. Publishers are reliable: a reliable
subscriber (the nodes' inputs) gets every message sent after the replay matched it, a best-effort
one takes them too but loses those sent before its own side matched. With ``clock`` it also
publishes the bag time on /clock for nodes running with use_sim_time. The replay node is spun in
a thread while the main thread publishes, so it answers parameter and graph queries (``ros2 param
list`` waits on every node), and a progress line is printed every second.

sensor_msgs/CompressedImage topics go out as recorded, JPEG or PNG bytes unchanged; the replay
says how a node takes each one (``compressed_hint``): image_transport's convention, the
parameter ``image_transport:=compressed`` and the image topic remapped to the base name (the
topic without ``/compressed``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import threading
import time
from typing import Any, Iterator

from cl_vision_nodes.bags.storage import Bag, BagMessage, COMPRESSED_TYPE, message_class, TRANSPORT
from cl_vision_nodes.ros.dds_profile import use_large_image_profile
from cl_vision_nodes.ros.stop_signals import StopSignals

REPLAY_DEPTH = 100
LINGER_S = 2.0
PROGRESS_PERIOD_S = 1.0
QUERY_POLL_S = 0.1


@dataclass(frozen=True)
class ReplayOptions:
    """What to replay, how fast, and what besides the messages."""

    bag: Path
    topics: list[str] | None = None  # None: every topic
    start_offset_s: float = 0.0  # skip the first seconds of the bag
    rate: float = 1.0  # speed factor (2: twice as fast)
    loop: bool = False  # start over at the end
    clock: bool = False  # the bag time on /clock
    wait_subscribers_s: float = 1.0  # for every topic to have a subscriber


def compressed_hint(topic: str) -> str:
    """Say how a node subscribes compressed image ``topic`` (one line)."""
    if not topic.endswith(TRANSPORT):
        return (f'{topic} is a CompressedImage topic not named <image>{TRANSPORT}: nodes with '
                'image_transport:=compressed subscribe <image>/compressed and cannot take it')
    return (f'{topic} is compressed: run nodes with -p image_transport:=compressed -r '
            f'image:={topic[:-len(TRANSPORT)]}')


def paced(bag: Bag, rate: float, loop: bool, stop: threading.Event) -> Iterator[BagMessage]:
    """
    Yield messages at their recorded spacing divided by ``rate``, until ``stop`` is set.

    Over and over with ``loop``.
    """
    while not stop.is_set():
        wall0 = bag0 = None
        for msg in bag.messages():
            if wall0 is None:
                wall0, bag0 = time.monotonic(), msg.timestamp_ns
            delay = wall0 + (msg.timestamp_ns - bag0) / 1e9 / rate - time.monotonic()
            if stop.wait(max(delay, 0.0)):
                return
            yield msg
        if not loop or wall0 is None:
            return


def wait_for_subscribers(publishers: list, timeout_s: float, stop: threading.Event) -> None:
    """
    Wait until every topic has a subscriber (or the timeout).

    DDS discovery takes a moment, and a frame published before it completes is lost for good.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(p.get_subscription_count() == 0
                                              for p in publishers):
        if stop.wait(0.05):
            return
    stop.wait(min(0.2, timeout_s))  # the subscriber side matches right after the publisher


class Progress:
    """One line a second while replaying (messages sent, bag time), and a summary at the end."""

    def __init__(self, bag: Bag):
        self.bag, self.sent, self._next = bag, 0, 0.0

    def update(self, msg: BagMessage) -> None:
        self.sent += 1
        now = time.monotonic()
        if now >= self._next:
            self._next = now + PROGRESS_PERIOD_S
            print(f'replay: {self.sent} messages, bag time '
                  f'{(msg.timestamp_ns - self.bag.start_ns) / 1e9:.1f} of '
                  f'{self.bag.duration_ns / 1e9:.1f} s', flush=True)

    def summary(self, interrupted: bool) -> str:
        return (f'replayed {self.sent} messages on {len(self.bag.topics)} topics from '
                f"{self.bag.path}{' (interrupted)' if interrupted else ''}")


def answer_queries(executor: Any, stopped: threading.Event) -> None:
    """Thread body: answer service and graph queries until ``stopped`` is set."""
    while not stopped.is_set():
        executor.spin_once(timeout_sec=QUERY_POLL_S)


def replay(options: ReplayOptions) -> int:
    """Publish the bag as ``options`` say until its end or a stop signal; return the exit code."""
    bag = Bag(options.bag, options.topics, options.start_offset_s)
    classes = {topic: message_class(msgtype) for topic, msgtype in bag.topics.items()}
    stop = StopSignals(lambda line: print(f'replay: {line}', flush=True))
    stop.install()
    # ROS here, not at the top: the library imports without ROS (test_layers), cl-vision too.
    import rclpy
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from rosgraph_msgs.msg import Clock
    for topic in sorted(t for t, m in bag.topics.items() if m == COMPRESSED_TYPE):
        print(f'replay: {compressed_hint(topic)}', flush=True)
    use_large_image_profile()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('cl_vision_replay')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stopped = threading.Event()
    spinner = threading.Thread(target=answer_queries, args=(executor, stopped), daemon=True)
    spinner.start()
    progress = Progress(bag)
    try:
        with stop.calling(stopped.set):
            stop.phase = 'the replay'
            qos = QoSProfile(depth=REPLAY_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
            publishers = {topic: node.create_publisher(cls, topic, qos)
                          for topic, cls in classes.items()}
            clock = node.create_publisher(Clock, '/clock', 10) if options.clock else None
            wait_for_subscribers([*publishers.values(), *([clock] if clock else [])],
                                 options.wait_subscribers_s, stopped)
            for msg in paced(bag, options.rate, options.loop, stopped):
                if clock is not None:
                    stamp = Clock()
                    stamp.clock.sec, stamp.clock.nanosec = divmod(msg.timestamp_ns, 10**9)
                    clock.publish(stamp)
                publishers[msg.topic].publish(msg.data)
                progress.update(msg)
            if not stopped.is_set():
                for publisher in publishers.values():  # do not drop the last messages on exit
                    publisher.wait_for_all_acked(Duration(seconds=LINGER_S))
                stopped.wait(LINGER_S / 4)
    finally:
        stop.phase = 'the clean-up'
        stopped.set()
        spinner.join()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        stop.finished()
    print(progress.summary(stop.requested), flush=True)
    return 0
