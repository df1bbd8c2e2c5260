"""Launching the kernels of ``kernels/flow.cl``: one helper so every stage is profiled alike.

Kernels get their scalar argument types once (from the first call's NumPy scalars): pyopencl
then packs arguments through a generated invoker, about 4 us per launch instead of about 90 us
for untyped scalars, which matters to hs with its thousand launches per frame.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pyopencl as cl

from cl_vision_nodes.opencl.runtime import NO_DEFINES, ClRuntime, Defines, define_options

PROGRAM = 'flow'
Shape = tuple[int, int]
"""(height, width) of a pyramid level, the NumPy order."""

_TYPED: weakref.WeakKeyDictionary[ClRuntime, dict[tuple[str, tuple[str, ...]], cl.Kernel]] = \
    weakref.WeakKeyDictionary()


def _typed_kernel(runtime: ClRuntime, name: str, defines: Defines,
                  args: tuple[Any, ...]) -> cl.Kernel:
    kernels = _TYPED.setdefault(runtime, {})
    key = (name, define_options(defines))
    kernel = kernels.get(key)
    if kernel is None:
        kernel = runtime.kernel(PROGRAM, name, defines)
        kernel.set_scalar_arg_dtypes(
            [arg.dtype if isinstance(arg, np.generic) else None for arg in args])
        kernels[key] = kernel
    return kernel


def launch(runtime: ClRuntime, kernel: str, items: tuple[int, int], args: tuple[Any, ...],
           stage: str, *, defines: Defines = NO_DEFINES,
           local: tuple[int, int] | None = None) -> None:
    """Enqueue ``kernel`` over ``items`` = (x, y) work-items and record it under ``stage``.

    Scalars are NumPy scalars of the kernel's types (i32, f32). With an explicit ``local`` size
    the global size is rounded up to a multiple of it (the kernels guard their bounds); without
    one the driver picks the work-group size.
    """
    size: tuple[int, ...] = items
    if local is not None:
        size = tuple(-(-n // l) * l for n, l in zip(items, local))
    event = _typed_kernel(runtime, kernel, defines, args)(runtime.queue, size, local, *args)
    runtime.profiler.record(stage, event)


def fill(runtime: ClRuntime, buf: cl.Buffer, pattern: np.ndarray, nbytes: int,
         stage: str) -> None:
    """Fill the first ``nbytes`` of ``buf`` with ``pattern`` on the device (no host copy)."""
    event = cl.enqueue_fill_buffer(runtime.queue, buf, pattern, 0, nbytes)
    runtime.profiler.record(stage, event)


def i32(value: int) -> np.int32:
    return np.int32(value)


def f32(value: float) -> np.float32:
    return np.float32(value)


ZERO_F32 = np.zeros(1, np.float32)
