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
The pixels and valid window of a stereo_msgs/DisparityImage, made on the device.

What a node publishes differs from the matcher's map: disparities in the published image's
pixels (halved with ELAS ``subsampling``), every invalid pixel at ``min_disparity - 1``, and the
bounding box of the valid pixels. On the host that is three passes over the map (about 1 ms
each at 1280x720); here it is one kernel beside the map, and the host receives the finished
pixels in a pinned array, ready to be serialized.
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = 'stereo/disparity_image.cl'
PREFERRED_GROUP = (32, 8)
EMPTY_BOX = np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).max, -1, -1], np.int32)


@dataclass(frozen=True)
class PublishedMap:
    """A DisparityImage's map (pinned HxW float32, valid until the next make) and window."""

    pixels: np.ndarray
    valid_window: tuple[int, int, int, int]  # x_offset, y_offset, width, height; 0s if none


class DisparityImageMaker:
    """Turns a device disparity map into the pixels and valid window a DisparityImage carries."""

    def __init__(self, runtime: ClRuntime):
        """Build the kernel (KernelBuildError while a node starts)."""
        self.runtime = runtime
        self.buffers = runtime.buffers()
        self._kernel = runtime.program(KERNELS).kernel('disparity_image')
        self._group = self._kernel.fit(PREFERRED_GROUP)
        self._box = np.empty(4, np.int32)

    def make(self, disparity: cl.Buffer, height: int, width: int, scale: float,
             min_disparity: float) -> PublishedMap:
        """
        Scale ``disparity`` (HxW float32 on the device) and mark its invalid pixels.

        ``min_disparity`` is in the published pixels (after ``scale``): smaller values and NaN
        become ``min_disparity - 1``.
        """
        out = self.buffers.get('pixels', 4 * height * width)
        box = self.buffers.get('box', EMPTY_BOX.nbytes)
        self.runtime.upload(box, EMPTY_BOX, 'disparity_image')
        self._kernel((width, height), (disparity, np.int32(width), np.int32(height),
                                       np.float32(scale), np.float32(min_disparity), out, box),
                     'disparity_image', self._group)
        pixels = self.buffers.pinned('pixels_host', (height, width), np.dtype(np.float32))
        self.runtime.download(pixels, out, 'download')
        self.runtime.download(self._box, box, 'download')
        x0, y0, x1, y1 = (int(v) for v in self._box)
        window = (0, 0, 0, 0) if x1 < 0 else (x0, y0, x1 - x0 + 1, y1 - y0 + 1)
        return PublishedMap(pixels, window)
