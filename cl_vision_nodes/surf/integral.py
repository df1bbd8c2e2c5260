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
Integral image on the device: (H+1)x(W+1) uint32 in ``cv2.integral``'s layout.

The first row and column are zero (OpenCV's layout); exact for 8-bit input while 255 W H < 2^32 (up
to 4096x4096 and a little beyond).

Blocked scan in three kernels (kernels/surf/integral.cl), after seed 002 but parallel over
blocks in both passes:

1. ``integral_blocks``: one work-group per block of ``block`` columns (up to 128, as the device
   allows) x INT_STRIP rows keeps each column's running sum over the strip and scans it across
   the block in local memory, giving the sum over the strip's rows above and the block's
   columns left of every pixel; it also writes each row's block total. Sums are exact
   integers, so the block width does not change the result.
2. ``integral_carries``: per row, the exclusive prefix of the block totals (columns left of the
   block); per column, the exclusive prefix over strips (rows above the strip).
3. ``integral_combine``: adds both carries in place and writes the zero border.

The gray input is the float buffer of ``DeviceImages.upload_gray``; its values are rounded to
integers 0..255 (exact for 8-bit encodings; 16-bit and float images are quantised as OpenCV
SURF requires 8-bit input).
"""
from __future__ import annotations

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('surf/integral.cl',)
BLOCK_WG = 128
"""Preferred columns per block of the scan (one work-group); the device may allow fewer."""
INT_STRIP = 16
"""Rows per block of the scan."""
CARRY_WG = 64
COMBINE_WG = (32, 4)
MAX_PIXELS = (2**32 - 1) // 255
"""Largest pixel count whose 8-bit sum fits uint32 (16.8 Mpx; 4096x4096 = 16.78 Mpx fits)."""


def check_size(height: int, width: int) -> None:
    """Reject images whose integral would overflow uint32."""
    if height * width > MAX_PIXELS:
        raise ImageFormatError(
            f'image of {width}x{height} = {width * height} pixels is too large for SURF: the '
            f'uint32 integral image is exact up to {MAX_PIXELS} pixels')


class DeviceIntegral:
    """
    Computes the integral image of a float gray device buffer into buffers of ``buffers``.

    Roles ``integral*``, reused while the image size stays the same.
    """

    def __init__(self, runtime: ClRuntime, buffers: Buffers):
        self.runtime = runtime
        self.buffers = buffers
        limits = runtime.limits
        self.block = limits.group(BLOCK_WG)
        program = runtime.program(KERNELS, {'INT_WG': self.block, 'INT_STRIP': INT_STRIP})
        self._blocks = program.kernel('integral_blocks')
        self._carries = program.kernel('integral_carries')
        self._combine = program.kernel('integral_combine')
        self._carry_group = self._carries.fit((CARRY_WG,))
        self._combine_group = limits.group_2d(COMBINE_WG)

    def compute(self, gray: cl.Buffer, height: int, width: int) -> cl.Buffer:
        """Enqueue the three passes; returns the ``integral`` buffer (no host sync)."""
        check_size(height, width)
        blocks = -(-width // self.block)
        strips = -(-height // INT_STRIP)
        integ = self.buffers.get('integral', (height + 1) * (width + 1) * 4)
        row_totals = self.buffers.get('integral_row_totals', height * blocks * 4)
        row_carry = self.buffers.get('integral_row_carry', height * blocks * 4)
        strip_carry = self.buffers.get('integral_strip_carry', strips * width * 4)
        w, h, nb = np.int32(width), np.int32(height), np.int32(blocks)
        self._blocks((blocks * self.block, strips), (gray, w, h, integ, row_totals), 'integral',
                     (self.block, 1))
        self._carries((height + width,), (integ, row_totals, w, h, nb, row_carry, strip_carry),
                      'integral', self._carry_group)
        self._combine((width + 1, height + 1), (integ, row_carry, strip_carry, w, h, nb),
                      'integral', self._combine_group)
        return integ
