"""Coarse-to-fine robust Horn-Schunck with warping (seed 000 structure, Sun/Roth/Black details).

Per level, coarse to fine, ``warps`` times: warp frame 1 (bicubic) and its gradient by the
current flow u and linearise (5-point gradients averaged over both frames, It = I1(x+u) - I0),
solve for the increment du with up to ``iterations`` red-black SOR sweeps on the energy
``sum rho_D(It + grad I . du) + alpha^2 sum rho_S(neighbour differences of u + du)`` (Charbonnier
penalties, weights lagged per sweep; the smoothness acts on u + du, not du alone), then
u <- median5x5(u + du). One launch runs SWEEPS_PER_LAUNCH sweeps on 16x16 tiles in local memory
(launches, not arithmetic, bound small levels on a GPU). Sweeps stop early on the device once a
launch changed no pixel by more than ``tolerance``: the host enqueues every launch without
waiting and never reads anything back.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from cl_vision_nodes.flow.coarse_to_fine import FlowField, used_levels
from cl_vision_nodes.flow.device import f32, i32, launch
from cl_vision_nodes.flow.pyramid import DevicePyramid
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.runtime import ClRuntime

FLAG_SLOTS = 3
"""Convergence slots of hs_sor, set by hs_warp at the start of every warping step."""
SWEEPS_PER_LAUNCH = 8  # named in the description of the tolerance parameter
TILE = 16
"""Work-group side of hs_sor (HS_TILE in flow.cl)."""


def sor_slots(launch_index: int) -> tuple[np.int32, np.int32, np.int32]:
    """(read, write, reset) convergence slots of the ``launch_index``-th hs_sor launch."""
    return i32((launch_index + 2) % 3), i32(launch_index % 3), i32((launch_index + 1) % 3)


def tile_offset(launch_index: int) -> int:
    """Alternate tilings, so no pixel stays on a tile edge for two launches in a row."""
    return (launch_index % 2) * (TILE // 2)


class HornSchunck:
    """Runs hs between two device pyramids; buffers are sized for level 0 and reused."""

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2)."""
        rt = self.runtime
        count = prev.shapes[0][0] * prev.shapes[0][1]
        terms = rt.buffer('hs_terms', count * 16)
        dflow = [rt.buffer('hs_dflow_a', count * 8), rt.buffer('hs_dflow_b', count * 8)]
        flags = rt.buffer('hs_flags', FLAG_SLOTS * 4)
        solver = (f32(settings.alpha ** 2), f32(settings.sor_omega),
                  f32(settings.data_epsilon ** -2), f32(settings.smooth_epsilon ** -2),
                  f32(settings.tolerance))
        levels = used_levels(prev, cur, settings.pyramid_levels)
        field = FlowField(rt, prev.shapes[0])
        field.zero(prev.shapes[levels - 1])
        for level in reversed(range(levels)):
            h, w = shape = prev.shapes[level]
            if level < levels - 1:
                field.upsample(prev.shapes[level + 1], shape)
            wh = (i32(w), i32(h))
            for _ in range(settings.warps):
                launch(rt, 'hs_warp', (w, h),
                       (prev.levels[level], prev.gradient(level), cur.levels[level],
                        cur.gradient(level), field.current, *wh, terms, flags), 'warp')
                launches = -(-settings.iterations // SWEEPS_PER_LAUNCH)
                for index in range(launches):
                    done = index * SWEEPS_PER_LAUNCH
                    sweeps = min(SWEEPS_PER_LAUNCH, settings.iterations - done)
                    offset = tile_offset(index)
                    launch(rt, 'hs_sor', (w + offset, h + offset),
                           (terms, field.current, dflow[index % 2], dflow[1 - index % 2], flags,
                            *wh, i32(index == 0), i32(offset), i32(sweeps), *sor_slots(index),
                            *solver), 'hs_iterate', local=(TILE, TILE))
                launch(rt, 'hs_update', (w, h),
                       (field.current, dflow[launches % 2], *wh, i32(settings.median_filter),
                        field.spare),
                       'median')
                field.swap()
        return field.current
