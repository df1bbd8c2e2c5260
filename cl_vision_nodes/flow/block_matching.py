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
Full-search block matching (seed 001) with deterministic ties and optional sub-pixel fit.

SAD on 8-bit quantised intensities over ``block_size`` blocks, every displacement within
``search_radius``; ties go to the smallest |d| (so textureless blocks report no motion), then
to raster order; candidates reaching outside frame 1 are excluded. Output is dense: every
pixel gets its block's vector. Block and radius are compile-time constants (fully sized local
tiles): a new combination builds the bm program alone, once, when it is configured; the
runtime keeps it by value, so switching back costs nothing. Formulations: 'gpu' runs bm_search
(a work-group per block, candidates spread over its work-items), 'cpu' bm_search_cpu (a
work-item per block, 8 pixels of a row at a time, no barriers): the same result.
"""
from __future__ import annotations

from cl_vision_nodes.flow.coarse_to_fine import flow_buffers
from cl_vision_nodes.flow.pyramid import DevicePyramid, Shape
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.limits import DeviceLimits, FORMULATIONS
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/block_matching.cl')
WORK_GROUP = 64
"""Work-items per block where the device allows it: a multiple of every common SIMD width (32
NVIDIA, 64 AMD, 8-16 CPU)."""


def group_size(limits: DeviceLimits) -> int:
    """
    Return the work-items per block on this device (BM_LOCAL); the result does not depend on it.

    WORK_GROUP or the largest power of two below it that the device allows.
    """
    return limits.group(WORK_GROUP)


def program(runtime: ClRuntime, block: int, radius: int, formulation: str = 'gpu') -> Program:
    """
    Build the bm program for one block size and search radius (sizes of its local tiles).

    bm_search, and for formulation 'cpu' bm_search_cpu too (BM_CPU).
    """
    cpu = {'BM_CPU': 1} if formulation == 'cpu' else {}
    return runtime.program(KERNELS, {'BM_BLOCK': block, 'BM_RADIUS': radius,
                                     'BM_LOCAL': group_size(runtime.limits), **cpu})


class BlockMatcher:
    """Runs bm on level 0 of two device pyramids into the estimator's first flow buffer."""

    reads_gradients = False

    def __init__(self, runtime: ClRuntime, buffers: Buffers, settings: FlowSettings,
                 formulation: str | None = None):
        self.runtime = runtime
        self.buffers = buffers
        self.formulation = formulation or runtime.limits.formulation
        assert self.formulation in FORMULATIONS, self.formulation
        self.local = group_size(runtime.limits)
        self.configure(settings)

    def configure(self, settings: FlowSettings) -> None:
        """
        Build (or find among the runtime's programs) bm_search for the settings' block and radius.

        That is the block size and search radius of ``settings``: at start and on a parameter
        change, never per frame.
        """
        self._search = program(self.runtime, settings.block_size, settings.search_radius,
                               self.formulation).kernel(
            'bm_search' if self.formulation == 'gpu' else 'bm_search_cpu')
        self._block = settings.block_size

    def levels(self, shapes: list[Shape], settings: FlowSettings) -> range:
        """Pyramid levels read: level 0 alone."""
        return range(1)

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        h, w = prev.shapes[0]
        flow = flow_buffers(self.runtime, self.buffers, (h, w), prev.slot)[0]
        self.search(prev.levels[0], cur.levels[0], (h, w), settings.subpixel, flow)
        return flow

    def search(self, i0: cl.Buffer, i1: cl.Buffer, shape: tuple[int, int], subpixel: bool,
               flow: cl.Buffer) -> None:
        """Enqueue the search from image ``i0`` to ``i1`` (float, ``shape``) into ``flow``."""
        h, w = shape
        blocks = (-(-w // self._block), -(-h // self._block))
        args = (i0, i1, np.int32(w), np.int32(h), np.int32(subpixel), flow)
        if self.formulation == 'gpu':
            self._search((blocks[0] * self.local, blocks[1]), args, 'bm_search',
                         local=(self.local, 1))
        else:  # groups of one: PoCL may otherwise pick a group of every block, whose
            # private arrays (held per work-item through the group) overflow its stack
            self._search(blocks, args, 'bm_search', local=(1, 1))
