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

"""Device buffers for the kernel tests: host arrays up, results down, on a ClRuntime's queue."""
from __future__ import annotations

import numpy as np
import pyopencl as cl


def upload(runtime, array: np.ndarray, dtype: np.dtype | type | None = np.float32) -> cl.Buffer:
    """Return a new read-write buffer holding ``array`` as ``dtype`` (None: the array's own)."""
    host = np.ascontiguousarray(array, dtype)
    return cl.Buffer(runtime.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=host)


def write(runtime, buf: cl.Buffer, array: np.ndarray) -> None:
    """Copy ``array`` into the existing buffer ``buf``."""
    cl.enqueue_copy(runtime.queue, buf, np.ascontiguousarray(array))


def download(runtime, buf: cl.Buffer, shape: tuple[int, ...] | int,
             dtype: np.dtype | type = np.float32) -> np.ndarray:
    """Return the first ``shape`` elements of ``buf`` as an array of ``dtype``."""
    out = np.empty(shape, dtype)
    cl.enqueue_copy(runtime.queue, out, buf)
    return out


def empty(runtime, shape: tuple[int, ...]) -> cl.Buffer:
    """Return an uninitialised float32 buffer of ``shape``."""
    return cl.Buffer(runtime.context, cl.mem_flags.READ_WRITE, int(np.prod(shape)) * 4)
