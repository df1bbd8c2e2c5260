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
rosbag2 files for the tests: a small image bag to replay, and a bag read back with rosbags.

Pixels are decoded here, independently of the package's converter.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores
import yaml

TS = get_typestore(Stores.ROS2_KILTED)
DTYPES = {'mono8': (np.uint8, 1), '32FC1': (np.float32, 1), '32FC2': (np.float32, 2)}
IMAGE_BAG_FRAMES, IMAGE_BAG_START_NS, IMAGE_BAG_SPACING_NS = 10, 1_000_000_000, 200_000_000


def write_image_bag(path: Path, storage: StoragePlugin) -> None:
    """
    Write frames ``f0``..``f9`` on /cam/image and the same on /cam/other.

    2x3 mono8 filled with i, stamped with their bag time: 1 s, then every 0.2 s.
    """
    Header, Time = TS.types['std_msgs/msg/Header'], TS.types['builtin_interfaces/msg/Time']
    RosImage = TS.types['sensor_msgs/msg/Image']
    with Writer(path, version=9, storage_plugin=storage) as writer:
        image = writer.add_connection('/cam/image', RosImage.__msgtype__, typestore=TS)
        other = writer.add_connection('/cam/other', RosImage.__msgtype__, typestore=TS)
        for i in range(IMAGE_BAG_FRAMES):
            t = IMAGE_BAG_START_NS + i * IMAGE_BAG_SPACING_NS
            msg = RosImage(header=Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9),
                                         frame_id=f'f{i}'),
                           height=2, width=3, encoding='mono8', is_bigendian=0, step=3,
                           data=np.full(6, i, np.uint8))
            writer.write(image, t, TS.serialize_cdr(msg, RosImage.__msgtype__))
            writer.write(other, t, TS.serialize_cdr(msg, RosImage.__msgtype__))


def write_truncated_bag(path: Path) -> None:
    """Write the image bag (mcap) with the last 100 bytes cut off."""
    write_image_bag(path, StoragePlugin.MCAP)
    storage = next(path.glob('*.mcap'))
    storage.write_bytes(storage.read_bytes()[:-100])


@dataclass
class ReadBag:
    """A bag read back: per topic its type and (bag time, message) list, in time order."""

    types: dict[str, str] = field(default_factory=dict)
    messages: dict[str, list] = field(default_factory=dict)
    storage: str = ''

    def counts(self) -> dict[str, int]:
        return {topic: len(msgs) for topic, msgs in self.messages.items()}

    def stamps(self, topic: str) -> list[int]:
        return [t for t, _ in self.messages[topic]]


def read_bag(path: Path) -> ReadBag:
    info = yaml.safe_load((path / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    bag = ReadBag(storage=info['storage_identifier'])
    with Reader(path) as reader:
        for connection in reader.connections:
            bag.types[connection.topic] = connection.msgtype
            bag.messages[connection.topic] = []
        for connection, timestamp, data in reader.messages():
            msg = TS.deserialize_cdr(data, connection.msgtype)
            bag.messages[connection.topic].append((timestamp, msg))
    return bag


def pixels(msg) -> np.ndarray:
    """Decode an Image's pixels here, independently of the package's converter."""
    dtype, channels = DTYPES[msg.encoding]
    assert msg.is_bigendian == 0
    rows = np.frombuffer(msg.data.tobytes(), np.uint8).reshape(msg.height, msg.step)
    values = rows[:, :msg.width * channels * np.dtype(dtype).itemsize].copy().view(dtype)
    return values.reshape(msg.height, msg.width, channels).squeeze(axis=2) \
        if channels == 1 else values.reshape(msg.height, msg.width, channels)


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
