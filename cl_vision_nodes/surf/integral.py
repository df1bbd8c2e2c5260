"""Integral image on the device: (H+1)x(W+1) uint32, zero first row and column (OpenCV's
``cv2.integral`` layout), exact for 8-bit input while 255 W H < 2^32 (up to 4096x4096 and a
little beyond).

Blocked scan in three kernels, after seed 002 but parallel over blocks in both passes:

1. ``integral_blocks``: one work-group per block of INT_WG columns x INT_STRIP rows keeps each
   column's running sum over the strip and scans it across the block in local memory, giving
   the sum over the strip's rows above and the block's columns left of every pixel; it also
   writes each row's block total.
2. ``integral_carries``: per row, the exclusive prefix of the block totals (columns left of the
   block); per column, the exclusive prefix over strips (rows above the strip).
3. ``integral_combine``: adds both carries in place and writes the zero border.

The gray input is the float buffer of ``DeviceImages.upload_gray``; its values are rounded to
integers 0..255 (exact for 8-bit encodings; 16-bit and float images are quantised as OpenCV
SURF requires 8-bit input).
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.surf.device import INT_STRIP, INT_WG, SurfKernels

MAX_PIXELS = (2**32 - 1) // 255
"""Largest pixel count whose 8-bit sum fits uint32 (16.8 Mpx; 4096x4096 = 16.78 Mpx fits)."""


def check_size(height: int, width: int) -> None:
    """Reject images whose integral would overflow uint32."""
    if height * width > MAX_PIXELS:
        raise ImageFormatError(
            f'image of {width}x{height} = {width * height} pixels is too large for SURF: the '
            f'uint32 integral image is exact up to {MAX_PIXELS} pixels')


class DeviceIntegral:
    """Computes the integral image of a float gray device buffer into a reused buffer."""

    def __init__(self, kernels: SurfKernels):
        self.kernels = kernels

    def compute(self, gray: cl.Buffer, height: int, width: int) -> cl.Buffer:
        """Enqueue the three passes; returns the ``surf_integral`` buffer (no host sync)."""
        check_size(height, width)
        blocks = -(-width // INT_WG)
        strips = -(-height // INT_STRIP)
        rt = self.kernels.runtime
        launch = self.kernels.launch
        integ = rt.buffer('surf_integral', (height + 1) * (width + 1) * 4)
        row_totals = rt.buffer('surf_integral_row_totals', height * blocks * 4)
        row_carry = rt.buffer('surf_integral_row_carry', height * blocks * 4)
        strip_carry = rt.buffer('surf_integral_strip_carry', strips * width * 4)
        w, h, nb = np.int32(width), np.int32(height), np.int32(blocks)
        launch('integral_blocks', (blocks * INT_WG, strips), (INT_WG, 1),
               (gray, w, h, integ, row_totals), 'integral')
        launch('integral_carries', (height + width,), (64,),
               (integ, row_totals, w, h, nb, row_carry, strip_carry), 'integral')
        launch('integral_combine', (width + 1, height + 1), (32, 4),
               (integ, row_carry, strip_carry, w, h, nb), 'integral')
        return integ
