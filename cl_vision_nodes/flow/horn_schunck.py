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
Coarse-to-fine robust Horn-Schunck with warping (seed 000 structure, Sun/Roth/Black details).

Per level, coarse to fine, ``warps`` times: warp frame 1 (bicubic) and its gradient by the
current flow u and linearise (5-point gradients averaged over both frames, It = I1(x+u) - I0),
solve for the increment du with up to ``iterations`` red-black SOR sweeps on the energy
``sum rho_D(It + grad I . du) + alpha^2 sum rho_S(neighbour differences of u + du)`` (Charbonnier
penalties, weights lagged per sweep; the smoothness acts on u + du, not du alone), then
u <- median5x5(u + du). One launch runs SWEEPS_PER_LAUNCH sweeps on TILE x TILE tiles in local
memory (launches, not arithmetic, bound small levels on a GPU). Sweeps stop early on the device
once a launch changed no pixel by more than ``tolerance``: the host enqueues every launch
without waiting and never reads anything back.

Formulations (``DeviceLimits.formulation``): 'gpu' runs hs_sor, a work-group per tile; 'cpu'
runs hs_sor_cpu, the same launches with one work-item walking a whole tile in float8 vectors
without barriers (PoCL), which gives hs_sor's result to float rounding, hs_warp_cpu and
hs_update_cpu, a work-item per row (the same numbers).
"""
from __future__ import annotations

from cl_vision_nodes.flow import coarse_to_fine
from cl_vision_nodes.flow.coarse_to_fine import flow_buffers, FlowField, used_levels
from cl_vision_nodes.flow.pyramid import DevicePyramid, Shape
from cl_vision_nodes.flow.schema import FlowSettings
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.limits import DeviceLimits, FORMULATIONS
from cl_vision_nodes.opencl.programs import Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('flow/common.cl', 'flow/horn_schunck.cl')
FLAG_SLOTS = 3
"""Convergence slots of hs_sor, set by hs_warp at the start of every warping step."""
SWEEPS_PER_LAUNCH = 8  # named in the description of the tolerance parameter
TILE = 16
"""Side of the hs_sor tiles (HS_TILE). The tiles shape the result (block Gauss-Seidel), the
work-group does not: a TILE x group height group gives each work-item TILE / height rows."""


def sor_group(limits: DeviceLimits) -> tuple[int, int]:
    """Work-group of hs_sor: TILE wide, as many rows (a power of two) as the device allows."""
    return limits.group_2d((TILE, TILE), min_width=TILE)


def program(runtime: ClRuntime, group: tuple[int, int], formulation: str = 'gpu') -> Program:
    """
    Build the hs kernels (hs_warp, hs_sor, hs_update) for hs_sor work-groups of ``group``.

    For formulation 'cpu' also hs_warp_cpu, hs_sor_cpu and hs_update_cpu (HS_CPU): a GPU build
    compiles the GPU kernels alone.
    """
    cpu = {'HS_CPU': 1} if formulation == 'cpu' else {}
    return runtime.program(KERNELS, {'HS_TILE': TILE, 'HS_GROUP_H': group[1], **cpu})


def sor_items(shape: Shape, offset: int, group: tuple[int, int]) -> tuple[int, int]:
    """
    Global size of hs_sor over a (height, width) level.

    One work-group per tile, tiles from origin -offset.
    """
    h, w = shape
    return -(-(w + offset) // TILE) * group[0], -(-(h + offset) // TILE) * group[1]


def cpu_sor_items(shape: Shape, offset: int) -> tuple[int, int]:
    """Global size of hs_sor_cpu over a (height, width) level: one work-item per tile."""
    h, w = shape
    return -(-(w + offset) // TILE), -(-(h + offset) // TILE)


def sor_slots(launch_index: int) -> tuple[np.int32, np.int32, np.int32]:
    """(read, write, reset) convergence slots of the ``launch_index``-th hs_sor launch."""
    return (np.int32((launch_index + 2) % 3), np.int32(launch_index % 3),
            np.int32((launch_index + 1) % 3))


def tile_offset(launch_index: int) -> int:
    """Alternate tilings, so no pixel stays on a tile edge for two launches in a row."""
    return (launch_index % 2) * (TILE // 2)


class HornSchunck:
    """Runs hs between two device pyramids; buffers are sized for level 0 and reused."""

    reads_gradients = True

    def __init__(self, runtime: ClRuntime, buffers: Buffers, formulation: str | None = None):
        self.runtime = runtime
        self.buffers = buffers
        self.formulation = formulation or runtime.limits.formulation
        assert self.formulation in FORMULATIONS, self.formulation
        self.group = sor_group(runtime.limits)
        built = program(runtime, self.group, self.formulation)
        self._warp = built.kernel('hs_warp' if self.formulation == 'gpu' else 'hs_warp_cpu')
        self._sor = built.kernel('hs_sor' if self.formulation == 'gpu' else 'hs_sor_cpu')
        self._update = built.kernel('hs_update' if self.formulation == 'gpu' else 'hs_update_cpu')
        self._upsample = coarse_to_fine.upsample_kernel(runtime, 2)

    def configure(self, settings: FlowSettings) -> None:
        """Nothing to rebuild: no setting of hs is a build define."""

    def levels(self, shapes: list[Shape], settings: FlowSettings) -> range:
        """Pyramid levels read: the first ``pyramid_levels``."""
        return range(settings.pyramid_levels)

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Flow from ``prev`` to ``cur`` at level 0 (float2)."""
        count = prev.shapes[0][0] * prev.shapes[0][1]
        terms = self.buffers.get('hs_terms', count * 16)
        dflow = [self.buffers.get('hs_dflow_a', count * 8),
                 self.buffers.get('hs_dflow_b', count * 8)]
        flags = self.buffers.get('hs_flags', FLAG_SLOTS * 4)
        solver = (np.float32(settings.alpha ** 2), np.float32(settings.sor_omega),
                  np.float32(settings.data_epsilon ** -2),
                  np.float32(settings.smooth_epsilon ** -2), np.float32(settings.tolerance))
        levels = used_levels(prev, cur, settings.pyramid_levels)
        pair = flow_buffers(self.runtime, self.buffers, prev.shapes[0], prev.slot)
        field = FlowField(self.runtime, self._upsample, pair)
        field.zero(prev.shapes[levels - 1])
        for level in reversed(range(levels)):
            h, w = shape = prev.shapes[level]
            if level < levels - 1:
                field.upsample(prev.shapes[level + 1], shape)
            wh = (np.int32(w), np.int32(h))
            for _ in range(settings.warps):
                self._linearise(shape, (prev.levels[level], prev.gradient(level),
                                        cur.levels[level], cur.gradient(level), field.current,
                                        *wh, terms, flags))
                launches = -(-settings.iterations // SWEEPS_PER_LAUNCH)
                for index in range(launches):
                    done = index * SWEEPS_PER_LAUNCH
                    sweeps = min(SWEEPS_PER_LAUNCH, settings.iterations - done)
                    offset = tile_offset(index)
                    self._sweeps(shape, offset, (
                        terms, field.current, dflow[index % 2], dflow[1 - index % 2], flags,
                        *wh, np.int32(index == 0), np.int32(offset), np.int32(sweeps),
                        *sor_slots(index), *solver))
                self._median(shape, (field.current, dflow[launches % 2], *wh,
                                     np.int32(settings.median_filter), field.spare))
                field.swap()
        return field.current

    def _linearise(self, shape: Shape, args: tuple) -> None:
        """hs_warp: a work-item per pixel (gpu) or per row (cpu)."""
        h, w = shape
        if self.formulation == 'gpu':
            self._warp((w, h), args, 'warp')
        else:
            self._warp((h,), args, 'warp', local=(1,))

    def _sweeps(self, shape: Shape, offset: int, args: tuple) -> None:
        """One launch of hs_sor (a group per tile) or hs_sor_cpu (a work-item per tile)."""
        if self.formulation == 'gpu':
            self._sor(sor_items(shape, offset, self.group), args, 'hs_iterate', local=self.group)
        else:
            self._sor(cpu_sor_items(shape, offset), args, 'hs_iterate', local=(1, 1))

    def _median(self, shape: Shape, args: tuple) -> None:
        """hs_update: a work-item per pixel (gpu) or per row (cpu)."""
        h, w = shape
        if self.formulation == 'gpu':
            self._update((w, h), args, 'median')
        else:
            self._update((h,), args, 'median', local=(1,))
