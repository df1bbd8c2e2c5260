"""Stage "descriptor": libelas' 3x3 Sobel and 16-byte descriptor per pixel, both views.

The images arrive as float gray on the 0..255 scale (``DeviceImages.upload_gray`` decodes every
sensor_msgs encoding); libelas works on 8 bits, so they are rounded (half to even, exact for
mono8 input) and saturated first.
"""
from __future__ import annotations

import numpy as np

from cl_vision_nodes.elas.device import Geometry, Launch, LocalSizes, Workspace
from cl_vision_nodes.elas.schema import ElasSettings

VIEWS: tuple[str, ...] = ('left', 'right')
STAGE = 'descriptor'


class DescriptorStage:
    """Owns the gray, 8-bit, Sobel and descriptor buffers of both views."""

    def __init__(self, ws: Workspace, geo: Geometry, local: LocalSizes, s: ElasSettings):
        rt = ws.runtime
        w, h = np.int32(geo.width), np.int32(geo.height)
        du = ws.buffer('du', geo.pixels)
        dv = ws.buffer('dv', geo.pixels)
        self.gray_roles = tuple(ws.role(f'gray_{view}') for view in VIEWS)
        self.desc = tuple(ws.buffer(f'desc_{view}', 16 * geo.pixels) for view in VIEWS)
        self.launches: list[Launch] = []
        u8 = ws.buffer('u8', geo.pixels)
        for role, desc in zip(self.gray_roles, self.desc):
            gray = rt.buffer(role, 4 * geo.pixels)  # the buffer upload_gray(raw, role) fills
            self.launches += [
                Launch(rt, 'elas_gray_u8', (geo.pixels,), (local.pixels[0],),
                       (gray, np.int32(geo.pixels), u8), STAGE),
                Launch(rt, 'elas_sobel', (geo.width, geo.height), local.pixels,
                       (u8, w, h, du, dv), STAGE),
                Launch(rt, 'elas_descriptor', (geo.width, geo.height), local.pixels,
                       (du, dv, w, h, np.int32(s.subsampling), desc), STAGE),
            ]
