"""What pyramidal lk and hs share: how many levels to use and the flow buffers between levels."""
from __future__ import annotations

import pyopencl as cl

from cl_vision_nodes.flow.device import ZERO_F32, Shape, fill, i32, launch
from cl_vision_nodes.flow.pyramid import DevicePyramid
from cl_vision_nodes.opencl.runtime import ClRuntime


def used_levels(prev: DevicePyramid, cur: DevicePyramid, requested: int) -> int:
    return max(1, min(requested, len(prev.shapes), len(cur.shapes)))


class FlowField:
    """Ping-pong pair of float2 flow buffers sized for level 0, reused by every level."""

    def __init__(self, runtime: ClRuntime, finest: Shape):
        count = finest[0] * finest[1]
        self.runtime = runtime
        self.buffers = [runtime.buffer('flow_a', count * 8), runtime.buffer('flow_b', count * 8)]
        self.index = 0

    @property
    def current(self) -> cl.Buffer:
        return self.buffers[self.index]

    @property
    def spare(self) -> cl.Buffer:
        return self.buffers[1 - self.index]

    def swap(self) -> None:
        self.index = 1 - self.index

    def zero(self, shape: Shape) -> None:
        fill(self.runtime, self.current, ZERO_F32, shape[0] * shape[1] * 8, 'init')

    def upsample(self, coarse: Shape, fine: Shape) -> None:
        """Prolong the current (coarse) flow to ``fine`` into the spare buffer, then swap."""
        (ch, cw), (fh, fw) = coarse, fine
        launch(self.runtime, 'flow_upsample', (fw, fh),
               (self.current, i32(cw), i32(ch), self.spare, i32(fw), i32(fh)), 'upsample')
        self.swap()
