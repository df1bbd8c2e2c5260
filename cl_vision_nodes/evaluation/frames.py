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
Frames of a rosbag2 (mcap or sqlite3): the messages of one camera instant, grouped by stamp.

A frame is one left image and what belongs to it: the right image of the same instant (same
stamp, or within the pair's tolerance for rigs whose two cameras are stamped apart), the camera
infos (same stamp, else the newest one before it: a calibration is static), and in dataset bags
the ground truth of that stamp (the homography, which has no header, by bag time). Messages of
a frame may be logged apart (a right image after the next left one): a frame is complete once
the left images of two later frames were read. Messages whose stamp differs from the left
image's are re-stamped with it (``restamped``), so the nodes' exact synchronisers pair them.

Frames are selected by the left image's bag time (``Selection``: start, duration, every Nth),
so a long bag is read from the selected start, not from its beginning.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterator

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.storage import Bag, COMPRESSED_TYPE, typestore
from cl_vision_nodes.dataio.compressed import decode_compressed
from cl_vision_nodes.imaging.encodings import raw_to_array, RawImage, to_gray_reference
from cl_vision_nodes.ros.cdr import parse_compressed_image, parse_image, read_stamp, with_stamp
import numpy as np

LOOKAHEAD_FRAMES = 2
READ_MARGIN_NS = 2_000_000_000
"""Read this much bag time around a selection: a frame's partners are logged near its image."""
IMAGE_TYPE = 'sensor_msgs/msg/Image'
CAMERA_INFO_TYPE = 'sensor_msgs/msg/CameraInfo'
IMAGE_TYPES = (IMAGE_TYPE, COMPRESSED_TYPE)


def deserialize(data: bytes, msgtype: str) -> Any:
    """Return the message as rosbags reads it: tune and the scorers need no ROS installed."""
    return typestore().deserialize_cdr(data, msgtype)


def raw_image(data: bytes, msgtype: str) -> RawImage:
    """Read a serialized Image in place, or decode a CompressedImage (JPEG, PNG)."""
    if msgtype == COMPRESSED_TYPE:
        _, compressed = parse_compressed_image(data)
        return decode_compressed(compressed.format, compressed.data)
    return parse_image(data)[1]


def message_image(msg: Any) -> np.ndarray:
    """Return the pixels of a deserialized sensor_msgs/Image (a DisparityImage's), zero copy."""
    return raw_to_array(RawImage(msg.encoding, msg.height, msg.width, msg.step,
                                 bool(msg.is_bigendian), np.frombuffer(msg.data, np.uint8)))


def image_array(data: bytes, msgtype: str = IMAGE_TYPE) -> np.ndarray:
    """Return a serialized image's pixels as HxW or HxWxC (flow fields, pictures, inputs)."""
    return raw_to_array(raw_image(data, msgtype))


@dataclass(frozen=True)
class Streams:
    """The bag topics that make a frame; ``left`` alone for a mono camera."""

    left: str
    right: str | None = None
    left_info: str | None = None
    right_info: str | None = None
    pair_tolerance_ns: int = 0  # 0: left and right are paired by identical stamps only
    truth: tuple[str, ...] = ()  # ground-truth topics of a dataset bag (bag_layout)

    @property
    def topics(self) -> list[str]:
        return [t for t in (self.left, self.right, self.left_info, self.right_info, *self.truth)
                if t is not None]


@dataclass(frozen=True)
class Selection:
    """Which frames to play, by the left image's bag time from the bag's start."""

    start_s: float = 0.0
    duration_s: float | None = None
    every: int = 1

    def describe(self) -> str:
        parts = [f'from {self.start_s:g} s' if self.start_s else '',
                 f'for {self.duration_s:g} s' if self.duration_s is not None else '',
                 f'one frame in {self.every}' if self.every > 1 else '']
        return ', '.join(p for p in parts if p) or 'every frame'


@dataclass
class BagFrame:
    """One frame: its messages by bag topic, as serialized CDR."""

    index: int
    stamp_ns: int
    time_ns: int  # the left image's bag time
    messages: dict[str, bytes]
    types: dict[str, str]  # bag topic -> message type
    restamped: tuple[str, ...] = ()

    def decode(self, topic: str) -> Any:
        return deserialize(self.messages[topic], self.types[topic])

    def raw(self, topic: str) -> RawImage:
        """Return image ``topic`` of this frame as a RawImage (a CompressedImage decoded)."""
        return raw_image(self.messages[topic], self.types[topic])

    def array(self, topic: str) -> np.ndarray:
        return raw_to_array(self.raw(topic))

    def homography(self) -> np.ndarray:
        """Return the ground-truth homography of this frame (first frame -> this one), 3x3."""
        return np.asarray(self.decode(layout.GT_HOMOGRAPHY).data, np.float64).reshape(3, 3)

    def gray(self, topic: str) -> np.ndarray:
        """Return image ``topic`` as float32 gray 0..255, as the nodes' decoder sees it."""
        return to_gray_reference(self.raw(topic))

    def size(self, topic: str) -> tuple[int, int]:
        """Return (height, width) of image ``topic``."""
        raw = self.raw(topic)
        return raw.height, raw.width


@dataclass
class _Stream:
    """Messages of one partner topic not yet given to a frame, by stamp."""

    by_stamp: dict[int, bytes] = field(default_factory=dict)

    def add(self, stamp: int, data: bytes) -> None:
        self.by_stamp[stamp] = data

    def exact_or_nearest(self, stamp: int, tolerance_ns: int) -> tuple[int, bytes] | None:
        if stamp in self.by_stamp:
            return stamp, self.by_stamp[stamp]
        near = [s for s in self.by_stamp if abs(s - stamp) <= tolerance_ns] if tolerance_ns else []
        best = min(near, key=lambda s: abs(s - stamp), default=None)
        return None if best is None else (best, self.by_stamp[best])

    def newest_before(self, stamp: int) -> tuple[int, bytes] | None:
        """Return the info of ``stamp``, else the newest before it, else the oldest after it."""
        if stamp in self.by_stamp:
            return stamp, self.by_stamp[stamp]
        before = [s for s in self.by_stamp if s < stamp]
        chosen = max(before) if before else min(self.by_stamp, default=None)
        return None if chosen is None else (chosen, self.by_stamp[chosen])

    def forget_before(self, stamp: int, keep_newest: bool) -> None:
        old = sorted(s for s in self.by_stamp if s < stamp)
        for s in old[:-1] if keep_newest else old:
            del self.by_stamp[s]


def read_frames(bag: Bag, streams: Streams,
                selection: Selection = Selection()) -> Iterator[BagFrame]:
    """Yield the selected frames in order (see the module's docstring)."""
    start_ns = bag.start_ns + int(selection.start_s * 1e9)
    stop_ns = None if selection.duration_s is None else start_ns + int(selection.duration_s * 1e9)
    partners = {t: _Stream() for t in (streams.right, streams.left_info, streams.right_info) if t}
    truth: dict[int, dict[str, bytes]] = {}
    lefts: deque[tuple[int, int, bytes]] = deque()
    seen, count = 0, 0

    def assemble(stamp: int, time_ns: int, data: bytes) -> BagFrame:
        nonlocal count
        messages, restamped = {streams.left: data}, []
        for topic, stream in partners.items():
            info = topic != streams.right
            found = stream.newest_before(stamp) if info else \
                stream.exact_or_nearest(stamp, streams.pair_tolerance_ns)
            if found is not None:
                messages[topic] = found[1] if found[0] == stamp else with_stamp(found[1], stamp)
                restamped += [topic] if found[0] != stamp else []
            stream.forget_before(stamp - (0 if info else streams.pair_tolerance_ns), info)
        for key in [k for k in truth if k < stamp]:
            del truth[key]
        messages.update(truth.pop(stamp, {}))
        count += 1
        return BagFrame(count - 1, stamp, time_ns, messages, bag.topics, tuple(restamped))

    read_stop = None if stop_ns is None else stop_ns + READ_MARGIN_NS
    for msg in bag.messages(max(start_ns - READ_MARGIN_NS, bag.start_ns), read_stop):
        if msg.topic in partners:
            partners[msg.topic].add(read_stamp(msg.data), msg.data)
        elif msg.topic in streams.truth:  # the homography has no header: its bag time
            key = msg.timestamp_ns if msg.topic == layout.GT_HOMOGRAPHY else read_stamp(msg.data)
            truth.setdefault(key, {})[msg.topic] = msg.data
        elif msg.topic == streams.left and msg.timestamp_ns >= start_ns and \
                (stop_ns is None or msg.timestamp_ns < stop_ns):
            seen += 1
            if (seen - 1) % selection.every == 0:
                lefts.append((read_stamp(msg.data), msg.timestamp_ns, msg.data))
                if len(lefts) > LOOKAHEAD_FRAMES:
                    yield assemble(*lefts.popleft())
    while lefts:
        yield assemble(*lefts.popleft())
