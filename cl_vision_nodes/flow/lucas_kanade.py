"""Dense pyramidal iterative Lucas-Kanade (Bouguet's scheme, evaluated at every pixel).

Per level, coarse to fine: the windowed structure tensor of frame 0's 5-point gradient (fixed
per level, so computed once), then ``lk_iterations`` Gauss-Newton steps (one launch each, see
``lk_step``), each warping frame 1 bilinearly by the current flow. Dense formulation (why: the
per-pixel window warp becomes a separable filter): every window pixel is warped by its own
current flow and the difference to the centre pixel's flow is accounted for to first order, so
each step is exact LK where the flow is smooth and a stable structure-weighted average where it
is not. Pixels whose tensor's smaller eigenvalue is below ``min_eigenvalue`` are NaN in the
output; a small damping keeps them at the prolonged estimate on coarse levels.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from cl_vision_nodes.flow.coarse_to_fine import FlowField, used_levels
from cl_vision_nodes.flow.device import f32, i32, launch
from cl_vision_nodes.flow.pyramid import DevicePyramid
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.runtime import ClRuntime

TILE = 16
"""Work-group side of lk_step (LK_TILE in flow.cl); its local tiles allow radii up to 15."""


def window_taps(size: int, sigma: float) -> np.ndarray:
    """1-D Gaussian taps of an odd ``size``, normalised to sum 1 (so the 2-D window sums to 1
    and ``min_eigenvalue`` does not depend on the window size)."""
    offsets = np.arange(size, dtype=np.float64) - size // 2
    taps = np.exp(-0.5 * (offsets / sigma) ** 2)
    return (taps / taps.sum()).astype(np.float32)


class LucasKanade:
    """Runs lk between two device pyramids; buffers are sized for level 0 and reused."""

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime
        self._taps_key: tuple[int, float] | None = None
        self._taps: cl.Buffer | None = None

    def _window(self, settings: FlowSettings) -> cl.Buffer:
        """The taps buffer, uploaded again only when window_size or window_sigma change."""
        key = (settings.window_size, settings.window_sigma)
        if key != self._taps_key or self._taps is None:
            taps = window_taps(*key)
            self._taps = self.runtime.buffer('lk_taps', taps.nbytes, cl.mem_flags.READ_ONLY)
            cl.enqueue_copy(self.runtime.queue, self._taps, taps)
            self._taps_key = key
        return self._taps

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2, NaN where not confident)."""
        rt = self.runtime
        taps, radius = self._window(settings), i32(settings.window_size // 2)
        count = prev.shapes[0][0] * prev.shapes[0][1]
        rows = rt.buffer('lk_rows', count * 16)
        tensor = rt.buffer('lk_tensor', count * 16)
        levels = used_levels(prev, cur, settings.pyramid_levels)
        field = FlowField(rt, prev.shapes[0])
        field.zero(prev.shapes[levels - 1])
        for level in reversed(range(levels)):
            h, w = shape = prev.shapes[level]
            if level < levels - 1:
                field.upsample(prev.shapes[level + 1], shape)
            size, wh = (w, h), (i32(w), i32(h))
            g0 = prev.gradient(level)
            launch(rt, 'lk_tensor_rows', size, (g0, *wh, taps, radius, rows), 'lk_tensor')
            launch(rt, 'lk_tensor_cols', size, (rows, *wh, taps, radius, tensor), 'lk_tensor')
            for step in range(settings.lk_iterations):
                final = i32(level == 0 and step == settings.lk_iterations - 1)
                launch(rt, 'lk_step', size,
                       (prev.levels[level], g0, cur.levels[level], tensor, field.current,
                        field.spare, *wh, taps, radius, f32(settings.min_eigenvalue), final),
                       'lk_solve', local=(TILE, TILE))
                field.swap()
        return field.current
