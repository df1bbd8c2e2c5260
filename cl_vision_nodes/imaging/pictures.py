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
The last step of the visual topics: a bgr8 picture drawn on the device, downloaded once.

The flow colour wheel, the disparity colour map and the keypoint overlay are drawn by kernels
(flow/colorwheel.py, elas/colormap.py, surf/draw.py) into a device buffer of H*W*3 bytes; the
only host work left is one copy, straight into the caller's memory when it passes ``out`` (a node
passes a view of the outgoing message's bytes, so the picture is never copied again).
"""
from __future__ import annotations

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

PIXEL_GROUP = 256
"""Preferred work-group of the one-pixel-per-item drawing kernels (halved where not allowed)."""
PIXELS_PER_ITEM = 32
"""Pixels each work-item of a frame-wide reduction (largest flow, disparity range) visits: one
atomic per 32 pixels instead of one per pixel, and no local memory or barrier at all."""


def reduction_items(count: int) -> int:
    """Return the work-items of a reduction over ``count`` pixels (each strides over the frame)."""
    return -(-count // PIXELS_PER_ITEM)


def check_device_input(buf: cl.Buffer, nbytes: int, what: str) -> None:
    """
    Refuse a device buffer smaller than the ``nbytes`` a kernel will read (ImageFormatError).

    A kernel reading past it would read another allocation or crash the device.
    """
    if nbytes <= 0:
        raise ImageFormatError(f'{what}: nothing to draw ({nbytes} bytes)')
    if buf.size < nbytes:
        raise ImageFormatError(f'{what}: the device buffer holds {buf.size} bytes, '
                               f'{nbytes} are needed')


def download_bgr8(runtime: ClRuntime, picture: cl.Buffer, height: int, width: int,
                  out: np.ndarray | None = None) -> np.ndarray:
    """
    Copy the HxWx3 bgr8 ``picture`` into ``out`` (or a new array); return it as HxWx3.

    ``out`` is any writable C-contiguous uint8 array of H*W*3 elements, e.g. a slice of a message
    buffer; ImageFormatError otherwise.
    """
    shape = (height, width, 3)
    if out is None:
        target = np.empty(shape, np.uint8)
    else:
        if (out.dtype != np.uint8 or not out.flags.c_contiguous or not out.flags.writeable
                or out.size != height * width * 3):
            raise ImageFormatError(
                f'out must be a writable C-contiguous uint8 array of {height}x{width}x3 = '
                f'{height * width * 3} elements, got {out.dtype} {out.shape} '
                f"{'contiguous' if out.flags.c_contiguous else 'strided'} "
                f"{'writable' if out.flags.writeable else 'read-only'}")
        target = out.reshape(shape)
    runtime.download(target, picture, 'download')
    return target
