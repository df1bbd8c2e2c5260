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
Dense Inverse Search (Kroeger et al., ECCV 2016; OpenCV's DISOpticalFlow), coarse to fine.

Per pyramid level, from the coarsest (chosen from the image size as OpenCV does) to
``dis_finest_level``: a grid of square patches (side ``dis_patch_size``, ``dis_patch_stride``
apart, the last one moved back to the border) is matched by inverse-compositional Lucas-Kanade
on mean-normalised patches in two passes, the first started from the dense flow of the coarser
level, the second from the best of each patch's and its four neighbours' results (OpenCV
propagates along rows in sequence; this is its parallel counterpart); the patches are densified
by averaging, weighted by each patch's photometric error at the pixel; then the variational
refinement (brightness and gradient constancy, smoothness, OpenCV's weights and normalisation)
runs ``dis_refine_iterations`` fixed-point iterations of 5 red-black SOR sweeps on tiles. The
finest level's flow is upsampled to full resolution.

The kernels are those of kernels/flow/dis.cl; only the solver has two formulations (SOLVERS:
a GPU's work-group shares a tile, a CPU's single work-item walks it a row of one colour at a
time as a float8), chosen by the ``formulation`` the estimator passes. Frames with a side shorter than the patch get zero flow.
"""
from __future__ import annotations

import math

from cl_vision_nodes.flow import coarse_to_fine
from cl_vision_nodes.flow.coarse_to_fine import flow_buffers, FlowField
from cl_vision_nodes.flow.pyramid import DevicePyramid, Shape
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.limits import DeviceLimits
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/dis.cl')
TILE = 16
"""Side of the dis_vr_solve tiles (DIS_TILE): they shape the result, the work-group does not."""


SOLVERS = {'gpu': 'dis_vr_solve', 'cpu': 'dis_vr_solve_rows'}
"""The solver kernel of each formulation."""


def solve_group(limits: DeviceLimits, formulation: str) -> tuple[int, int]:
    """Work-group of the solver: a TILE-wide group of rows on GPUs, one work-item on CPUs."""
    if formulation == 'cpu':
        return 1, 1
    return limits.group_2d((TILE, TILE), min_width=1)


def program(runtime: ClRuntime, patch: int, group: tuple[int, int]) -> Program:
    """Build the dis kernels for a patch side and a dis_vr_solve work-group."""
    return runtime.program(KERNELS, {'DIS_PATCH': patch, 'DIS_TILE': TILE,
                                     'DIS_GROUP_W': group[0], 'DIS_GROUP_H': group[1]})


def grid_count(n: int, patch: int, stride: int) -> int:
    """Patches along an axis of ``n`` pixels: origins k * stride, the last at n - patch."""
    return -(-(n - patch) // stride) + 1


def coarsest_level(shapes: list[Shape], patch: int) -> int:
    """
    OpenCV's coarsest scale for the level-0 size, within the levels whose sides hold a patch.

    OpenCV: the level where a quarter of the image is about one patch (motions up to a
    quarter of the image are found), and no level smaller than a patch.
    """
    h, w = shapes[0]
    level = min(int(math.log2(max(w, h) / (4.0 * patch)) + 0.5),
                int(math.log2(min(w, h) / patch)))
    fitting = [k for k, (lh, lw) in enumerate(shapes) if min(lh, lw) >= patch]
    return max(0, min(level, fitting[-1]))


def solve_offset(iteration: int) -> int:
    """Tile origin shift of a fixed-point iteration: tile edges move between iterations."""
    return (iteration % 2) * (TILE // 2)


class DenseInverseSearch:
    """Runs dis between two device pyramids; buffers are sized for level 0 and reused."""

    def __init__(self, runtime: ClRuntime, buffers: Buffers, settings: FlowSettings,
                 formulation: str):
        self.runtime = runtime
        self.buffers = buffers
        self.formulation = formulation
        self.group = solve_group(runtime.limits, formulation)
        self._upsample = coarse_to_fine.program(runtime).kernel('flow_upsample')
        self.configure(settings)

    def configure(self, settings: FlowSettings) -> None:
        """Build (or find) the program of the patch size of ``settings``."""
        built = program(self.runtime, settings.dis_patch_size, self.group)
        self._search = built.kernel('dis_search')
        self._densify = built.kernel('dis_densify')
        self._warp = built.kernel('dis_vr_warp')
        self._first = built.kernel('dis_vr_first')
        self._second = built.kernel('dis_vr_second')
        self._solve = built.kernel(SOLVERS[self.formulation])

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2)."""
        patch = settings.dis_patch_size
        field = FlowField(self.runtime, self._upsample, flow_buffers(self.buffers,
                                                                     prev.shapes[0]))
        if min(prev.shapes[0]) < patch:
            field.zero(prev.shapes[0])
            return field.current
        coarsest = coarsest_level(prev.shapes, patch)
        finest = min(settings.dis_finest_level, coarsest)
        field.zero(prev.shapes[coarsest])
        for level in range(coarsest, finest - 1, -1):
            if level < coarsest:
                field.upsample(prev.shapes[level + 1], prev.shapes[level])
            self._search_level(prev, cur, level, field, settings)
            if settings.dis_refine_iterations > 0:
                self._refine_level(prev, cur, level, field, settings)
        for level in range(finest - 1, -1, -1):
            field.upsample(prev.shapes[level + 1], prev.shapes[level])
        return field.current

    def _search_level(self, prev: DevicePyramid, cur: DevicePyramid, level: int,
                      field: FlowField, settings: FlowSettings) -> None:
        """Both search passes, then the densified flow into the field."""
        h, w = prev.shapes[level]
        patch, stride = settings.dis_patch_size, settings.dis_patch_stride
        ws, hs = grid_count(w, patch, stride), grid_count(h, patch, stride)
        h0, w0 = prev.shapes[0]
        count = grid_count(w0, patch, stride) * grid_count(h0, patch, stride)
        sparse = (self.buffers.get('dis_sparse_a', count * 8),
                  self.buffers.get('dis_sparse_b', count * 8))
        wh = (np.int32(w), np.int32(h))
        grid = (np.int32(ws), np.int32(hs), np.int32(stride))
        images = (prev.levels[level], prev.gradient(level), cur.levels[level])
        passes = settings.dis_iterations // 2
        for propagate, source, target in ((0, sparse[1], sparse[0]), (1, sparse[0], sparse[1])):
            self._search((ws, hs), (*images, *wh, field.current, source, target, *grid,
                                    np.int32(passes), np.int32(propagate)), 'dis_search')
        self._densify((w, h), (prev.levels[level], cur.levels[level], *wh, sparse[1], *grid,
                               field.spare), 'dis_densify')
        field.swap()

    def _refine_level(self, prev: DevicePyramid, cur: DevicePyramid, level: int,
                      field: FlowField, settings: FlowSettings) -> None:
        """The variational refinement of the field's flow at ``level``, into the field."""
        h, w = prev.shapes[level]
        count = prev.shapes[0][0] * prev.shapes[0][1]
        averaged = self.buffers.get('dis_averaged', count * 8)
        t1 = self.buffers.get('dis_terms_1', count * 16)
        t2 = self.buffers.get('dis_terms_2', count * 16)
        dflow = (self.buffers.get('dis_dflow_a', count * 8),
                 self.buffers.get('dis_dflow_b', count * 8))
        wh = (np.int32(w), np.int32(h))
        self._warp((w, h), (prev.levels[level], cur.levels[level], field.current, *wh, averaged),
                   'dis_refine')
        self._first((w, h), (averaged, *wh, t1, t2), 'dis_refine')
        self._second((w, h), (t1, *wh, t2), 'dis_refine')
        weights = (np.float32(settings.dis_alpha / 2), np.float32(settings.dis_gamma / 2),
                   np.float32(settings.dis_delta / 2))
        iterations = settings.dis_refine_iterations
        for index in range(iterations):
            offset = solve_offset(index)
            tiles = (-(-(w + offset) // TILE), -(-(h + offset) // TILE))
            items = (tiles[0] * self.group[0], tiles[1] * self.group[1])
            self._solve(items, (t1, t2, field.current, dflow[index % 2], dflow[1 - index % 2],
                                field.spare, *wh, np.int32(offset), np.int32(index == 0),
                                np.int32(index == iterations - 1), *weights),
                        'dis_refine', local=self.group)
        field.swap()
