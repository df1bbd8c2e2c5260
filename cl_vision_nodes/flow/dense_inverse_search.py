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
level (prolonged at the patch centres as the pass reads it: no launch between levels), the
second from the best of each patch's and its four neighbours' results (OpenCV propagates along
rows in sequence; this is its parallel counterpart); the patches are densified
by averaging, weighted by each patch's photometric error at the pixel; then the variational
refinement (brightness and gradient constancy, smoothness, OpenCV's weights and normalisation)
runs ``dis_refine_iterations`` fixed-point iterations of 5 red-black SOR sweeps on tiles (on a
GPU all of a level's iterations in one launch, each area of tiles solved alone). The
finest level's flow is upsampled to full resolution in one launch (bilinear by 2^level, as the
levels' steps of 2 compose).

The kernels are those of kernels/flow/dense_inverse_search.cl; the search, the densification and
the solver have two formulations, chosen by the ``formulation`` the estimator passes: on a GPU
dis_search_both (a work-item per lane of a patch's 8, a block of patches a work-group, both
passes in one launch, the block's ring of neighbours searched twice; dis_search_group, a pass
a launch, where the device does not allow that work-group), dis_densify (a work-item per
pixel; on levels that are not refined) and dis_vr_solve_level (a refined level's
densification, terms and fixed-point iterations in one launch, where a CPU has four or more: a
work-group densifies and solves an area, a core of CORE^2 pixels and a HALO ring, the areas
exchanging no dW), on a CPU dis_search (a work-item per
patch), dis_densify_rows (a work-item votes for 8 pixels of a row at once, PoCL's vectors) then
dis_vr_warp and dis_vr_terms, and dis_vr_solve_rows (a launch per fixed-point iteration, tile
edges moving between them; a work-item walks a tile, a row's pixels of one colour as a float8).
The search and densification compute the same numbers in both formulations; the solvers differ
in how areas meet, and give flows of the same accuracy (a GPU's launch costs more than its
work: the H200's 5 launches a level took 5 x 9 us, the one launch 27 us). Frames with a side
shorter than the patch get zero flow.
"""
from __future__ import annotations

from dataclasses import dataclass
import functools
import math
from typing import Callable

from cl_vision_nodes.flow.coarse_to_fine import (flow_buffers, upsample_kernel, upsample_launch,
                                                 VECTOR_FACTORS)
from cl_vision_nodes.flow.pyramid import DevicePyramid, Shape
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.kernel import Kernel
from cl_vision_nodes.opencl.limits import DeviceLimits
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/coarse_to_fine.cl', 'flow/dense_inverse_search.cl')
TILE = 16
"""Side of dis_vr_solve_rows' tiles and dis_vr_solve_level's areas (DIS_TILE): they shape the
result, the work-group does not."""
HALO = 2
"""Ring of an area of dis_vr_solve_level around its core (DIS_HALO): keeps the cores' edges off
the frozen dW around the area (Middlebury medium mean EPE: 0.356 with none, 0.342 with 2, 0.338
a launch per iteration)."""
CORE = TILE - 2 * HALO
"""Side of the core of an area whose flow dis_vr_solve_level writes."""
LANES = 8
"""Pixels of a row that a work-item of dis_densify_rows takes (DIS_LANES)."""
DENSIFY_ROWS = 8
"""Rows that a work-item of dis_densify_rows takes (DIS_DENSIFY_ROWS)."""
TERMS = 8
"""Planes of dis_vr_terms' output (DIS_TERMS): the refinement's image derivatives."""
SEARCH_SLOTS = 8
"""Most patches a work-group of dis_search_group takes (DIS_PATCH work-items a patch)."""
SEARCH_BLOCK = 4
"""Side, in patches, of the block a work-group of dis_search_both takes (DIS_BLOCK)."""
SEARCH_BOTH = SEARCH_BLOCK * SEARCH_BLOCK + 4 * SEARCH_BLOCK
"""Patches of a dis_search_both work-group: its block and the ring around it (DIS_BOTH)."""


def solve_group(limits: DeviceLimits, formulation: str) -> tuple[int, int]:
    """Work-group of the solver: an area's TILE-wide group of rows on GPUs, one item on CPUs."""
    if formulation == 'cpu':
        return 1, 1
    return limits.group_2d((TILE, TILE), min_width=1)


def search_slots(limits: DeviceLimits, patch: int) -> int:
    """Patches one work-group of dis_search_group takes (DIS_SLOTS): up to 8, DIS_PATCH items."""
    return max(1, min(SEARCH_SLOTS, limits.max_group // patch))


def both_fit(limits: DeviceLimits, search_both: Kernel, patch: int) -> bool:
    """
    Whether dis_search_both's work-group runs here: the device's limits and the kernel's own.

    (The kernel's registers may allow fewer: an H200 takes patches of 8, not of 12 or 16.)
    """
    return limits.fits((patch, SEARCH_BOTH)) and patch * SEARCH_BOTH <= search_both.max_group


def program(runtime: ClRuntime, patch: int, group: tuple[int, int]) -> Program:
    """Build the dis kernels for a patch side and a dis_vr_solve_level work-group."""
    return runtime.program(KERNELS, {'DIS_PATCH': patch, 'DIS_TILE': TILE, 'DIS_HALO': HALO,
                                     'DIS_GROUP_W': group[0], 'DIS_GROUP_H': group[1],
                                     'DIS_SLOTS': search_slots(runtime.limits, patch)})


def grid_count(n: int, patch: int, stride: int) -> int:
    """Patches along an axis of ``n`` pixels: origins k * stride, the last at n - patch."""
    return -(-(n - patch) // stride) + 1


def coarsest_level(shapes: list[Shape], patch: int) -> int:
    """
    Return OpenCV's coarsest scale for the level-0 size, within the levels holding a patch.

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

    reads_gradients = True

    def __init__(self, runtime: ClRuntime, buffers: Buffers, settings: FlowSettings,
                 formulation: str):
        self.runtime = runtime
        self.buffers = buffers
        self.formulation = formulation
        self.group = solve_group(runtime.limits, formulation)
        self._plans: dict[int, _Plan] = {}
        self.configure(settings)

    def configure(self, settings: FlowSettings) -> None:
        """Build (or find) the program of the patch size of ``settings``."""
        built = program(self.runtime, settings.dis_patch_size, self.group)
        self._search = built.kernel('dis_search')
        self._search_group = built.kernel('dis_search_group')
        self._search_both = built.kernel('dis_search_both')
        self._search_both_patches = built.kernel('dis_search_both_patches')
        self._densify_upsample = {factor: built.kernel(f'dis_densify_upsample_by{factor}')
                                  for factor in VECTOR_FACTORS}
        self._densify = built.kernel('dis_densify')
        self._densify_rows = built.kernel('dis_densify_rows')
        self._warp = built.kernel('dis_vr_warp')
        self._terms = built.kernel('dis_vr_terms')
        self._solve_level = built.kernel('dis_vr_solve_level')
        self._solve_rows = built.kernel('dis_vr_solve_rows')

    def levels(self, shapes: list[Shape], settings: FlowSettings) -> range:
        """Pyramid levels read: those searched (``coarsest_level`` to the finest), else 0."""
        patch = settings.dis_patch_size
        if min(shapes[0]) < patch:
            return range(1)
        coarsest = coarsest_level(shapes, patch)
        return range(min(settings.dis_finest_level, coarsest), coarsest + 1)

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2)."""
        plan = self._plan(prev, cur, settings)
        # Hand the frame's upload and pyramid to the device now (some drivers hold enqueued
        # commands until a flush), so it works on them while the levels are enqueued.
        self.runtime.queue.flush()
        for step in plan.steps:
            step()
        return plan.result

    def _levels(self, prev: DevicePyramid, settings: FlowSettings) -> range:
        """Return the levels searched, coarse to fine; none for frames smaller than a patch."""
        if min(prev.shapes[0]) < settings.dis_patch_size:
            return range(0)
        read = self.levels(prev.shapes, settings)
        return range(read.stop - 1, read.start - 1, -1)

    def _frame_buffers(self, prev: DevicePyramid, settings: FlowSettings) -> dict[str, cl.Buffer]:
        """Return the estimator's buffers a frame uses, sized for level 0."""
        h0, w0 = prev.shapes[0]
        patch, stride = settings.dis_patch_size, settings.dis_patch_stride
        sparse = grid_count(w0, patch, stride) * grid_count(h0, patch, stride) * 8 if min(
            h0, w0) >= patch else 8
        count = h0 * w0
        flow_a, flow_b = flow_buffers(self.runtime, self.buffers, prev.shapes[0],
                                      prev.slot)
        named = {'flow_a': flow_a, 'flow_b': flow_b,
                 'sparse_a': self.buffers.get('dis_sparse_a', sparse),
                 'sparse_b': self.buffers.get('dis_sparse_b', sparse)}
        if self.formulation == 'cpu':  # the terms, the warped pair they are made from, and dW
            named['terms'] = self.buffers.get('dis_terms', count * 4 * TERMS)
            for name in ('averaged', 'dflow_a', 'dflow_b'):
                named[name] = self.buffers.get(f'dis_{name}', count * 8)
        return named

    def _plan(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> _Plan:
        """Return the frame's launches, bound once per frame size, pyramid slot and settings."""
        levels = self._levels(prev, settings)
        # computed for this frame on first use (the pyramid's buffers themselves are reused)
        gradients = tuple(prev.gradient(level) for level in levels)
        named = self._frame_buffers(prev, settings)
        buffers = (*prev.levels, *cur.levels, *gradients, *named.values())
        key = (tuple(prev.shapes), settings, self.formulation)
        plan = self._plans.get(prev.slot)
        if (plan is not None and plan.key == key and len(plan.buffers) == len(buffers)
                and all(a is b for a, b in zip(plan.buffers, buffers))):
            return plan
        steps = _Steps(self.runtime, named['flow_a'], named['flow_b'])
        if not levels:  # a frame smaller than a patch: zero flow
            steps.zero(prev.shapes[0])
        elif self._sparse_between_levels(settings):
            self._unrefined_levels(prev, cur, levels, named, steps, settings)
        else:
            for level in levels:
                coarse = prev.shapes[level + 1] if level < levels.start else (0, 0)
                self._search_level(prev, cur, level, coarse, named, steps, settings)
                if settings.dis_refine_iterations > 0:
                    self._refine_level(prev, cur, level, named, steps, settings)
            if levels[-1] > 0:  # straight to full resolution, the levels between skipped
                self._prolong(prev, levels[-1], 0, steps)
        plan = _Plan(key, buffers, tuple(steps.launches), steps.current)
        self._plans[prev.slot] = plan
        return plan

    def _prolong(self, prev: DevicePyramid, coarse: int, fine: int, steps: _Steps) -> None:
        """Prolong the field from level ``coarse`` to level ``fine`` in one launch."""
        factor = 1 << (coarse - fine)
        items, args = upsample_launch(steps.current, prev.shapes[coarse], steps.spare,
                                      prev.shapes[fine], factor)
        steps.add(upsample_kernel(self.runtime, factor), items, args, 'upsample', swap=True)

    def _sparse_between_levels(self, settings: FlowSettings) -> bool:
        """
        Whether levels pass on patch flows, not dense fields (``_unrefined_levels``).

        On GPUs where both search passes take one launch, when no level is refined: a dense
        field is then read only at the next level's patch centres and at full resolution.
        """
        return (self.formulation == 'gpu' and settings.dis_refine_iterations == 0
                and both_fit(self.runtime.limits, self._search_both, settings.dis_patch_size))

    def _unrefined_levels(self, prev: DevicePyramid, cur: DevicePyramid, levels: range,
                          named: dict[str, cl.Buffer], steps: _Steps,
                          settings: FlowSettings) -> None:
        """
        Search every level in one launch each, then densify the finest to full resolution.

        A level's first pass densifies its starts from the coarser level's patch flows as it
        reads them (dis_search_both_patches), so no coarser level is densified; the finest
        level's densification writes the full-resolution field (dis_densify_upsample_byF):
        ultrafast's three levels take 4 launches, not 7, and give the numbers of
        ``_search_level`` and ``_prolong`` bit for bit.
        """
        patch, stride = settings.dis_patch_size, settings.dis_patch_stride
        sparse = named['sparse_a'], named['sparse_b']
        grids: dict[int, tuple[np.int32, np.int32]] = {}
        for level in levels:
            h, w = prev.shapes[level]
            ws, hs = grid_count(w, patch, stride), grid_count(h, patch, stride)
            grids[level] = np.int32(ws), np.int32(hs)
            if level == levels.start:  # the coarsest: from zero
                kernel, start = self._search_both, (steps.current, np.int32(0), np.int32(0))
            else:
                ch, cw = prev.shapes[level + 1]
                kernel = self._search_both_patches
                start = (prev.levels[level + 1], cur.levels[level + 1], np.int32(cw),
                         np.int32(ch), sparse[(level + 1) % 2], *grids[level + 1])
            blocks = (-(-ws // SEARCH_BLOCK), -(-hs // SEARCH_BLOCK))
            steps.add(kernel, (patch * blocks[0], SEARCH_BOTH * blocks[1]),
                      (prev.levels[level], prev.gradient(level), cur.levels[level], np.int32(w),
                       np.int32(h), *start, sparse[level % 2], *grids[level], np.int32(stride),
                       np.int32(settings.dis_iterations // 2)),
                      'dis_search', local=(patch, SEARCH_BOTH))
        finest = levels[-1]
        h, w = prev.shapes[finest]
        densify = (prev.levels[finest], cur.levels[finest], np.int32(w), np.int32(h),
                   sparse[finest % 2], *grids[finest], np.int32(stride), steps.spare)
        factor = 1 << finest
        if factor in VECTOR_FACTORS:
            (h0, w0) = prev.shapes[0]
            steps.add(self._densify_upsample[factor], (w, h),
                      (*densify, np.int32(w0), np.int32(h0)), 'dis_densify', local=self.group,
                      swap=True)
            return
        steps.add(self._densify, (w, h), densify, 'dis_densify', swap=True)
        if finest > 0:
            self._prolong(prev, finest, 0, steps)

    def _search_level(self, prev: DevicePyramid, cur: DevicePyramid, level: int, coarse: Shape,
                      named: dict[str, cl.Buffer], steps: _Steps,
                      settings: FlowSettings) -> None:
        """
        Run both search passes, then densify the patches' flow into the field.

        The first pass starts from the field of the coarser level (shape ``coarse``, (0, 0) on
        the coarsest), prolonged as it reads it.
        """
        h, w = prev.shapes[level]
        patch, stride = settings.dis_patch_size, settings.dis_patch_stride
        ws, hs = grid_count(w, patch, stride), grid_count(h, patch, stride)
        sparse = named['sparse_a'], named['sparse_b']
        wh = (np.int32(w), np.int32(h))
        grid = (np.int32(ws), np.int32(hs), np.int32(stride))
        images = (prev.levels[level], prev.gradient(level), cur.levels[level])
        passes = settings.dis_iterations // 2
        coarse_field = (steps.current, np.int32(coarse[1]), np.int32(coarse[0]))
        if self.formulation == 'gpu' and both_fit(self.runtime.limits, self._search_both, patch):
            # both passes in one launch, into sparse[1]
            blocks = (-(-ws // SEARCH_BLOCK), -(-hs // SEARCH_BLOCK))
            steps.add(self._search_both, (patch * blocks[0], SEARCH_BOTH * blocks[1]),
                      (*images, *wh, *coarse_field, sparse[1], *grid, np.int32(passes)),
                      'dis_search', local=(patch, SEARCH_BOTH))
        else:
            slots = search_slots(self.runtime.limits, patch)
            for propagate, source, target in ((0, sparse[1], sparse[0]),
                                              (1, sparse[0], sparse[1])):
                args = (*images, *wh, *coarse_field, source, target, *grid, np.int32(passes),
                        np.int32(propagate))
                if self.formulation == 'cpu':
                    steps.add(self._search, (ws, hs), args, 'dis_search')
                else:
                    steps.add(self._search_group, (patch, -(-ws * hs // slots) * slots), args,
                              'dis_search', local=(patch, slots))
        densify = (prev.levels[level], cur.levels[level], *wh, sparse[1], *grid, steps.spare)
        if self.formulation == 'cpu':
            steps.add(self._densify_rows, (-(-w // LANES), -(-h // DENSIFY_ROWS)), densify,
                      'dis_densify', local=(1, 1), swap=True)
        elif settings.dis_refine_iterations == 0:  # else the GPU's solver densifies its areas
            steps.add(self._densify, (w, h), densify, 'dis_densify', swap=True)

    def _refine_level(self, prev: DevicePyramid, cur: DevicePyramid, level: int,
                      named: dict[str, cl.Buffer], steps: _Steps,
                      settings: FlowSettings) -> None:
        """
        Refine the field's flow at ``level`` variationally, into the field.

        On a GPU the field is the level's patch flows (sparse_b), which the solver densifies.
        """
        h, w = prev.shapes[level]
        wh = (np.int32(w), np.int32(h))
        weights = (np.float32(settings.dis_alpha / 2), np.float32(settings.dis_gamma / 2),
                   np.float32(settings.dis_delta / 2))
        iterations = settings.dis_refine_iterations
        if self.formulation == 'gpu':  # densification, terms and iterations in one launch
            patch, stride = settings.dis_patch_size, settings.dis_patch_stride
            grid = (np.int32(grid_count(w, patch, stride)), np.int32(grid_count(h, patch, stride)),
                    np.int32(stride))
            areas = (-(-w // CORE), -(-h // CORE))
            steps.add(self._solve_level, (areas[0] * self.group[0], areas[1] * self.group[1]),
                      (prev.levels[level], cur.levels[level], *wh, named['sparse_b'], *grid,
                       steps.spare, np.int32(iterations), *weights),
                      'dis_refine', local=self.group, swap=True)
            return
        terms, averaged = named['terms'], named['averaged']
        steps.add(self._warp, (w, h), (prev.levels[level], cur.levels[level], steps.current, *wh,
                                       averaged), 'dis_refine')
        steps.add(self._terms, (w, h), (averaged, *wh, terms), 'dis_refine')
        dflow = named['dflow_a'], named['dflow_b']
        for index in range(iterations):
            offset = solve_offset(index)
            tiles = (-(-(w + offset) // TILE), -(-(h + offset) // TILE))
            source, target = dflow[index % 2], dflow[1 - index % 2]
            last = index == iterations - 1
            flags = (np.int32(offset), np.int32(index == 0), np.int32(last))
            steps.add(self._solve_rows, tiles, (terms, steps.current, source, target, steps.spare,
                                                *wh, *flags, *weights),
                      'dis_refine', local=self.group, swap=last)


@dataclass(frozen=True)
class _Plan:
    """A frame's launches, valid while ``key`` and every buffer in ``buffers`` are the same."""

    key: tuple[object, ...]
    buffers: tuple[cl.Buffer, ...]
    steps: tuple[Callable[[], object], ...]
    result: cl.Buffer


class _Steps:
    """The launches of a plan, and the pair of flow buffers they alternate between."""

    def __init__(self, runtime: ClRuntime, current: cl.Buffer, spare: cl.Buffer):
        self.runtime = runtime
        self.current, self.spare = current, spare
        self.launches: list[Callable[[], object]] = []

    def add(self, kernel: Kernel, items: tuple[int, ...], args: tuple[object, ...], stage: str,
            local: tuple[int, int] | None = None, swap: bool = False) -> None:
        """Bind a launch; with ``swap`` it wrote the spare buffer, which becomes the current."""
        self.launches.append(kernel.bind(items, args, stage, local))
        if swap:
            self.current, self.spare = self.spare, self.current

    def zero(self, shape: Shape) -> None:
        self.launches.append(functools.partial(self.runtime.fill, self.current, np.float32(0),
                                               'init', shape[0] * shape[1] * 8))
