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
The one way kernels are launched: typed arguments, whole work-groups, profiled by stage.

``kernel(items, args, stage)`` enqueues now; ``kernel.bind(items, args, stage)`` returns a
launch with its arguments set once, for stages that run the same launch every frame (ELAS);
``BoundLaunches`` binds each distinct launch at its first call (a pyramid's levels). A bound
launch costs the enqueue alone (on an H200 the driver's 8-9 us, most of a frame's host time
there); setting the arguments again adds 3-5 us.
Scalars are NumPy scalars of the kernel's types: the first call fixes the scalar types and
pyopencl then packs arguments through a generated invoker (about 4 us per launch instead of
tens). With an explicit ``local`` size the global size is rounded up to whole work-groups (the
kernels check their bounds). Without one, a GPU's driver chooses; on a CPU the launch takes
``spread_groups``: with PoCL's own choice, dis_search's 39 x 29 patch grid took twice as long
as in rows of one group each (a grid that small kept one of two cores idle).
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

from cl_vision_nodes.errors import DeviceError
from cl_vision_nodes.opencl.devices import DeviceEntry
from cl_vision_nodes.opencl.gate import QueueGate
from cl_vision_nodes.opencl.profiling import StageProfiler
import numpy as np
import pyopencl as cl


def whole_groups(items: Sequence[int], local: Sequence[int] | None) -> tuple[int, ...]:
    """Global size covering ``items`` in whole work-groups of ``local``."""
    if local is None:
        return tuple(max(int(n), 1) for n in items)
    return tuple(-(-max(int(n), 1) // int(g)) * int(g) for n, g in zip(items, local))


SPREAD_WIDTH = 64
"""Widest row of work-items ``spread_groups`` gives a CPU work-group (PoCL's vectors run along
the first dimension)."""


def spread_groups(items: Sequence[int]) -> tuple[int, ...]:
    """
    Return a CPU work-group of one row for ``items``.

    Its width is the largest divisor of the first size up to SPREAD_WIDTH: every other row or
    column is a work-group of its own for the device's cores, and the global size stays
    exactly ``items``.
    """
    width = max(int(items[0]), 1)
    group = next(g for g in range(min(width, SPREAD_WIDTH), 0, -1) if width % g == 0)
    return (group,) + (1,) * (len(items) - 1)


class BoundLaunch:
    """One launch with its arguments set: ``launch()`` enqueues it again."""

    def __init__(self, kernel: cl.Kernel, gate: QueueGate, size: tuple[int, ...],
                 local: tuple[int, ...] | None, stage: str, profiler: StageProfiler):
        self._kernel = kernel
        self._gate = gate
        self._size = size
        self._local = local
        self._stage = stage
        self._profiler = profiler
        self._name = kernel.function_name  # a driver query: once, not every launch

    def __call__(self) -> cl.Event:
        event = cl.enqueue_nd_range_kernel(self._gate.admit(), self._kernel, self._size,
                                           self._local)
        self._profiler.record(self._stage, event, self._name)
        return event


def kernel_work_group(kernel: cl.Kernel, device: cl.Device) -> tuple[int, ...]:
    """Return the kernel's reqd_work_group_size, or zeros where it has none."""
    return tuple(kernel.get_work_group_info(
        cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, device))


class Kernel:
    """A kernel of a built program on one queue."""

    def __init__(self, program: cl.Program, name: str, gate: QueueGate,
                 entry: DeviceEntry, profiler: StageProfiler):
        self.name = name
        self._program = program
        self._kernel = cl.Kernel(program, name)
        self._gate = gate  # of the queue it runs on
        self._entry = entry
        self._profiler = profiler
        self._typed = False
        self._allowed: set[tuple[int, ...]] = set()
        required = kernel_work_group(self._kernel, entry.device)
        self._spread = not entry.is_gpu and not any(required)

    @functools.cached_property
    def max_group(self) -> int:
        """Work-items per group this kernel may use on its device (registers, local memory)."""
        return int(self._kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                    self._entry.device))

    def fit(self, preferred: Sequence[int]) -> tuple[int, ...]:
        """
        Halve ``preferred`` until this kernel may run it on its device.

        The last dimension (rows) is halved first, then the earlier ones: registers and local
        memory can allow fewer work-items than the device's maximum.
        """
        shape = [int(n) for n in preferred]
        per_dim = self._entry.device.max_work_item_sizes
        for dim in reversed(range(len(shape))):
            while shape[dim] > 1 and (int(np.prod(shape)) > self.max_group
                                      or shape[dim] > per_dim[dim]):
                shape[dim] //= 2
        return tuple(shape)

    def _local(self, items: Sequence[int], local: Sequence[int] | None) -> tuple[int, ...] | None:
        """Return the launch's work-group: ``local``, or on a CPU ``spread_groups`` that fits."""
        if local is not None:
            return self._check(local)
        if not self._spread:
            return None
        group = spread_groups(items)
        return group if int(np.prod(group)) <= self.max_group else None

    def _check(self, local: Sequence[int]) -> tuple[int, ...]:
        """``local`` as a tuple; DeviceError (naming both sizes) if the device forbids it."""
        local = tuple(int(n) for n in local)
        if local not in self._allowed:
            total = int(np.prod(local))
            if total > self.max_group:
                raise DeviceError(f'kernel {self.name} needs work-groups of {local} ({total} '
                                  f'work-items) but {self._entry.name} allows {self.max_group}')
            self._allowed.add(local)
        return local

    def __call__(self, items: Sequence[int], args: Sequence[Any], stage: str,
                 local: Sequence[int] | None = None) -> cl.Event:
        local = self._local(items, local)
        if not self._typed:
            self._kernel.set_scalar_arg_dtypes(
                [a.dtype if isinstance(a, np.generic) else None for a in args])
            self._typed = True
        event = self._kernel(self._gate.admit(), whole_groups(items, local), local, *args)
        self._profiler.record(stage, event, self.name)
        return event

    def bind(self, items: Sequence[int], args: Sequence[Any], stage: str,
             local: Sequence[int] | None = None) -> BoundLaunch:
        """
        Return a launch with ``args`` set once.

        It has its own kernel object, so the same kernel can be bound to other buffers too.
        """
        local = self._local(items, local)
        kernel = cl.Kernel(self._program, self.name)
        kernel.set_args(*args)
        return BoundLaunch(kernel, self._gate, whole_groups(items, local), local, stage,
                           self._profiler)


BOUND_MAX = 64
"""Most launches a BoundLaunches keeps: past it they are bound anew (the buffers of frame sizes
no longer seen are then not kept alive by it)."""


class BoundLaunches:
    """
    Launches bound at their first call, by kernel, size and arguments; a frame repeats them.

    Arguments are device buffers and NumPy scalars (hashable). ``clear`` when the buffers are
    replaced (a new frame size), so the old ones are not kept alive here; at most BOUND_MAX are
    kept in any case.
    """

    def __init__(self) -> None:
        self._bound: dict[tuple[object, ...], BoundLaunch] = {}

    def __call__(self, kernel: Kernel, items: tuple[int, ...], args: tuple[Any, ...],
                 stage: str, local: tuple[int, ...] | None = None) -> cl.Event:
        key = (kernel.name, items, stage, local, *args)
        launch = self._bound.get(key)
        if launch is None:
            if len(self._bound) >= BOUND_MAX:
                self._bound.clear()
            launch = self._bound[key] = kernel.bind(items, args, stage, local)
        return launch()

    def clear(self) -> None:
        self._bound.clear()
