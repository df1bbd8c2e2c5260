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

"""What pyramidal lk and hs share: how many levels to use and the flow buffers between levels."""
from __future__ import annotations

from cl_vision_nodes.flow.pyramid import DevicePyramid, Shape
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.kernel import Kernel
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/coarse_to_fine.cl')
VECTOR_FACTORS = (2, 4, 8)
"""Prolongation factors with a kernel of their own (flow_upsample_by<factor>: row vectors)."""


def program(runtime: ClRuntime) -> Program:
    """Build the prolongation kernels (``upsample_kernel``): no build defines."""
    return runtime.program(KERNELS)


def upsample_kernel(runtime: ClRuntime, factor: int) -> Kernel:
    """
    Return the kernel that prolongs by ``factor``, for ``upsample_launch``'s arguments.

    flow_upsample_by2, 4 or 8 store a fine row as one vector; other factors take the generic
    flow_upsample. The same values bit for bit.
    """
    name = f'flow_upsample_by{factor}' if factor in VECTOR_FACTORS else 'flow_upsample'
    return program(runtime).kernel(name)


def used_levels(prev: DevicePyramid, cur: DevicePyramid, requested: int) -> int:
    return max(1, min(requested, len(prev.shapes), len(cur.shapes)))


def flow_buffers(runtime: ClRuntime, buffers: Buffers, finest: Shape,
                 slot: int) -> tuple[cl.Buffer, cl.Buffer]:
    """
    Return the estimator's pair of float2 flow buffers for pyramid slot ``slot``, level 0's size.

    lk, hs and dis ping-pong between them level by level, bm writes the first; each method's
    result is one of them. Where flows are read by mapping them (``ClRuntime.start_read``),
    each slot has a pair: consecutive frames have pyramids of alternate slots, so a frame's
    kernels never write the previous frame's result, still mapped while a node serializes it.
    Elsewhere one pair serves every frame: a frame's read into a pinned array is queued behind
    its kernels and the next frame's kernels behind the read.
    """
    nbytes = finest[0] * finest[1] * 8
    own = slot if runtime.limits.host_memory else ''
    return buffers.get(f'flow_a{own}', nbytes), buffers.get(f'flow_b{own}', nbytes)


class FlowField:
    """Ping-pong pair of flow buffers (``flow_buffers``), reused by every level of one frame."""

    def __init__(self, runtime: ClRuntime, upsample: Kernel,
                 buffers: tuple[cl.Buffer, cl.Buffer]):
        self.runtime = runtime
        self.buffers = buffers
        self.index = 0
        self._upsample = upsample

    @property
    def current(self) -> cl.Buffer:
        return self.buffers[self.index]

    @property
    def spare(self) -> cl.Buffer:
        return self.buffers[1 - self.index]

    def swap(self) -> None:
        self.index = 1 - self.index

    def zero(self, shape: Shape) -> None:
        self.runtime.fill(self.current, np.float32(0), 'init', nbytes=shape[0] * shape[1] * 8)

    def upsample(self, coarse: Shape, fine: Shape) -> None:
        """Prolong the current (coarse) flow to ``fine`` into the spare buffer, then swap."""
        self._upsample(*upsample_launch(self.current, coarse, self.spare, fine, 2), 'upsample')
        self.swap()


def upsample_launch(coarse: cl.Buffer, coarse_shape: Shape, fine: cl.Buffer, fine_shape: Shape,
                    factor: int) -> tuple[tuple[int, int], tuple[object, ...]]:
    """
    Return the global size and arguments of ``upsample_kernel(runtime, factor)``.

    A work-item per coarse pixel (it writes factor x factor fine pixels).
    """
    (ch, cw), (fh, fw) = coarse_shape, fine_shape
    return (cw, ch), (coarse, np.int32(cw), np.int32(ch), fine, np.int32(fw), np.int32(fh),
                      np.int32(factor))
