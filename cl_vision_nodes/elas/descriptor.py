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
Stage "descriptor": libelas' 3x3 Sobel and 16-byte descriptor per pixel, both views.

The images arrive as float gray on the 0..255 scale (``DeviceImages.upload_gray`` decodes every
sensor_msgs encoding); libelas works on 8 bits, so they are rounded (half to even, exact for
mono8 input) and saturated first.
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import Geometry, StageDevice, Step
from cl_vision_nodes.elas.schema import ElasSettings
import numpy as np
import pyopencl as cl

MODULE = 'descriptor'
STAGE = 'descriptor'


class DescriptorStage:
    """
    Stage "descriptor": owns the 8-bit, Sobel and descriptor buffers of both views.

    It reads the decoded gray images (left, right).
    """

    def __init__(self, dev: StageDevice, geo: Geometry, s: ElasSettings,
                 gray: tuple[cl.Buffer, cl.Buffer]):
        w, h = np.int32(geo.width), np.int32(geo.height)
        pixels = dev.local.pixels
        du = dev.buffer('du', geo.pixels)
        dv = dev.buffer('dv', geo.pixels)
        u8 = dev.buffer('u8', geo.pixels)
        self.desc = tuple(dev.buffer(f'desc_{view}', 16 * geo.pixels)
                          for view in ('left', 'right'))
        self.launches: list[Step] = []
        for image, desc in zip(gray, self.desc):
            self.launches += [
                dev.launch(MODULE, 'elas_gray_u8', (geo.pixels,), (pixels[0],),
                           (image, np.int32(geo.pixels), u8), STAGE),
                dev.launch(MODULE, 'elas_sobel', (geo.width, geo.height), pixels,
                           (u8, w, h, du, dv), STAGE),
                dev.launch(MODULE, 'elas_descriptor', (geo.width, geo.height), pixels,
                           (du, dv, w, h, np.int32(s.subsampling), desc), STAGE),
            ]
