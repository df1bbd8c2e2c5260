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
Disparity maps as pictures: a jet colour map over [min, max], invalid pixels black.

``DisparityColorizer`` draws it on the device, from the map the matcher leaves there
(``ElasMatcher.last_output``), and downloads only the finished bgr8 picture. Why: subscribing
to a visual topic must cost under 10 % of the node's compute, and the host's passes over the map
(validity, levels, the colour lookup) take 2 to 8 ms of a CPU a frame at 640x480 to 1280x720,
the device's about 1 ms on a 2-core PoCL and 0.3 ms on an H100, mostly the download. The range
is either fixed or follows the data (the smallest..largest valid disparity of the frame, reduced
on the device): a fixed 0..255 colours a 0..60 px scene in nearly one colour. The node's
``color_min`` / ``color_max`` choose between them (``color_range``). The picture is the one
``disparity_to_color`` draws over the same range (the levels are computed in the same float32
arithmetic), which stays as the reference and for the CLI.
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.imaging.pictures import (check_device_input, download_bgr8, PIXEL_GROUP,
                                              reduction_items)
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
import cv2
import numpy as np
import pyopencl as cl

KERNELS = 'elas/colormap.cl'
MIN_SPAN = 1e-6
"""The smallest colour range, px: a degenerate range (one disparity) is not a division by 0."""
JET = cv2.applyColorMap(np.arange(256, dtype=np.uint8)[None], cv2.COLORMAP_JET)[0]
"""The 256 BGR colours of OpenCV's jet, by level: the table the device looks levels up in."""


def disparity_to_color(disparity: np.ndarray, d_min: float, d_max: float) -> np.ndarray:
    """bgr8 HxWx3 picture; pixels below ``d_min`` or not finite (invalid) are black."""
    valid = np.isfinite(disparity) & (disparity >= d_min)
    scale = 255.0 / max(d_max - d_min, MIN_SPAN)
    levels = np.clip((np.where(valid, disparity, d_min) - d_min) * scale, 0, 255)
    picture = cv2.applyColorMap(levels.astype(np.uint8), cv2.COLORMAP_JET)
    picture[~valid] = 0
    return picture


def color_range(values: Mapping[str, Value]) -> tuple[float, float] | None:
    """
    Return the disparity/color range of the node parameters ``color_min`` and ``color_max``.

    None (follow the data) when ``color_max`` <= ``color_min``, as with the defaults 0, 0. They
    are disparities of the full-resolution image, the unit of ``ElasMatcher.last_output``.
    """
    low, high = float(values['color_min']), float(values['color_max'])
    return (low, high) if high > low else None


class DisparityColorizer:
    """The jet picture of a device disparity map, drawn on the device."""

    def __init__(self, runtime: ClRuntime):
        """Build the kernels and upload the jet table (KernelBuildError while a node starts)."""
        self.runtime = runtime
        self.buffers = runtime.buffers()
        program = runtime.program(KERNELS, {'MIN_SPAN': MIN_SPAN})
        self._valid_range = program.kernel('valid_range')
        self._follow_scale = program.kernel('follow_scale')
        self._jet = program.kernel('jet')
        self._groups = {kernel: kernel.fit((PIXEL_GROUP,))
                        for kernel in (self._valid_range, self._jet)}
        self._table = runtime.constant(JET)

    def draw(self, disparity: cl.Buffer, height: int, width: int, invalid_below: float,
             value_range: tuple[float, float] | None, out: np.ndarray | None = None) -> np.ndarray:
        """
        Draw the HxW float32 ``disparity`` in jet; return the HxWx3 bgr8 picture.

        Pixels below ``invalid_below`` or not finite are black (the node passes ``disp_min``:
        the matcher marks invalid pixels -1). ``value_range`` (low, high) is drawn from the first
        to the last jet colour, valid disparities outside it in the nearest end colour (low >=
        high is a degenerate range of MIN_SPAN); None follows the data: this frame's
        smallest..largest valid disparity. The picture is
        downloaded into ``out`` when given (writable C-contiguous uint8, H*W*3 elements), else
        into a new array.
        """
        count = height * width
        check_device_input(disparity, count * 4, 'disparity')
        followed = self.buffers.get('followed', 8)
        follow = value_range is None
        low, high = (0.0, 0.0) if value_range is None else value_range
        if follow:
            extremes = self.buffers.get('range', 8)
            self.runtime.fill(extremes, np.uint32(0), 'draw')
            self._valid_range((reduction_items(count),),
                              (disparity, np.int32(count), np.float32(invalid_below), extremes),
                              'draw', self._groups[self._valid_range])
            self._follow_scale((1,), (extremes, np.float32(255.0 / MIN_SPAN), followed), 'draw')
        picture = self.buffers.get('picture', count * 3)
        self._jet((count,), (disparity, np.int32(count), np.float32(invalid_below),
                             np.int32(follow), np.float32(low),
                             np.float32(255.0 / max(high - low, MIN_SPAN)), followed,
                             self._table, picture), 'draw', self._groups[self._jet])
        return download_bgr8(self.runtime, picture, height, width, out)
