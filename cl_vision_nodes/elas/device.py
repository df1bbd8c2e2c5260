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
Sizes, programs and work-group shapes shared by the ELAS device stages.

Each stage binds its kernel arguments once per (image size, parameters) (``Kernel.bind``) and
the per-frame path only enqueues: no allocation, no argument marshalling, no host round trip.
Every program is ``kernels/elas/common.cl`` plus the file of one stage module, built with the
host constants below as its only ``-D`` defines.
"""
from __future__ import annotations

from dataclasses import dataclass
import functools
from typing import Any, Callable, Mapping, Sequence

from cl_vision_nodes.elas.schema import ElasSettings
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.kernel import Kernel
from cl_vision_nodes.opencl.limits import DeviceLimits, MIN_GROUP
from cl_vision_nodes.opencl.programs import Defines, NO_DEFINES, Program
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

MAX_OWNED = 6
"""Triangles stored per point: each triangle by the vertex opposite its longest edge, whose
angle is at least 60 degrees, so at most 5 per point."""
GAP_GROUP = MIN_GROUP
"""Work-group size of elas_gap (its reqd_work_group_size): the smallest limit we support."""

MODULES: tuple[str, ...] = ('descriptor', 'support', 'triangulation', 'planes', 'grid',
                            'matching', 'postprocess')
"""The stage modules, each with its kernel file kernels/elas/<module>.cl."""
DEFINES: Mapping[str, Defines] = {
    'triangulation': {'MAX_OWNED': MAX_OWNED},
    'planes': {'MAX_OWNED': MAX_OWNED},
    'matching': {'MAX_OWNED': MAX_OWNED},
    'postprocess': {'GAP_GROUP': GAP_GROUP},
}

STAGES: tuple[str, ...] = (
    'descriptor', 'support matches', 'delaunay', 'disparity planes', 'grid', 'matching',
    'L/R check', 'remove small segments', 'gap interpolation', 'adaptive mean', 'median',
    'output')
"""Profiler stage names, libelas' timer rows in its order (plus the final conversion)."""

Step = Callable[[], cl.Event]
"""One enqueue of the per-frame path: a bound kernel launch or a buffer fill."""


def program_files(module: str) -> tuple[str, str]:
    """Return the kernel files of a stage module's program."""
    return 'elas/common.cl', f'elas/{module}.cl'


def build_programs(runtime: ClRuntime) -> dict[str, Program]:
    """Every ELAS program, built now (KernelBuildError names the file and the first error)."""
    return {module: runtime.program(program_files(module), DEFINES.get(module, NO_DEFINES))
            for module in MODULES}


@dataclass(frozen=True)
class Geometry:
    """Every size the stages need, derived from the image size and the parameters."""

    width: int
    height: int
    out_width: int
    out_height: int
    step: int
    lattice_w: int
    lattice_h: int
    rows: int  # point rows: y = 0 corners, lattice rows 1..lattice_h-1, y = H-1 corners
    max_points: int
    grid_w: int
    grid_h: int
    grid_words: int
    list_len: int  # ints per grid cell: count + up to disp_max + 1 disparities

    @classmethod
    def of(cls, width: int, height: int, s: ElasSettings) -> Geometry:
        step = s.step
        lattice_w, lattice_h = -(-width // step), -(-height // step)
        return cls(
            width=width, height=height,
            out_width=width // 2 if s.subsampling else width,
            out_height=height // 2 if s.subsampling else height,
            step=step, lattice_w=lattice_w, lattice_h=lattice_h, rows=lattice_h + 1,
            max_points=(lattice_w - 1) * (lattice_h - 1) + 6,
            grid_w=-(-width // s.grid_size), grid_h=-(-height // s.grid_size),
            grid_words=s.disp_max // 32 + 1, list_len=s.disp_max + 2)

    @property
    def pixels(self) -> int:
        return self.width * self.height

    @property
    def out_pixels(self) -> int:
        return self.out_width * self.out_height

    @property
    def lattice(self) -> int:
        return self.lattice_w * self.lattice_h

    @property
    def grid_cells(self) -> int:
        return self.grid_w * self.grid_h


@dataclass(frozen=True)
class LocalSizes:
    """
    Work-group shapes per kind of kernel, within the device's limits.

    PoCL runs a work-group as loops on one core, so there pixel kernels get rows of 256, loop-heavy
    ones rows of 64 or single items (measured fastest); GPUs get up to 256 work-items per group. No
    result depends on these shapes.
    """

    pixels: tuple[int, int]
    heavy: tuple[int, int]
    items: int
    group: int  # the single work-group of elas_support_points
    raster_lanes: int  # work-items per triangle in elas_raster (a global size)

    @classmethod
    def for_device(cls, limits: DeviceLimits) -> LocalSizes:
        if limits.is_gpu:
            return cls(pixels=limits.group_2d((32, 8)), heavy=limits.group_2d((32, 4)),
                       items=limits.group(64), group=limits.group(256), raster_lanes=16)
        return cls(pixels=limits.group_2d((256, 1)), heavy=limits.group_2d((64, 1)), items=1,
                   group=limits.group(64), raster_lanes=1)


@dataclass(frozen=True)
class StageDevice:
    """
    What a stage sets itself up with.

    The runtime, the matcher's buffers, the built programs and the work-group shapes.
    """

    runtime: ClRuntime
    buffers: Buffers
    programs: Mapping[str, Program]
    local: LocalSizes

    def buffer(self, role: str, nbytes: int) -> cl.Buffer:
        return self.buffers.get(role, nbytes)

    def kernel(self, module: str, name: str) -> Kernel:
        return self.programs[module].kernel(name)

    def launch(self, module: str, name: str, items: Sequence[int],
               local: Sequence[int] | None, args: Sequence[Any], stage: str) -> Step:
        """
        Bind kernel ``name`` of ``module`` to ``args``.

        Its work-group shape ``local`` is reduced to what this kernel allows.
        """
        kernel = self.kernel(module, name)
        shape = None if local is None else kernel.fit(local)
        return kernel.bind(items, args, stage, shape)

    def fill(self, buf: cl.Buffer, value: np.generic, stage: str) -> Step:
        """Set all of ``buf`` to ``value`` on the device (a per-frame reset)."""
        return functools.partial(self.runtime.fill, buf, value, stage)
