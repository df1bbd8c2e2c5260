"""Stage "delaunay": Delaunay triangulation of the support points, per view, on the device.

libelas triangulates with Shewchuk's Triangle (left: (u, v); right: (u - d, v)); scipy's Qhull
needs about 13 ms for the ~4,400 points of a KITTI frame here (19 ms with its default options
on the co-circular lattice), Triangle about 1 ms for both views.

Here every point computes its own star in parallel (kernels/elas.cl, elas_triangulate): its
nearest neighbour is a Delaunay edge; the apex of each edge is found by gift wrapping, first
among the nearest points of the rows around the edge, then made exact by sweeping the rows the
circumcircle crosses (binary search per row: support points lie on few rows, the lattice rows
plus the two corner rows), with integer orientation and in-circle predicates. The Delaunay
triangulation of lattice points is not unique (every square of four points is co-circular):
ties are broken by Simulation of Simplicity on the lifted coordinate (point i raised by
eps^(i+1), i = libelas' point order), so all points agree on one valid Delaunay triangulation:
every square is split along the diagonal that avoids its first point in libelas' order (its
top-left corner), where Triangle's choice depends on its divide-and-conquer order. Points with
the same right-view position keep the first one (Triangle drops later duplicates too).

Each triangle is stored once, by the vertex opposite its longest edge (its largest angle is at
least 60 degrees, so no point stores more than 5): a fixed 6-slot table per point, no scan.
"""
from __future__ import annotations

import numpy as np

from cl_vision_nodes.elas.device import MAX_OWNED, Geometry, Launch, LocalSizes, Workspace
from cl_vision_nodes.elas.support import INT4, SupportStage

STAGE = 'delaunay'


class TriangulationStage:
    """Owns the triangle tables of both views (point indices at slot * MAX_OWNED + j)."""

    def __init__(self, ws: Workspace, geo: Geometry, local: LocalSizes, support: SupportStage):
        self.tri = tuple(ws.buffer(f'tri_{v}', INT4 * MAX_OWNED * geo.max_points) for v in 'lr')
        self.tri_count = tuple(ws.buffer(f'tri_count_{v}', 4 * geo.max_points) for v in 'lr')
        self.launches = [Launch(
            ws.runtime, 'elas_triangulate', (geo.max_points, 2), (local.items, 1),
            (*support.slots, support.row_start, *support.row_len, support.row_y,
             np.int32(geo.rows), support.meta, np.int32(geo.max_points), *self.tri,
             *self.tri_count), STAGE)]
