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
Dense pyramidal iterative Lucas-Kanade (Bouguet's scheme, evaluated at every pixel).

Per level, coarse to fine, one launch of ``lk_level``: prolong the coarser level's flow, form
the windowed structure tensor of frame 0's 5-point gradient, then ``lk_iterations``
Gauss-Newton steps, each warping frame 1 bilinearly by the current flow. Dense formulation
(why: the per-pixel window warp becomes a separable filter): every window pixel is warped by its
own current flow and the difference to the centre pixel's flow is accounted for to first order,
so each step is exact LK where the flow is smooth and a stable structure-weighted average where
it is not. A work-group iterates its 32-pixel-wide tile in local memory; the window halo of
other tiles keeps the level's start flow (block Jacobi), and the tile origin moves between
levels so tile edges do not stack up. Pixels whose tensor's smaller eigenvalue is below
``min_eigenvalue`` are NaN in the output; a small damping keeps them at the prolonged estimate
on coarse levels.

Tile and work-group sizes come from the device (``LkTiling``): tiles as tall as the device's
local memory allows (at most 48 KiB is used, so devices with that much or more, NVIDIA, AMD,
Intel and PoCL, tile alike), the
work-group as many rows of the tile as its work-group limit allows; a lower group gives each
work-item more rows of the same tile, so the result does not change.

Per frame: one pre-bound launch per level, prepared once per frame size, pyramid slot and
settings (host time, not the device, bounds small frames on a GPU).

Formulations (``DeviceLimits.formulation``): 'gpu' runs lk_level, 'cpu' lk_level_cpu (built with
LK_CPU): the same tiles and sums, a work-item per tile walking it without barriers (PoCL).
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.flow.coarse_to_fine import flow_buffers, used_levels
from cl_vision_nodes.flow.pyramid import DevicePyramid, Shape
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.kernel import BoundLaunch
from cl_vision_nodes.opencl.limits import DeviceLimits, FORMULATIONS
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/lucas_kanade.cl')
TILE_W = 32
"""Tile and work-group width of lk_level (LK_TILE_W): one tile column per work-item; a multiple
of 4 (the window's row pass reads float4s)."""
GROUP_H = 8
"""Work-group height of lk_level where the device allows TILE_W x GROUP_H = 256 work-items."""
TILE_HEIGHTS = (32, 16, 8)
"""Tile heights, tallest (least halo overhead) first; powers of two >= GROUP_H, so every
work-group height divides them."""
LOCAL_CAP = 48 * 1024
"""Local memory per work-group at most used (NVIDIA's OpenCL size): with this cap the tiles, and
so the results, are the same on every device with at least as much (PoCL has 1 MiB)."""
LOCAL_RESERVE = 1024
"""Local memory left to the driver (some keep a little of a group's for themselves)."""
STAGE = 'lk'
"""Profiler stage of the lk_level launches."""


def local_budget(limits: DeviceLimits) -> int:
    """Local memory lk_level may use on a device: its own, at most LOCAL_CAP, less the reserve."""
    return min(limits.local_mem, LOCAL_CAP) - LOCAL_RESERVE


def local_bytes(radius: int, height: int) -> int:
    """
    Local memory of lk_level in bytes.

    Span flow (float2), the terms (float2, rows padded to whole float4s) and their row pass
    (float2).
    """
    span_w, span_h = TILE_W + 2 * radius, height + 2 * radius
    return 8 * (span_w * span_h + -(-span_w // 4) * 4 * span_h + span_h * TILE_W)


@dataclass(frozen=True)
class LkTiling:
    """
    Tiles and work-groups of lk_level for one window radius.

    Its build defines, global sizes and tile offsets.
    """

    radius: int
    tile_h: int
    group_h: int

    @classmethod
    def of(cls, limits: DeviceLimits, radius: int) -> LkTiling:
        """
        Pick the tallest tile and work-group the device allows; ParameterError if no tile fits.

        The tile is the tallest whose local arrays fit the device (radius 7, the default: 32 rows,
        45 KiB).
        """
        budget = local_budget(limits)
        fitting = [h for h in TILE_HEIGHTS if local_bytes(radius, h) <= budget]
        if not fitting:
            largest = max((r for r in range(radius) if local_bytes(r, TILE_HEIGHTS[-1]) <= budget),
                          default=0)
            raise ParameterError(
                f'window_size: {2 * radius + 1} needs {local_bytes(radius, TILE_HEIGHTS[-1])} '
                f'bytes of local memory for lk, this device allows {budget}; the largest '
                f'window it runs is {2 * largest + 1}')
        return cls(radius, fitting[0], limits.group_2d((TILE_W, GROUP_H), min_width=TILE_W)[1])

    @property
    def group(self) -> tuple[int, int]:
        return TILE_W, self.group_h

    @property
    def defines(self) -> dict[str, int]:
        return {'LK_RADIUS': self.radius, 'LK_TILE_W': TILE_W, 'LK_TILE_H': self.tile_h,
                'LK_GROUP_H': self.group_h}

    def offset(self, level: int) -> int:
        """
        Tile origin shift of a level (origins at k * tile - offset on both axes).

        0 and half a tile height alternate, so tile edges move between levels (lk_level needs
        offset < the tile height: every tile holds image pixels).
        """
        return (level % 2) * (self.tile_h // 2)

    def tiles(self, shape: Shape, offset: int) -> tuple[int, int]:
        """Tiles of a (height, width) level from origin -offset: lk_level_cpu's global size."""
        h, w = shape
        return -(-(w + offset) // TILE_W), -(-(h + offset) // self.tile_h)

    def items(self, shape: Shape, offset: int) -> tuple[int, int]:
        """
        Global size of lk_level over a (height, width) level.

        Whole work-groups covering the tiles from origin -offset.
        """
        h, w = shape
        return -(-(w + offset) // TILE_W) * TILE_W, -(-(h + offset) // self.tile_h) * self.group_h


def program(runtime: ClRuntime, tiling: LkTiling, formulation: str = 'gpu') -> Program:
    """Build the lk kernel for one tiling: lk_level, and lk_level_cpu for formulation 'cpu'."""
    cpu = {'LK_CPU': 1} if formulation == 'cpu' else {}
    return runtime.program(KERNELS, {**tiling.defines, **cpu})


def window_taps(size: int, sigma: float) -> np.ndarray:
    """
    1-D Gaussian taps of an odd ``size``, normalised to sum 1.

    So the 2-D window sums to 1 and ``min_eigenvalue`` does not depend on the window size.
    """
    offsets = np.arange(size, dtype=np.float64) - size // 2
    taps = np.exp(-0.5 * (offsets / sigma) ** 2)
    return (taps / taps.sum()).astype(np.float32)


@dataclass(frozen=True)
class _Plan:
    """
    The launches of one frame.

    Valid while ``key`` and every buffer in ``buffers`` are the same (``is``) as the estimator's
    buffers and pyramids hand out.
    """

    key: tuple[object, ...]
    buffers: tuple[cl.Buffer, ...]
    launches: tuple[BoundLaunch, ...]
    result: cl.Buffer


class LucasKanade:
    """Runs lk between two device pyramids; buffers are sized for level 0 and reused."""

    reads_gradients = False  # its kernels form their own

    def __init__(self, runtime: ClRuntime, buffers: Buffers, settings: FlowSettings,
                 formulation: str | None = None):
        self.runtime = runtime
        self.buffers = buffers
        self.formulation = formulation or runtime.limits.formulation
        assert self.formulation in FORMULATIONS, self.formulation
        self._taps_key: tuple[int, float] | None = None
        self._taps: cl.Buffer | None = None
        self._plans: dict[int, _Plan] = {}
        self.configure(settings)

    def configure(self, settings: FlowSettings) -> None:
        """
        Build (or find among the runtime's programs) lk_level for the window size of ``settings``.

        At start and on a parameter change, never per frame. ParameterError (nothing changed) if
        the window does not fit the device's local memory.
        """
        tiling = LkTiling.of(self.runtime.limits, settings.window_size // 2)
        self._level = program(self.runtime, tiling, self.formulation).kernel(
            'lk_level' if self.formulation == 'gpu' else 'lk_level_cpu')
        self.tiling = tiling

    def _window(self, settings: FlowSettings) -> cl.Buffer:
        """Return the taps buffer, uploaded again only when window_size or window_sigma change."""
        key = (settings.window_size, settings.window_sigma)
        if key != self._taps_key or self._taps is None:
            taps = window_taps(*key)
            self._taps = self.buffers.get('lk_taps', taps.nbytes, cl.mem_flags.READ_ONLY)
            self.runtime.upload(self._taps, taps, 'upload_taps', blocking=True)
            self._taps_key = key
        return self._taps

    def _plan(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> _Plan:
        levels = used_levels(prev, cur, settings.pyramid_levels)
        key = (tuple(prev.shapes[:levels]), self.tiling, settings.window_sigma,
               settings.lk_iterations, settings.min_eigenvalue)
        flows = flow_buffers(self.runtime, self.buffers, prev.shapes[0], prev.slot)
        taps = self._window(settings)
        buffers = (*prev.levels[:levels], *cur.levels[:levels], *flows, taps)
        plan = self._plans.get(prev.slot)
        if (plan is not None and plan.key == key
                and all(a is b for a, b in zip(plan.buffers, buffers))):
            return plan
        launches = []
        for level in reversed(range(levels)):
            h, w = prev.shapes[level]
            # the coarser level's flow; on the coarsest level cw = 0 and it is not read
            ch, cw = prev.shapes[level + 1] if level < levels - 1 else (0, 0)
            offset = self.tiling.offset(level)
            args = (prev.levels[level], cur.levels[level], np.int32(w), np.int32(h),
                    flows[(level + 1) % 2], np.int32(cw), np.int32(ch), flows[level % 2], taps,
                    np.int32(settings.lk_iterations), np.int32(offset),
                    np.float32(settings.min_eigenvalue), np.int32(level == 0))
            if self.formulation == 'gpu':
                launch = self._level.bind(self.tiling.items((h, w), offset), args, STAGE,
                                          local=self.tiling.group)
            else:
                launch = self._level.bind(self.tiling.tiles((h, w), offset), args, STAGE,
                                          local=(1, 1))
            launches.append(launch)
        plan = _Plan(key, buffers, tuple(launches), flows[0])
        self._plans[prev.slot] = plan
        return plan

    def levels(self, shapes: list[Shape], settings: FlowSettings) -> range:
        """Pyramid levels read: the first ``pyramid_levels``."""
        return range(settings.pyramid_levels)

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2, NaN where not confident)."""
        plan = self._plan(prev, cur, settings)
        # Hand the frame's upload and pyramid to the device now (some drivers hold enqueued
        # commands until a flush), so it works on them while the levels are enqueued.
        self.runtime.queue.flush()
        for launch in plan.launches:
            launch()
        return plan.result
