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
One frame's Gaussian pyramid and gradients, resident on the device.

The streaming estimator keeps two of these (previous and current frame) and swaps them, so a
frame is uploaded, decoded and pyramided exactly once and the previous one never leaves the
device. Buffers are the estimator's, named per slot and level: allocated on the first frame of
a size, reused afterwards. In the CPU formulation levels at least ROWS_MIN_WIDTH wide are made
by pyr_down_rows (8 pixels of each of ROW_RUN rows a work-item, PoCL's vectors; the same values
bit for bit), narrower ones by pyr_down, whose fewer work-groups cost less there; each has a
_mono8 form that makes level 1 from a mono8 frame's bytes (the decode fused in); on GPUs
pyr_down2_mono8 makes level 2 from them (pyr_down2_mono8_gradient with level 1 and its
gradient). Gradients of any level are made by gradient_rows (320 x 240: 0.26 -> 0.03 ms on 2
cores, as gradient's interleaved stores are scattered no longer), or by pyr_down_gradient_rows
with the level below (a launch fewer).
"""
from __future__ import annotations

from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages, Mono8Frame
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.kernel import BoundLaunches
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/pyramid.cl')
MIN_LEVEL_SIDE = 8
"""A level is built only if both its sides keep at least this many pixels."""
ROWS_MIN_WIDTH = 128
"""Narrowest level pyr_down_rows makes in the CPU formulation (2 cores, PoCL: 160 wide 0.09 ->
0.07 ms, 80 wide 0.026 -> 0.033)."""
ROW_LANES = 8
"""Pixels of a row a work-item of the _rows kernels takes (PYR_LANES)."""
ROW_RUN = 4
"""Rows a work-item of pyr_down_rows (pyr_down_mono8_rows, pyr_down_gradient_rows) makes, each
source row summed along once for the 2 or 3 coarse rows reading it (PYR_RUN; 2 cores, 640 x 480
mono8 to 320 x 240 launched alone: 0.22 ms with 1 row, 0.12 with 2, 0.11 with 4 or 8)."""
Shape = tuple[int, int]
"""(height, width) of a pyramid level, the NumPy order."""


AREA_GROUP = (16, 16)
"""Work-group of the GPU kernels that make an area of a level in local memory first
(pyr_down2_mono8 and its _gradient form, pyr_down_gradients: PYR_GW x PYR_GH), halved as the
device needs."""


def area_group(runtime: ClRuntime) -> tuple[int, int]:
    """Return the work-group the area kernels are built for and launched with on this device."""
    return runtime.limits.group_2d(AREA_GROUP)


def program(runtime: ClRuntime) -> Program:
    """Build the pyramid kernels (pyr_down, gradient and their _rows and _mono8 forms)."""
    group = area_group(runtime)
    return runtime.program(KERNELS, {'PYR_RUN': ROW_RUN, 'PYR_GW': group[0],
                                     'PYR_GH': group[1]})


def row_items(width: int, height: int, rows: int = ROW_RUN) -> tuple[int, int]:
    """Global size of a _rows kernel on a ``width`` x ``height`` output: 8 x ``rows`` an item."""
    return -(-width // ROW_LANES), -(-height // rows)


def level_shapes(height: int, width: int) -> list[Shape]:
    """Shapes of all levels: each is ((h+1)//2, (w+1)//2) of the previous (cv2.pyrDown)."""
    shapes = [(height, width)]
    while True:
        h, w = shapes[-1]
        h, w = (h + 1) // 2, (w + 1) // 2
        if min(h, w) < MIN_LEVEL_SIDE:
            return shapes
        shapes.append((h, w))


class DevicePyramid:
    """Images and (on demand) 5-point gradients of the levels of one frame a method reads."""

    def __init__(self, runtime: ClRuntime, images: DeviceImages, buffers: Buffers, slot: int,
                 formulation: str):
        self.images = images
        self.formulation = formulation
        self.buffers = buffers
        self.slot = slot
        self.shapes: list[Shape] = []  # of the levels built
        self.levels: list[cl.Buffer | None] = []  # level 0 None where it is not kept
        self._possible: list[Shape] = []  # of every level the frame has
        self._gradients: dict[int, cl.Buffer] = {}
        self._fused: range = range(0)  # levels whose gradient the next level's launch makes
        self._launches = BoundLaunches()  # the same every frame of a size
        built = program(runtime)
        self._pyr_down = built.kernel('pyr_down')
        self._pyr_down_rows = built.kernel('pyr_down_rows')
        self._pyr_down_gradient = built.kernel('pyr_down_gradient')
        self._pyr_down_gradient_rows = built.kernel('pyr_down_gradient_rows')
        self._pyr_down_gradients = built.kernel('pyr_down_gradients')
        self._pyr_down_mono8 = built.kernel('pyr_down_mono8')
        self._pyr_down_mono8_rows = built.kernel('pyr_down_mono8_rows')
        self._pyr_down2_mono8 = built.kernel('pyr_down2_mono8')
        self._pyr_down2_mono8_gradient = built.kernel('pyr_down2_mono8_gradient')
        self._area_group = area_group(runtime)
        self._gradient = built.kernel('gradient')
        self._gradient_rows = built.kernel('gradient_rows')

    def _role(self, kind: str, level: int) -> str:
        return f'p{self.slot}_{kind}{level}'

    def build(self, gray: DeviceGray, depth: int, first: int = 0,
              gradients: range = range(0)) -> None:
        """
        Blur-decimate a decoded frame into its levels, ``depth`` in all, from level ``first`` on.

        Fewer where the frame has fewer (``level_shapes``): the levels a method reads, no more.
        Level 0 is a copy of the frame; a method that does not read it (dis from level 1 on)
        has level 1 made from the frame itself, a full-resolution copy fewer, and from a mono8
        frame's bytes where it has them (the decode fused in); on GPUs level 2 is made from
        the bytes in one launch, for a method that reads neither (dis ultrafast and fast,
        pyr_down2_mono8) or with level 1 and its gradient (dis medium,
        pyr_down2_mono8_gradient). Levels not kept are None. The launch making a level also
        makes the gradient of the level above where it is in ``gradients`` (the levels whose
        gradients the method will read): a launch fewer each (pyr_down_gradient;
        pyr_down_gradient_rows in the CPU formulation), and on GPUs the coarsest level's own
        (pyr_down_gradients). Other gradients are made at their first use (``gradient``).
        """
        possible = level_shapes(gray.height, gray.width)
        if possible != self._possible:  # new buffers ahead
            self._launches.clear()
        self._possible = possible
        self.shapes = self._possible[:1]
        self._gradients.clear()
        if first == 0 or depth < 2 or len(possible) < 2:
            kept = self.buffers.get(self._role('i', 0), gray.nbytes)
            self.images.copy(gray, kept, 'pyramid')
            self.levels = [kept]
        elif (depth > 2 and self.formulation == 'gpu' and len(possible) > 2
              and isinstance(gray.source, Mono8Frame) and (first >= 2 or 1 in gradients)):
            self._down_twice(gray.source, keep=first < 2)
        else:
            self.levels = [None]
            self._down(gray.source, 1)  # level 0 not kept: no gradient to make
        self.extend(depth, gradients)

    def has(self, level: int) -> bool:
        """Whether ``level`` is kept (level 0 is not where the method did not read it)."""
        return level < len(self.levels) and self.levels[level] is not None

    def extend(self, depth: int, gradients: range = range(0)) -> None:
        """
        Add the coarser levels up to ``depth`` (for a method reading more than were built).

        With the same launches as ``build`` for the same ``gradients``: the previous frame's
        pyramid, extended after a change of method, runs only kernels that the new method's
        warm-up ran (PoCL compiles a kernel for each work-group size at its first run).
        """
        self._fused = gradients
        last = min(depth, len(self._possible)) - 1
        for level in range(len(self.levels), last + 1):
            self._down(self.levels[-1], level, level == last)
        self._fused = range(0)

    def _down(self, src: cl.Buffer | Mono8Frame | None, level: int,
              coarsest: bool = False) -> None:
        """
        Make ``level`` from ``src``, the level above it (or the frame itself, for level 1).

        On GPUs the ``coarsest`` level read also has its own gradient made in the launch
        (pyr_down_gradients), where no level below would make it.
        """
        (h, w), (sh, sw) = self._possible[level], self._possible[level - 1]
        dst = self.buffers.get(self._role('i', level), h * w * 4)
        rows = self.formulation == 'cpu' and w >= ROWS_MIN_WIDTH
        sizes = (np.int32(sw), np.int32(sh), dst, np.int32(w), np.int32(h))
        local = None
        if isinstance(src, Mono8Frame):
            kernel = self._pyr_down_mono8_rows if rows else self._pyr_down_mono8
            args: tuple[object, ...] = (src.buffer, np.int32(src.step), *sizes)
        elif level - 1 in self._fused and self.has(level - 1):
            grad = self.buffers.get(self._role('g', level - 1), sh * sw * 8)
            rows = self.formulation == 'cpu'
            kernel = self._pyr_down_gradient_rows if rows else self._pyr_down_gradient
            args = (src, *sizes, grad)
            self._gradients[level - 1] = grad
            if not rows and coarsest and level in self._fused:
                own = self.buffers.get(self._role('g', level), h * w * 8)
                kernel, args = self._pyr_down_gradients, (*args, own)
                local = self._area_group
                self._gradients[level] = own
        else:
            kernel = self._pyr_down_rows if rows else self._pyr_down
            args = (src, *sizes)
        self._launches(kernel, row_items(w, h) if rows else (w, h), args, 'pyramid', local)
        self.levels.append(dst)
        self.shapes.append((h, w))

    def _down_twice(self, frame: Mono8Frame, keep: bool) -> None:
        """
        Make level 2 from a mono8 frame's bytes in one launch (pyr_down2_mono8).

        With ``keep`` also level 1 and its gradient (pyr_down2_mono8_gradient); else level 1 is
        not kept.
        """
        (h1, w1), (h, w) = self._possible[1:3]
        dst = self.buffers.get(self._role('i', 2), h * w * 4)
        source = (frame.buffer, np.int32(frame.step), np.int32(frame.width),
                  np.int32(frame.height))
        mid: cl.Buffer | None = None
        if keep:
            mid = self.buffers.get(self._role('i', 1), h1 * w1 * 4)
            self._gradients[1] = self.buffers.get(self._role('g', 1), h1 * w1 * 8)
            kernel, args = self._pyr_down2_mono8_gradient, (*source, mid, self._gradients[1])
        else:
            kernel, args = self._pyr_down2_mono8, source
        self._launches(kernel, (w, h), (*args, dst, np.int32(w), np.int32(h)), 'pyramid',
                       self._area_group)
        self.levels = [None, mid, dst]
        self.shapes.extend(self._possible[1:3])

    def gradient(self, level: int) -> cl.Buffer:
        """float2 (d/dx, d/dy) of ``level``, computed at its first use for this frame."""
        found = self._gradients.get(level)
        if found is None:
            h, w = self.shapes[level]
            found = self.buffers.get(self._role('g', level), h * w * 8)
            args = (self.levels[level], np.int32(w), np.int32(h), found)
            if self.formulation == 'cpu':
                self._launches(self._gradient_rows, row_items(w, h, 1), args, 'derivatives')
            else:
                self._launches(self._gradient, (w, h), args, 'derivatives')
            self._gradients[level] = found
        return found
