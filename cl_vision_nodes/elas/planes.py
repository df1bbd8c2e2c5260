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
Stage "disparity planes": d = a u + b v + c per triangle (computeDisparityPlanes).

Each view uses its own plane; the prior of a triangle is applied only if the plane and its
projection into the other view slant less than 0.7 (libelas' ``valid``), so both planes of
every triangle are solved: by Cramer's rule on exact 64-bit determinants, each quotient
correctly rounded to float (kernels/elas/planes.cl), which is libelas' double solve rounded to
float without double precision on the device.
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import Geometry, MAX_OWNED, StageDevice
from cl_vision_nodes.elas.support import SupportStage
from cl_vision_nodes.elas.triangulation import TriangulationStage
import numpy as np

MODULE = 'planes'
STAGE = 'disparity planes'


class PlaneStage:
    """Owns the (a, b, c, prior valid) float4 per triangle slot of one view."""

    def __init__(self, dev: StageDevice, geo: Geometry, support: SupportStage,
                 tri: TriangulationStage, right_view: bool):
        self.planes = dev.buffer(f'planes_{"r" if right_view else "l"}',
                                 16 * MAX_OWNED * geo.max_points)
        self.launches = [dev.launch(
            MODULE, 'elas_planes', (geo.max_points,), (dev.local.items,),
            (support.points, tri.tri[right_view], tri.tri_count[right_view],
             np.int32(geo.max_points), np.int32(right_view), self.planes), STAGE)]
