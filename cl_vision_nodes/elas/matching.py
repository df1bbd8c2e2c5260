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
Stage "matching": dense matching with the generative prior (computeDisparity), per view.

The triangles are scan-converted exactly as libelas does (float line equations, half-open
ranges; pixels no triangle visits stay invalid) into an owner map; where triangles share pixels
the one with the larger table index wins (libelas: the later one in Triangle's order). Then
findMatch runs per pixel: the plane band with the prior P (libelas' float formula, uploaded once
per configuration) plus the grid cell's candidates, one 16-byte descriptor SAD each.
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import Geometry, StageDevice
from cl_vision_nodes.elas.grid import GridStage
from cl_vision_nodes.elas.planes import PlaneStage
from cl_vision_nodes.elas.schema import ElasSettings
from cl_vision_nodes.elas.support import SupportStage
from cl_vision_nodes.elas.triangulation import TriangulationStage
import numpy as np
import pyopencl as cl

MODULE = 'matching'
STAGE = 'matching'


class MatchingStage:
    """Owns the owner map and the raw disparity map (libelas' D1 or D2) of one view."""

    def __init__(self, dev: StageDevice, geo: Geometry, s: ElasSettings,
                 desc: tuple[cl.Buffer, cl.Buffer], support: SupportStage,
                 tri: TriangulationStage, planes: PlaneStage, grid: GridStage, right_view: bool):
        i32 = np.int32
        view = 'r' if right_view else 'l'
        prior = s.prior()
        prior_buf = dev.buffer(f'prior_{view}', prior.nbytes)
        dev.runtime.upload(prior_buf, prior, 'upload_prior', blocking=True)  # once per config
        self.owner = owner = dev.buffer(f'owner_{view}', 4 * geo.out_pixels)
        self.disparity = dev.buffer(f'disparity_{view}', 4 * geo.out_pixels)
        ref, tgt = (desc[1], desc[0]) if right_view else desc
        self.launches = [
            dev.fill(owner, np.int32(-1), STAGE),
            dev.launch(MODULE, 'elas_raster', (geo.max_points, dev.local.raster_lanes),
                       (dev.local.items, 1),
                       (support.points, tri.tri[right_view], tri.tri_count[right_view],
                        i32(geo.max_points), i32(right_view), i32(geo.width), i32(geo.height),
                        i32(geo.out_width), i32(s.subsampling), owner), STAGE),
            dev.launch(MODULE, 'elas_match', (geo.out_width, geo.out_height), dev.local.heavy,
                       (ref, tgt, owner, planes.planes, grid.lists, prior_buf, i32(geo.width),
                        i32(geo.height), i32(geo.out_width), i32(geo.out_height),
                        i32(s.subsampling), i32(1 if right_view else -1), i32(s.grid_size),
                        i32(geo.grid_w), i32(s.disp_max), i32(s.plane_radius),
                        i32(s.match_texture), self.disparity), STAGE),
        ]
