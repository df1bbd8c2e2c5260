"""Dense pyramidal iterative Lucas-Kanade (Bouguet's scheme, evaluated at every pixel).

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

Per frame: one launch per level, with the argument tuples of every level prepared once per
frame size, pyramid slot and settings (host time, not the device, bounds small frames on a GPU).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pyopencl as cl

from cl_vision_nodes.flow.coarse_to_fine import used_levels
from cl_vision_nodes.flow.device import PROGRAM, f32, i32
from cl_vision_nodes.flow.pyramid import DevicePyramid
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.runtime import ClRuntime, Defines

TILE_W = 32
"""Tile and work-group width of lk_level (LK_TILE_W in flow.cl)."""
GROUP = (TILE_W, 8)
"""Work-group size of lk_level (LK_TILE_W x LK_GROUP_H)."""
STAGE = 'lk'
"""Profiler stage of the lk_level launches."""


LOCAL_LIMIT = 47 * 1024
"""Local memory lk_level may use: below the 48 KiB of NVIDIA's OpenCL (some drivers keep a
little of a group's local memory for themselves)."""


def local_bytes(radius: int, height: int) -> int:
    """Local memory of lk_level: span flow (float2), the terms (float2, rows padded to whole
    float4s) and their row pass (float2)."""
    span_w, span_h = TILE_W + 2 * radius, height + 2 * radius
    return 8 * (span_w * span_h + -(-span_w // 4) * 4 * span_h + span_h * TILE_W)


def tile_height(radius: int) -> int:
    """Tile height for a window radius: the tallest of 32, 16, 8 rows whose local arrays fit
    LOCAL_LIMIT (tall tiles keep the halo overhead low; radius 7, the default: 32 rows, 45 KiB)."""
    return next(h for h in (32, 16, 8) if local_bytes(radius, h) <= LOCAL_LIMIT)


def tile_offset(level: int, radius: int) -> int:
    """Tile origin shift of a level (origins at k * tile - offset on both axes): 0 and half a
    tile height alternate, so tile edges move between levels (lk_level needs offset < the tile
    height: every tile holds image pixels)."""
    return (level % 2) * (tile_height(radius) // 2)


_DEFINES: dict[int, Defines] = {}


def level_defines(radius: int) -> Defines:
    """Build defines of lk_level for a window radius; one constant object per radius (the
    runtime's kernel lookup is keyed by its identity)."""
    found = _DEFINES.get(radius)
    if found is None:
        found = _DEFINES[radius] = MappingProxyType(
            {'LK_RADIUS': radius, 'LK_TILE_H': tile_height(radius)})
    return found


def level_items(shape: tuple[int, int], radius: int, offset: int) -> tuple[int, int]:
    """Global size of lk_level over a (height, width) level: whole work-groups covering the
    tiles from origin -offset."""
    h, w = shape
    groups_x = -(-(w + offset) // TILE_W)
    groups_y = -(-(h + offset) // tile_height(radius))
    return groups_x * GROUP[0], groups_y * GROUP[1]


def window_taps(size: int, sigma: float) -> np.ndarray:
    """1-D Gaussian taps of an odd ``size``, normalised to sum 1 (so the 2-D window sums to 1
    and ``min_eigenvalue`` does not depend on the window size)."""
    offsets = np.arange(size, dtype=np.float64) - size // 2
    taps = np.exp(-0.5 * (offsets / sigma) ** 2)
    return (taps / taps.sum()).astype(np.float32)


@dataclass(frozen=True)
class _Plan:
    """The launches of one frame: valid while ``key`` and every buffer in ``buffers`` are the
    same (``is``) as the runtime and pyramids hand out."""

    key: tuple[Any, ...]
    buffers: tuple[cl.Buffer, ...]
    defines: Defines
    launches: tuple[tuple[tuple[int, int], tuple[Any, ...]], ...]
    result: cl.Buffer


class LucasKanade:
    """Runs lk between two device pyramids; buffers are sized for level 0 and reused."""

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime
        self._taps_key: tuple[int, float] | None = None
        self._taps: cl.Buffer | None = None
        self._plans: dict[int, _Plan] = {}

    def _window(self, settings: FlowSettings) -> cl.Buffer:
        """The taps buffer, uploaded again only when window_size or window_sigma change."""
        key = (settings.window_size, settings.window_sigma)
        if key != self._taps_key or self._taps is None:
            taps = window_taps(*key)
            self._taps = self.runtime.buffer('lk_taps', taps.nbytes, cl.mem_flags.READ_ONLY)
            cl.enqueue_copy(self.runtime.queue, self._taps, taps)
            self._taps_key = key
        return self._taps

    def _buffers(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings,
                 levels: int) -> tuple[cl.Buffer, ...]:
        """Every buffer the launches use: frame levels, flow ping-pong pair (shared with hs),
        window taps."""
        count = prev.shapes[0][0] * prev.shapes[0][1]
        rt = self.runtime
        return (*prev.levels[:levels], *cur.levels[:levels], rt.buffer('flow_a', count * 8),
                rt.buffer('flow_b', count * 8), self._window(settings))

    def _plan(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> _Plan:
        levels = used_levels(prev, cur, settings.pyramid_levels)
        key = (tuple(prev.shapes[:levels]), settings.window_size, settings.window_sigma,
               settings.lk_iterations, settings.min_eigenvalue)
        buffers = self._buffers(prev, cur, settings, levels)
        plan = self._plans.get(prev.slot)
        if (plan is not None and plan.key == key
                and all(a is b for a, b in zip(plan.buffers, buffers))):
            return plan
        radius = settings.window_size // 2
        flows, taps = buffers[2 * levels:2 * levels + 2], buffers[-1]
        launches = []
        for level in reversed(range(levels)):
            h, w = prev.shapes[level]
            if level < levels - 1:
                (ch, cw), coarse = prev.shapes[level + 1], flows[(level + 1) % 2]
            else:
                (ch, cw), coarse = (0, 0), flows[(level + 1) % 2]  # not read: cw = 0
            offset = tile_offset(level, radius)
            args = (prev.levels[level], cur.levels[level], i32(w), i32(h), coarse, i32(cw),
                    i32(ch), flows[level % 2], taps, i32(settings.lk_iterations), i32(offset),
                    f32(settings.min_eigenvalue), i32(level == 0))
            launches.append((level_items((h, w), radius, offset), args))
        plan = _Plan(key, buffers, level_defines(radius), tuple(launches), flows[0])
        self._plans[prev.slot] = plan
        return plan

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2, NaN where not confident)."""
        plan = self._plan(prev, cur, settings)
        # Hand the frame's upload and pyramid to the device now (some drivers hold enqueued
        # commands until a flush), so it works on them while the levels are enqueued.
        self.runtime.queue.flush()
        launch, defines = self.runtime.launch, plan.defines
        for items, args in plan.launches:
            launch(PROGRAM, 'lk_level', items, GROUP, args, STAGE, defines)
        return plan.result
