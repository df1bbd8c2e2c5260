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
rosbag2 files (mcap or sqlite3) read and written as serialized CDR, with rosbags.

Why: replay, eval, make-bag and the benches move messages as their stored bytes, so no bag
needs ROS 2's own reader or writer, and nothing is deserialised on the way. ``message_class``
gives rclpy's class of a stored type for the publishers and subscriptions that carry them.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
import functools
import importlib
from pathlib import Path
from typing import Any, Iterator

from cl_vision_nodes.errors import DataFormatError
from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores
from rosbags.typesys.store import Typestore

COMPRESSED_TYPE = 'sensor_msgs/msg/CompressedImage'
TRANSPORT = '/compressed'
"""image_transport's suffix of a compressed image topic."""
WRITER_VERSION = 9


@dataclass(frozen=True)
class BagMessage:
    topic: str
    timestamp_ns: int
    data: bytes


def message_class(msgtype: str) -> type:
    """Return the rclpy class of ``pkg/msg/Name``; DataFormatError when that package is missing."""
    package, _, name = msgtype.partition('/msg/')
    try:
        return getattr(importlib.import_module(f'{package}.msg'), name)
    except (ImportError, AttributeError):
        raise DataFormatError(f'message type {msgtype} is not installed here') from None


@functools.cache
def typestore() -> Typestore:
    """Return the message definitions bags are written with (ROS 2 Kilted's)."""
    return get_typestore(Stores.ROS2_KILTED)


@contextlib.contextmanager
def open_reader(path: Path) -> Iterator[Any]:
    """
    Open a rosbags Reader.

    A bag that cannot be read (bad metadata, a truncated or foreign storage file) is a
    DataFormatError naming it, while opening or while reading.
    """
    if not path.exists():
        raise DataFormatError(f'{path}: no such bag')
    try:
        with Reader(path) as reader:
            yield reader
    except (ReaderError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(f'{path}: cannot read the bag ({reason})') from None


class Bag:
    """A rosbag2 opened for reading: its selected topics, and their messages streamed in order."""

    def __init__(self, path: Path, topics: list[str] | None = None, start_offset_s: float = 0.0):
        self.path, self.start_offset_s = path, start_offset_s
        with open_reader(path) as reader:
            known = {c.topic: c.msgtype for c in reader.connections}
            self.start_ns, self.duration_ns = reader.start_time, reader.duration
        missing = set(topics or ()) - set(known)
        if missing:
            raise DataFormatError(f"{path}: no topic {', '.join(sorted(missing))}; the bag has "
                                  f"{', '.join(sorted(known))}")
        self.topics = {t: m for t, m in known.items() if not topics or t in topics}

    def messages(self, start_ns: int | None = None,
                 stop_ns: int | None = None) -> Iterator[BagMessage]:
        """Yield the selected topics' messages from ``start_ns`` (default: the start offset)."""
        with open_reader(self.path) as reader:
            connections = [c for c in reader.connections if c.topic in self.topics]
            start = reader.start_time + int(self.start_offset_s * 1e9) if start_ns is None \
                else start_ns
            for connection, timestamp, data in reader.messages(connections, start=start,
                                                               stop=stop_ns):
                yield BagMessage(connection.topic, timestamp, bytes(data))


def topic_counts(path: Path) -> dict[str, tuple[str, int]]:
    """Map topic -> (type, messages) from the bag's metadata, as ``ros2 bag info`` shows them."""
    with open_reader(path) as reader:
        return {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}


class BagWriter:
    """A rosbag2 being written: one connection per topic, serialized CDR messages in."""

    def __init__(self, writer: Writer):
        self._writer = writer
        self._connections: dict[str, Any] = {}

    def add_topic(self, topic: str, msgtype: str) -> None:
        """Declare ``topic`` (once; again is a no-op), its definition from ``typestore()``."""
        if topic not in self._connections:
            self._connections[topic] = self._writer.add_connection(topic, msgtype,
                                                                   typestore=typestore())

    def write(self, topic: str, time_ns: int, data: bytes) -> None:
        """Log ``data`` on ``topic`` (declared before) at bag time ``time_ns``."""
        self._writer.write(self._connections[topic], time_ns, data)


@contextlib.contextmanager
def open_writer(path: Path, storage: str = 'mcap') -> Iterator[BagWriter]:
    """Create the bag folder ``path`` (``storage`` mcap or sqlite3) and write it on exit."""
    with Writer(path, version=WRITER_VERSION,
                storage_plugin=StoragePlugin[storage.upper()]) as writer:
        yield BagWriter(writer)
