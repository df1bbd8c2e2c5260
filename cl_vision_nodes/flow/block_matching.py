"""Full-search block matching (seed 001) with deterministic ties and optional sub-pixel fit.

SAD on 8-bit quantised intensities over ``block_size`` blocks, every displacement within
``search_radius``; ties go to the smallest |d| (so textureless blocks report no motion), then
to raster order; candidates reaching outside frame 1 are excluded. Output is dense: every
pixel gets its block's vector. Block and radius are compile-time constants (fully sized local
tiles), so a new combination builds the program once and is cached by the runtime.
"""
from __future__ import annotations

import pyopencl as cl

from cl_vision_nodes.flow.device import i32, launch
from cl_vision_nodes.flow.pyramid import DevicePyramid
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.runtime import ClRuntime

WORK_GROUP = 64
"""Work-items per block: a multiple of every common SIMD width (32 NVIDIA, 64 AMD, 8-16 CPU)."""


class BlockMatcher:
    """Runs bm on level 0 of two device pyramids into the ``flow_a`` buffer."""

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        h, w = prev.shapes[0]
        block = settings.block_size
        flow = self.runtime.buffer('flow_a', h * w * 8)
        defines = {'BM_BLOCK': block, 'BM_RADIUS': settings.search_radius,
                   'BM_LOCAL': WORK_GROUP}
        blocks = (-(-w // block), -(-h // block))
        launch(self.runtime, 'bm_search', (blocks[0] * WORK_GROUP, blocks[1]),
               (prev.levels[0], cur.levels[0], i32(w), i32(h), i32(settings.subpixel), flow),
               'bm_search', defines=defines, local=(WORK_GROUP, 1))
        return flow
