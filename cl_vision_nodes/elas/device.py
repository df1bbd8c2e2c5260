"""Sizes, buffers and pre-bound kernel launches shared by the ELAS device stages.

Each stage binds its kernel arguments once per (image size, parameters) in a ``Launch`` and the
per-frame path only enqueues: no allocation, no argument marshalling, no host round trip. Every
kernel launch gets its own ``cl.Kernel`` (the runtime caches programs, not these objects),
because the left and right views bind the same kernel to different buffers.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyopencl as cl

from cl_vision_nodes.elas.schema import ElasSettings
from cl_vision_nodes.opencl.runtime import ClRuntime

PROGRAM = 'elas'
MAX_OWNED = 6  # triangles stored per point (kernels/elas.cl MAX_OWNED)
GAP_GROUP = 64  # work-group size of elas_gap (reqd_work_group_size)

STAGES: tuple[str, ...] = (
    'descriptor', 'support matches', 'delaunay', 'disparity planes', 'grid', 'matching',
    'L/R check', 'remove small segments', 'gap interpolation', 'adaptive mean', 'median',
    'output')
"""Profiler stage names, libelas' timer rows in its order (plus the final conversion)."""

_instances = itertools.count()


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
    """Work-group shapes per kind of kernel. PoCL runs a work-group as loops on one core, so
    loop-heavy kernels get tiny groups there (measured fastest), pixel kernels rows of 64."""

    pixels: tuple[int, int]
    heavy: tuple[int, int]
    items: int
    group: int
    raster_lanes: int

    @classmethod
    def for_device(cls, runtime: ClRuntime) -> LocalSizes:
        if runtime.entry.is_gpu:
            return cls(pixels=(32, 8), heavy=(32, 4), items=64, group=256, raster_lanes=16)
        return cls(pixels=(256, 1), heavy=(64, 1), items=1, group=64, raster_lanes=1)


def round_up(items: Sequence[int], local: Sequence[int] | None) -> tuple[int, ...]:
    """Global size covering ``items`` in whole work-groups (kernels check their bounds)."""
    if local is None:
        return tuple(items)
    return tuple(-(-max(n, 1) // m) * m for n, m in zip(items, local))


class Launch:
    """One kernel with its arguments bound, enqueued by ``__call__`` and profiled as ``stage``."""

    def __init__(self, runtime: ClRuntime, name: str, items: Sequence[int],
                 local: Sequence[int] | None, args: Sequence[Any], stage: str):
        self.runtime = runtime
        self.stage = stage
        self.kernel = cl.Kernel(runtime.program(PROGRAM), name)
        self.kernel.set_args(*args)
        self.local = None if local is None else tuple(local)
        self.global_size = round_up(items, self.local)

    def __call__(self) -> None:
        event = cl.enqueue_nd_range_kernel(self.runtime.queue, self.kernel, self.global_size,
                                           self.local)
        self.runtime.profiler.record(self.stage, event)


class Fill:
    """Set a whole buffer to one value on the device (per-frame reset, no host copy)."""

    def __init__(self, runtime: ClRuntime, buffer: cl.Buffer, value: np.generic, stage: str):
        self.runtime = runtime
        self.buffer = buffer
        self.pattern = np.array([value])
        self.stage = stage

    def __call__(self) -> None:
        event = cl.enqueue_fill_buffer(self.runtime.queue, self.buffer, self.pattern, 0,
                                       self.buffer.size)
        self.runtime.profiler.record(self.stage, event)


class Workspace:
    """The device buffers of one matcher, named by role and reused while sizes stay the same."""

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime
        self.prefix = f'elas{next(_instances)}.'

    def role(self, name: str) -> str:
        return self.prefix + name

    def buffer(self, name: str, nbytes: int) -> cl.Buffer:
        return self.runtime.buffer(self.role(name), nbytes)

