"""`cl-vision replay BAG`: publish a rosbag2 (mcap or sqlite3) for machines without ros2 bag.

Messages go out as their stored CDR bytes (``Publisher.publish(bytes)``), so nothing is
deserialised, at their recorded pace divided by ``--rate``. Publishers are reliable, which
best-effort subscribers (the nodes' image subscriptions) accept. ``--clock`` also publishes the
bag time on /clock for nodes running with use_sim_time.
"""
from __future__ import annotations

import argparse
import importlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.ros.dds_profile import use_large_image_profile

REPLAY_DEPTH = 100
LINGER_S = 2.0


@dataclass(frozen=True)
class BagMessage:
    topic: str
    timestamp_ns: int
    data: bytes


def message_class(msgtype: str) -> type:
    """The rclpy class of ``pkg/msg/Name``; DataFormatError when that package is not installed."""
    package, _, name = msgtype.partition('/msg/')
    try:
        return getattr(importlib.import_module(f'{package}.msg'), name)
    except (ImportError, AttributeError):
        raise DataFormatError(f'message type {msgtype} is not installed here') from None


class Bag:
    """A rosbag2 opened for replay: its selected topics, and their messages streamed in order."""

    def __init__(self, path: Path, topics: list[str] | None = None, start_offset_s: float = 0.0):
        from rosbags.rosbag2 import Reader
        if not path.exists():
            raise DataFormatError(f'{path}: no such bag')
        self.path, self.start_offset_s = path, start_offset_s
        self._reader_type = Reader
        with self._open() as reader:
            known = {c.topic: c.msgtype for c in reader.connections}
        missing = set(topics or ()) - set(known)
        if missing:
            raise DataFormatError(f"{path}: no topic {', '.join(sorted(missing))}; the bag has "
                                  f"{', '.join(sorted(known))}")
        self.topics = {t: m for t, m in known.items() if not topics or t in topics}

    def _open(self):
        try:
            return self._reader_type(self.path)
        except Exception as exc:  # rosbags raises its own types for bad metadata or storage
            raise DataFormatError(f'{self.path}: cannot read the bag ({exc})') from None

    def messages(self) -> Iterator[BagMessage]:
        with self._open() as reader:
            connections = [c for c in reader.connections if c.topic in self.topics]
            start = reader.start_time + int(self.start_offset_s * 1e9)
            for connection, timestamp, data in reader.messages(connections, start=start):
                yield BagMessage(connection.topic, timestamp, bytes(data))


def paced(bag: Bag, rate: float, loop: bool) -> Iterator[BagMessage]:
    """Yield messages at their recorded spacing divided by ``rate`` (over and over with ``loop``)."""
    while True:
        wall0 = bag0 = None
        for msg in bag.messages():
            if wall0 is None:
                wall0, bag0 = time.monotonic(), msg.timestamp_ns
            delay = wall0 + (msg.timestamp_ns - bag0) / 1e9 / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            yield msg
        if not loop or wall0 is None:
            return


def wait_for_subscribers(publishers: list, timeout_s: float) -> None:
    """Until every topic has a subscriber (or the timeout): DDS discovery takes a moment, and a
    frame published before it completes is lost for good."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(p.get_subscription_count() == 0
                                              for p in publishers):
        time.sleep(0.05)
    time.sleep(min(0.2, timeout_s))  # the subscriber side matches right after the publisher


def run(args: argparse.Namespace) -> int:
    if args.rate <= 0:
        raise DataFormatError(f'--rate must be positive, got {args.rate}')
    bag = Bag(Path(args.bag), args.topics, args.start_offset)
    classes = {topic: message_class(msgtype) for topic, msgtype in bag.topics.items()}
    import rclpy
    from rclpy._rclpy_pybind11 import RCLError
    from rclpy.duration import Duration
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    use_large_image_profile()
    rclpy.init()
    node = rclpy.create_node('cl_vision_replay')
    try:
        qos = QoSProfile(depth=REPLAY_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        publishers = {topic: node.create_publisher(cls, topic, qos)
                      for topic, cls in classes.items()}
        clock = node.create_publisher(Clock, '/clock', 10) if args.clock else None
        wait_for_subscribers(list(publishers.values()), args.wait_subscribers)
        sent = 0
        for msg in paced(bag, args.rate, args.loop):
            if clock is not None:
                stamp = Clock()
                stamp.clock.sec, stamp.clock.nanosec = divmod(msg.timestamp_ns, 10**9)
                clock.publish(stamp)
            publishers[msg.topic].publish(msg.data)
            sent += 1
        for publisher in publishers.values():  # do not drop the last messages on exit
            publisher.wait_for_all_acked(Duration(seconds=LINGER_S))
        time.sleep(LINGER_S / 4)
        print(f'replayed {sent} messages on {len(publishers)} topics from {args.bag}')
    except KeyboardInterrupt:
        pass
    except RCLError:  # Ctrl-C: rclpy's handler shut the context down under a publish
        if rclpy.ok():
            raise
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('replay', help='publish a rosbag2 (mcap or sqlite3) with its timing')
    parser.add_argument('bag', help='bag folder (or .mcap/.db3 file)')
    parser.add_argument('--rate', type=float, default=1.0, help='speed factor (2 = twice as fast)')
    parser.add_argument('--loop', action='store_true', help='start over at the end')
    parser.add_argument('--topics', nargs='+', help='only these topics')
    parser.add_argument('--start-offset', type=float, default=0.0,
                        help='skip the first SECONDS of the bag')
    parser.add_argument('--clock', action='store_true', help='publish the bag time on /clock')
    parser.add_argument('--wait-subscribers', type=float, default=1.0,
                        help='wait up to SECONDS for every topic to have a subscriber')
    parser.set_defaults(run=run)
