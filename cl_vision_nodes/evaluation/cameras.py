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
Finding the cameras of any rosbag2: image topics, their camera_info, left/right pairs.

An image topic is a sensor_msgs/Image or CompressedImage topic with messages whose first message
holds a picture the nodes read (an intensity, colour, Bayer or YUV encoding; JPEG or PNG): depth
(32FC1, 16UC1, compressedDepth) and flow fields are left out. Its camera_info is the CameraInfo
topic beside it (``/ns/camera_info`` for ``/ns/image_raw`` or ``/ns/image_raw/compressed``).
When a topic is recorded both raw and compressed, the raw one is used.

A stereo pair is two image topics whose names differ by left/right (``cam0``/``cam1``,
``infra1``/``infra2``), both with camera_info, whose first stamps match: identical, or within half
a frame period (then frames pair the nearest right image and re-stamp it). Failing names, two
cameras of one size whose right camera_info has P[0,3] = -fx * baseline < 0 and matching stamps
are a pair; both are raw or both compressed. The choice prefers a pair, then camera_info, then
rectified names (``rect``), then raw over compressed, then more messages.

Images are raw when the camera_info has distortion (a non-zero D) or a rotation (R not
identity): the nodes then get rectified images (eval puts rectify_node in front of flow and
SURF and runs disparity_node with ``rectify``). Without camera_info, or with an uncalibrated one,
images are evaluated as they are.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.storage import open_reader, TRANSPORT
from cl_vision_nodes.camera.calibration import CalibrationError, CameraCalibration
from cl_vision_nodes.camera.camera_info import calibration_from_msg
from cl_vision_nodes.dataio.compressed import parse_format
from cl_vision_nodes.errors import DataFormatError, ImageFormatError, ParameterError
from cl_vision_nodes.evaluation.frames import (CAMERA_INFO_TYPE, COMPRESSED_TYPE, deserialize,
                                               IMAGE_TYPES, Selection, Streams)
from cl_vision_nodes.imaging.encodings import encoding_info
from cl_vision_nodes.ros.cdr import parse_compressed_image, parse_image, read_stamp
import numpy as np

STEREO_WORDS = (('left', 'right'), ('Left', 'Right'), ('LEFT', 'RIGHT'), ('cam0', 'cam1'),
                ('infra1', 'infra2'))
PROBE_MESSAGES = 5
USABLE_KINDS = ('gray', 'color', 'bayer', 'yuv')


@dataclass(frozen=True)
class ImageTopic:
    """An image topic of the bag and what its first messages say."""

    topic: str
    msgtype: str
    count: int
    encoding: str  # the Image encoding, or the CompressedImage format
    stamps: tuple[int, ...]  # of the first messages
    info: str | None = None  # its camera_info topic

    @property
    def compressed(self) -> bool:
        return self.msgtype == COMPRESSED_TYPE

    @property
    def base(self) -> str:
        """Return the image topic a node is remapped to (image_transport's base name)."""
        if self.compressed and self.topic.endswith(TRANSPORT):
            return self.topic[:-len(TRANSPORT)]
        return self.topic

    @property
    def played(self) -> str:
        """Return the topic eval publishes it on: a compressed one always ends in /compressed."""
        return self.base + TRANSPORT if self.compressed else self.topic

    def label(self) -> str:
        kind = 'CompressedImage' if self.compressed else 'Image'
        return f'{self.topic} ({kind} {self.encoding}, {self.count} messages)'


@dataclass(frozen=True)
class Cameras:
    """The camera eval plays: a mono camera (``right`` None) or a stereo pair."""

    left: ImageTopic
    right: ImageTopic | None
    pair_tolerance_ns: int
    raw: bool  # the images need rectifying
    rectification: str  # why they do or do not
    truth: tuple[str, ...]  # the dataset layout's ground-truth topics
    others: tuple[str, ...]  # image topics not chosen

    @property
    def stereo(self) -> bool:
        return self.right is not None

    @property
    def compressed(self) -> bool:
        return self.left.compressed

    def streams(self, selection: Selection) -> Streams:
        """
        Return the topics of a frame.

        With every Nth frame the flow truth (previous frame -> this) no longer applies.
        """
        truth = tuple(t for t in self.truth if selection.every == 1 or t != layout.GT_FLOW)
        right = self.right
        return Streams(self.left.topic, right and right.topic, self.left.info,
                       right and right.info, self.pair_tolerance_ns, truth)

    def played(self) -> dict[str, str]:
        """Map bag topic -> the topic it is published on (differs for a bare compressed name)."""
        return {c.topic: c.played for c in (self.left, self.right) if c is not None}

    def describe(self) -> list[str]:
        """Two or three lines for the terminal: what was picked, and what else was there."""
        if self.right is None:
            lines = [f'mono camera {self.left.label()}, camera_info '
                     f'{self.left.info or "none"}']
        else:
            pairing = 'identical stamps' if not self.pair_tolerance_ns else \
                f'nearest stamps within {self.pair_tolerance_ns / 1e6:g} ms'
            lines = [f'stereo camera {self.left.label()} + {self.right.label()}, camera_info '
                     f'{self.left.info} + {self.right.info}, paired by {pairing}']
        lines.append(self.rectification)
        if self.others:
            lines.append(f"also in the bag: {', '.join(self.others)} (choose with --image or "
                         '--left/--right)')
        return lines


@dataclass(frozen=True)
class Overrides:
    """The command line's choice of topics; None = find it."""

    image: str | None = None
    left: str | None = None
    right: str | None = None
    left_info: str | None = None
    right_info: str | None = None

    def check(self) -> None:
        if self.image and (self.left or self.right):
            raise ParameterError('--image names a mono camera, --left/--right a stereo pair: '
                                 'give one of them')
        if bool(self.left) != bool(self.right):
            raise ParameterError('--left and --right name the two cameras of a pair: give both '
                                 '(or --image for one camera)')


def _first_messages(reader: Any, topic: str, n: int) -> list[bytes]:
    connections = [c for c in reader.connections if c.topic == topic]
    found = []
    for _, _, data in reader.messages(connections):
        found.append(bytes(data))
        if len(found) == n:
            break
    return found


def _encoding(data: bytes, msgtype: str) -> str:
    """Return the encoding or format of an image message; ImageFormatError if unusable."""
    if msgtype == COMPRESSED_TYPE:
        format_ = parse_compressed_image(data)[1].format
        encoding = parse_format(format_).encoding
    else:
        format_ = encoding = parse_image(data)[1].encoding
    if encoding and encoding_info(encoding).kind not in USABLE_KINDS:
        raise ImageFormatError(f'{encoding} is not a camera picture (depth, disparity or flow)')
    return format_


def _probe_images(reader: Any, topics: dict[str, str],
                  counts: dict[str, int]) -> tuple[dict[str, ImageTopic], list[str]]:
    """Return the usable image topics and, for the others, why not."""
    found, refused = {}, []
    for topic, msgtype in sorted(topics.items()):
        if msgtype not in IMAGE_TYPES:
            continue
        first = _first_messages(reader, topic, PROBE_MESSAGES) if counts[topic] else []
        if not first:
            refused.append(f'{topic} has no messages')
            continue
        try:
            encoding = _encoding(first[0], msgtype)
        except ImageFormatError as exc:
            refused.append(f'{topic}: {exc}')
            continue
        found[topic] = ImageTopic(topic, msgtype, counts[topic], encoding,
                                  tuple(read_stamp(d) for d in first))
    return found, refused


def _without_duplicates(images: dict[str, ImageTopic]) -> dict[str, ImageTopic]:
    """Drop a compressed topic recorded beside its raw one (no decoding, exact pixels)."""
    return {t: c for t, c in images.items() if not (c.compressed and c.base in images)}


def _sibling_info(image: ImageTopic, topics: dict[str, str]) -> str | None:
    candidate = image.base.rpartition('/')[0] + '/camera_info'
    return candidate if topics.get(candidate) == CAMERA_INFO_TYPE else None


def _pair_tolerance(left: tuple[int, ...], right: tuple[int, ...]) -> int | None:
    """Return 0 for shared stamps, half a frame period for near ones, None for no match."""
    if set(left) & set(right):
        return 0
    if len(left) < 2:
        return None
    half_period = int(np.median(np.diff(sorted(left)))) // 2
    nearest = min(abs(a - b) for a in left for b in right)
    return half_period if 0 < half_period and nearest <= half_period else None


def _named_partner(left: ImageTopic, images: dict[str, ImageTopic]) -> ImageTopic | None:
    for left_word, right_word in STEREO_WORDS:
        if left_word in left.base:
            name = left.base.replace(left_word, right_word)
            partner = next((c for c in images.values()
                            if c.base == name and c.compressed == left.compressed), None)
            if partner is not None:
                return partner
    return None


def _right_by_baseline(left: ImageTopic, images: dict[str, ImageTopic],
                       infos: dict[str, Any]) -> ImageTopic | None:
    """Find a camera of left's size whose camera_info puts it right of left (P[0,3] < 0)."""
    mine = infos.get(left.info)
    if mine is None or mine.p[3] != 0:
        return None

    def right_of_left(c: ImageTopic) -> bool:
        info = infos.get(c.info)
        return c is not left and info is not None and c.compressed == left.compressed \
            and info.p[3] < 0 and (info.width, info.height) == (mine.width, mine.height) \
            and _pair_tolerance(left.stamps, c.stamps) is not None

    return next((c for c in images.values() if right_of_left(c)), None)


def _pairs(images: dict[str, ImageTopic],
           infos: dict[str, Any]) -> list[tuple[ImageTopic, ImageTopic, int]]:
    pairs = []
    for left in images.values():
        if left.info is None:
            continue
        right = _named_partner(left, images) or _right_by_baseline(left, images, infos)
        if right is None or right.info is None:
            continue
        tolerance = _pair_tolerance(left.stamps, right.stamps)
        if tolerance is not None:
            pairs.append((left, right, tolerance))
    return pairs


def _rank(left: ImageTopic, right: ImageTopic | None) -> tuple:
    return (right is not None, left.info is not None, 'rect' in left.base, not left.compressed,
            left.count, [-ord(ch) for ch in left.topic])


def _first_info(reader: Any, topic: str) -> Any:
    return deserialize(_first_messages(reader, topic, 1)[0], CAMERA_INFO_TYPE)


def _rectification(infos: list[Any]) -> tuple[bool, str]:
    """Say whether images with these camera_infos are raw, and why (one line)."""
    if any(i is None for i in infos):
        return False, 'no camera_info: images evaluated as they are'
    calibrations: list[CameraCalibration] = []
    for info in infos:
        try:
            calibrations.append(calibration_from_msg(info))
        except CalibrationError as exc:
            return False, f'camera_info not usable for rectification ({exc}): images ' \
                'evaluated as they are'
    reasons = sorted({f'distortion D = {np.round(c.D, 4).tolist()}' for c in calibrations
                      if np.any(c.D != 0)}
                     | {'R is not identity' for c in calibrations if np.any(c.R != np.eye(3))})
    if reasons:
        return True, f"raw images (camera_info: {'; '.join(reasons)}): rectified on the way in"
    return False, 'camera_info has no distortion and R = identity: images evaluated as they are'


def _chosen(images: dict[str, ImageTopic], refused: list[str], overrides: Overrides,
            infos: dict[str, Any]) -> tuple[ImageTopic, ImageTopic | None, int]:
    def named(topic: str, option: str) -> ImageTopic:
        if topic in images:
            return images[topic]
        why = next((r for r in refused if r.startswith(topic)), None)
        raise DataFormatError(f'{option} {topic}: ' + (why or 'no such image topic; image '
                              f"topics: {', '.join(images) or 'none'}"))

    if overrides.image:
        return named(overrides.image, '--image'), None, 0
    if overrides.left:
        left, right = named(overrides.left, '--left'), named(overrides.right, '--right')
        if left.compressed != right.compressed:
            raise DataFormatError(f'--left {left.topic} and --right {right.topic}: one is '
                                  'compressed, the other not; give the same transport for both')
        tolerance = _pair_tolerance(left.stamps, right.stamps)
        if tolerance is None:
            raise DataFormatError(f'--left {left.topic} and --right {right.topic}: their stamps '
                                  'do not match (first stamps '
                                  f'{left.stamps[0]} and {right.stamps[0]} ns)')
        return left, right, tolerance
    options = [(c, None, 0) for c in _without_duplicates(images).values()] + \
        _pairs(images, infos)
    return max(options, key=lambda o: _rank(o[0], o[1]))


def find_cameras(path: Path, overrides: Overrides = Overrides()) -> Cameras:
    """Pick the bag's camera (see the module's docstring); DataFormatError when there is none."""
    overrides.check()
    with open_reader(path) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        counts = {c.topic: c.msgcount for c in reader.connections}
        images, refused = _probe_images(reader, topics, counts)
        if not images:
            listed = '; '.join(refused) or 'topics: ' + ', '.join(
                f'{t} ({m})' for t, m in sorted(topics.items()))
            raise DataFormatError(f'{path}: no usable image topic (sensor_msgs/Image or '
                                  f'CompressedImage with camera pictures); {listed}')
        images = {t: replace(c, info=_sibling_info(c, topics)) for t, c in images.items()}
        for option, topic in (('--left-info', overrides.left_info),
                              ('--right-info', overrides.right_info)):
            if topic is not None and topics.get(topic) != CAMERA_INFO_TYPE:
                raise DataFormatError(f'{option} {topic}: no CameraInfo topic of that name')
        infos = {t: _first_info(reader, t) for t in topics
                 if topics[t] == CAMERA_INFO_TYPE and counts[t]}
        left, right, tolerance = _chosen(images, refused, overrides, infos)
        left = replace(left, info=overrides.left_info or left.info)
        if right is not None:
            right = replace(right, info=overrides.right_info or right.info)
        elif overrides.right_info:
            raise ParameterError('--right-info is for a stereo pair; the camera is mono '
                                 f'({left.topic})')
    chosen = [c for c in (left, right) if c is not None]
    raw, why = _rectification([infos.get(c.info) for c in chosen])
    truth = tuple(t for t in layout.GROUND_TRUTH if t in topics) \
        if left.topic == layout.LEFT_IMAGE else ()
    others = tuple(t for t in _without_duplicates(images)
                   if t not in {c.topic for c in chosen})
    return Cameras(left, right, tolerance, raw, why, truth, others)
