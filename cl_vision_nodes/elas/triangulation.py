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
Stage "delaunay": Delaunay triangulation of the support points, both views, on the device.

libelas triangulates with Shewchuk's Triangle (left view: (u, v); right view: (u - d, v)).

Here every point computes its own star in parallel (kernels/elas/triangulation.cl,
elas_triangulate): its nearest neighbour is a Delaunay edge; the apex of each edge is found by
gift wrapping, first among the slots nearest to the edge's bisector in the rows around it, then
made exact by sweeping the rows the circumcircle crosses, each clipped to the edge's side (binary
search per row: support points lie on few rows, the lattice rows plus the two corner rows), with
orientation and in-circle predicates evaluated exactly in 64-bit integers (the scan ranges are
float bounds with a margin; see the kernel file for the size limits). The Delaunay
triangulation of lattice points is not unique (every square of four points, every isosceles
trapezoid between two rows is co-circular): ties are broken by Simulation of Simplicity on the
lifted coordinate (point i raised by eps^(i+1), i = libelas' point order), so all points agree
on one valid Delaunay triangulation. A lattice square is split along the diagonal that avoids
its first point in libelas' order (its top-left corner); Triangle's choice depends on its
divide-and-conquer merge order instead, so the two differ on such ties (and thus on some
planes), never in validity. Points with the same right-view position keep the first one
(Triangle drops later duplicates).

Each triangle is stored once, by the vertex opposite its longest edge (its largest angle is at
least 60 degrees, so no point stores more than 5): a fixed 6-slot table per point, no scan.

Measured (both views; test/test_elas_kernels.py checks validity and equality with Qhull on
tie-free input): KITTI 000001's 1,520 support points (ROBOTICS) take 0.79 ms on an H100 and
6-12 ms with PoCL on the shared 2-core development CPU, where scipy.spatial.Delaunay (Qhull)
needs 4.1-5.4 ms per view and libelas' Triangle 1.8 ms for both; a random 4,331-point lattice
takes 17-30 ms with PoCL against 12.5-22.6 ms per view for Qhull. With add_corners the fans
around the image corners make it about 1.6-1.8 ms on the H100.
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import Geometry, MAX_OWNED, StageDevice
from cl_vision_nodes.elas.support import INT4, SupportStage
import numpy as np

MODULE = 'triangulation'
STAGE = 'delaunay'


class TriangulationStage:
    """Owns the triangle tables of both views (point indices at slot * MAX_OWNED + j)."""

    def __init__(self, dev: StageDevice, geo: Geometry, support: SupportStage):
        self.tri = tuple(dev.buffer(f'tri_{v}', INT4 * MAX_OWNED * geo.max_points) for v in 'lr')
        self.tri_count = tuple(dev.buffer(f'tri_count_{v}', 4 * geo.max_points) for v in 'lr')
        self.launches = [dev.launch(
            MODULE, 'elas_triangulate', (geo.max_points, 2), (dev.local.items, 1),
            (*support.slots, support.row_start, *support.row_len, support.row_y,
             np.int32(geo.rows), support.meta, np.int32(geo.max_points), *self.tri,
             *self.tri_count), STAGE)]
