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
Warm first frames: a node runs its frame work once on a synthetic frame before the first one.

PoCL compiles each kernel for its work-group size when it is first enqueued (pyopencl caches the
program binaries; PoCL specialises at the first enqueue), and the work-group sizes follow the
image size: a launch without a local size gets one that PoCL derives from its global size, and
PoCL specialises again where a grid outgrows its small-grid limit (measured in
docs/BENCHMARKS.md: DIS flow at 1280x720 after 640x480 compiles 28 more). On a cold cache a
node's first frame took 1.7 s (flow), 2.7 s (SURF), 4.7 s (disparity), the next ones 40-70 ms.
So a node builds and runs every kernel its parameters launch on a frame of the expected size
before it logs 'ready': ``warm_up_width`` x ``warm_up_height``, the camera's size (no frame has
arrived yet; frames of another size compile on their first). After a parameter change it warms
again, at the size of the last frame received, unless it warmed that configuration before.

The frame is seeded noise, not blank: on a blank frame SURF finds no keypoints and ELAS no
support points, so their description and triangulation kernels would not run. The right image
of a pair is the left shifted by a few pixels, a disparity ELAS finds.
"""
from __future__ import annotations

from typing import Hashable, Mapping

from cl_vision_nodes.imaging.encodings import RawImage
from cl_vision_nodes.params import COMMON_NAMES, Value
import numpy as np
from sensor_msgs.msg import CameraInfo

WARM_SEED = 29
WARM_DISPARITY_PX = 4
WARM_BASELINE_M = 0.1
Size = tuple[int, int]  # width, height


def expected_size(values: Mapping[str, Value], last_size: Size | None) -> Size | None:
    """Return the size to warm at: the last frame's, else the parameters'; None: no warm-up."""
    width, height = int(values['warm_up_width']), int(values['warm_up_height'])
    if not (width and height):
        return None
    return last_size or (width, height)


def warm_pair(width: int, height: int) -> tuple[RawImage, RawImage]:
    """Return a left and a right mono8 image: seeded noise, the right one shifted left."""
    left = np.random.default_rng(WARM_SEED).integers(0, 256, (height, width), dtype=np.uint8)
    right = np.roll(left, -WARM_DISPARITY_PX, axis=1)  # x_R = x_L - d
    return tuple(RawImage('mono8', height, width, width, False, pixels.tobytes())
                 for pixels in (left, right))


def warm_camera_infos(width: int, height: int) -> tuple[CameraInfo, CameraInfo]:
    """Return the camera_infos of an ideal rectified pair of this size (no distortion)."""
    focal, cx, cy = float(max(width, height)), (width - 1) / 2.0, (height - 1) / 2.0
    infos = []
    for tx in (0.0, -focal * WARM_BASELINE_M):
        info = CameraInfo(width=width, height=height, distortion_model='plumb_bob')
        info.d = [0.0] * 5
        info.k = [focal, 0.0, cx, 0.0, focal, cy, 0.0, 0.0, 1.0]
        info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        info.p = [focal, 0.0, cx, tx, 0.0, focal, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
        infos.append(info)
    return infos[0], infos[1]


class WarmedConfigurations:
    """The configurations (size and parameters) a node warmed: each is warmed once."""

    def __init__(self) -> None:
        self._done: set[Hashable] = set()

    @staticmethod
    def _key(values: Mapping[str, Value], size: Size) -> Hashable:
        return size, tuple(sorted((k, v) for k, v in values.items() if k not in COMMON_NAMES))

    def __contains__(self, item: tuple[Mapping[str, Value], Size]) -> bool:
        return self._key(*item) in self._done

    def add(self, values: Mapping[str, Value], size: Size) -> None:
        self._done.add(self._key(values, size))
