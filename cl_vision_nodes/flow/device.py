"""Launching the kernels of ``kernels/flow.cl`` through the runtime's launcher (profiled alike)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from cl_vision_nodes.opencl.runtime import NO_DEFINES, ClRuntime, Defines

PROGRAM = 'flow'
Shape = tuple[int, int]
"""(height, width) of a pyramid level, the NumPy order."""


def launch(runtime: ClRuntime, kernel: str, items: tuple[int, int], args: tuple[Any, ...],
           stage: str, *, defines: Defines = NO_DEFINES,
           local: tuple[int, int] | None = None) -> None:
    """Enqueue a flow kernel over ``items`` = (x, y) work-items (see ``ClRuntime.launch``)."""
    runtime.launch(PROGRAM, kernel, items, local, args, stage, defines)


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
