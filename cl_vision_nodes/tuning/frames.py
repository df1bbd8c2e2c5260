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
A bag's frames for a tune, read once: the first half tunes, the second half is held out.

The halves are contiguous (not alternate frames) so that consecutive frames stay consecutive in
each: flow and its ground truth (previous -> this frame) and SURF's frame-to-frame scores need
them. The camera is found as ``cl-vision eval`` finds it (``evaluation.cameras``) and frames are
grouped as eval groups them (``evaluation.frames``); images are used as the bag holds them (not
rectified). Ground truth is that of the dataset layout (``bag_layout``): disparity, flow and the
homography, each kept where the bag has it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.storage import Bag
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.evaluation.cameras import find_cameras
from cl_vision_nodes.evaluation.frames import BagFrame, read_frames, Selection
from cl_vision_nodes.imaging.encodings import RawImage, to_gray_reference
import numpy as np

MIN_PART_FRAMES = 2
"""Each half needs two frames: flow and SURF's scores compare consecutive frames."""
NEEDS_STEREO = ('disparity',)


@dataclass
class Frame:
    """One camera instant: its images as the bag holds them, their gray, its ground truth."""

    index: int
    left: RawImage
    left_gray: np.ndarray  # HxW float32 0..255, as the device decodes it
    right: RawImage | None = None
    right_gray: np.ndarray | None = None
    disparity: np.ndarray | None = None  # ground truth, HxW px, NaN unknown
    flow: np.ndarray | None = None  # ground truth previous -> this frame, HxWx2 px
    homography: np.ndarray | None = None  # ground truth, 3x3, first frame of the bag -> this


@dataclass
class TuneFrames:
    """The frames of one tune, split in two halves, and what the bag says about them."""

    node: str
    tuning: list[Frame]
    held_out: list[Frame]
    stereo: bool
    truth: tuple[str, ...] = field(default_factory=tuple)  # 'disparity', 'flow', 'homography'
    description: str = ''

    def part(self, name: str) -> list[Frame]:
        """Return the frames of part 'tuning' or 'held_out'."""
        if name not in ('tuning', 'held_out'):
            raise ValueError(f"part must be 'tuning' or 'held_out', not {name!r}")
        return self.tuning if name == 'tuning' else self.held_out


def _frame(bag_frame: BagFrame, left: str, right: str | None) -> Frame:
    def gray(topic: str) -> tuple[RawImage, np.ndarray]:
        raw = bag_frame.raw(topic)
        return raw, to_gray_reference(raw)

    frame = Frame(bag_frame.index, *gray(left))
    if right is not None:
        frame.right, frame.right_gray = gray(right)
    messages = bag_frame.messages
    if layout.GT_DISPARITY in messages:
        frame.disparity = bag_frame.array(layout.GT_DISPARITY).astype(np.float32)
    if layout.GT_FLOW in messages:
        frame.flow = bag_frame.array(layout.GT_FLOW).astype(np.float32)
    if layout.GT_HOMOGRAPHY in messages:
        frame.homography = bag_frame.homography()
    return frame


def load_frames(bag: Path, node: str, max_frames: int | None) -> TuneFrames:
    """
    Read the first ``max_frames`` frames (all if None) of the bag's camera and split them.

    DataFormatError when the bag has no camera usable for ``node`` (a mono camera for disparity)
    or fewer than four frames.
    """
    cameras = find_cameras(Path(bag))
    if node in NEEDS_STEREO and not cameras.stereo:
        raise DataFormatError(f'{bag}: {node} needs a stereo pair, the bag has a mono camera '
                              f'({cameras.left.topic})')
    streams = cameras.streams(Selection())
    frames = []
    left, right = cameras.left.topic, cameras.right and cameras.right.topic
    for bag_frame in read_frames(Bag(Path(bag), streams.topics), streams):
        if right is not None and right not in bag_frame.messages:
            continue  # a left image without its partner: not a stereo frame
        frames.append(_frame(bag_frame, left, right))
        if max_frames is not None and len(frames) >= max_frames:
            break
    if len(frames) < 2 * MIN_PART_FRAMES:
        raise DataFormatError(f'{bag}: {len(frames)} frames of {left}; a tune needs at least '
                              f'{2 * MIN_PART_FRAMES} (two to tune on, two held out)')
    half = len(frames) // 2
    truth = tuple(name for name in ('disparity', 'flow', 'homography')
                  if any(getattr(f, name) is not None for f in frames))
    return TuneFrames(node, frames[:half], frames[half:], cameras.stereo, truth,
                      '; '.join(cameras.describe()[:1]))
