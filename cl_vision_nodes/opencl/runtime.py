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
ClRuntime: one device, context and in-order queue, with the programs built on it.

One ``ClRuntime`` per node (or CLI run); the algorithm objects on it each own their buffers
(``Buffers``) and ask it for programs by value (kernel files + defines), building them when they
are constructed, so a node compiles everything while it starts. Each queue has a gate
(``QueueGate``) holding commands enqueued ahead of their data; every wait here releases it first.
"""
from __future__ import annotations

from collections import OrderedDict
import copy
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.devices import LOG, select_device
from cl_vision_nodes.opencl.gate import gate_for, QueueGate
from cl_vision_nodes.opencl.limits import DeviceLimits
from cl_vision_nodes.opencl.profiling import StageProfiler
from cl_vision_nodes.opencl.programs import build, build_options, Defines, NO_DEFINES, Program
from cl_vision_nodes.opencl.signal_handlers import python_signal_handlers_kept
import numpy as np
import pyopencl as cl

MAX_PROGRAMS = 64
"""Built programs kept per runtime (least recently used dropped): parameter sweeps of compile-time
sizes (bm block and radius) cannot grow the cache without bound."""
ProgramKey = tuple[tuple[str, ...], tuple[str, ...]]  # kernel files, build options
READ_OFFSET = 'src_offset' if cl.VERSION >= (2022, 2) else 'device_offset'
"""enqueue_copy's keyword for the offset of a buffer read: pyopencl 2022.2 renamed it (and warns
about the old name); 2022.1, Ubuntu 22.04's, knows only ``device_offset``."""
T = TypeVar('T')


def _cached(cache: OrderedDict[ProgramKey, T], key: ProgramKey, make: Callable[[], T]) -> T:
    """Return ``cache[key]``, made and added if missing (least recently used dropped)."""
    found = cache.get(key)
    if found is None:
        found = cache[key] = make()
        if len(cache) > MAX_PROGRAMS:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return found


@dataclass(frozen=True)
class PendingRead:
    """A host array that an enqueued read fills (``ClRuntime.start_read``)."""

    host: np.ndarray
    event: cl.Event
    gate: QueueGate

    def wait(self) -> np.ndarray:
        """Return the array once the read has filled it (releasing its queue's hold)."""
        self.gate.release()
        self.event.wait()
        return self.host


class ClRuntime:
    """Device, context, queue, profiler and program cache of one node or CLI run."""

    def __init__(self, device: str | None = 'auto', *, profile: bool = False,
                 warn: Callable[[str], None] = LOG.warning):
        with python_signal_handlers_kept():
            self.entry = select_device(device, warn)
            self.device = self.entry.device
            self.context = cl.Context([self.device])
        self.limits = DeviceLimits.of(self.device)
        props = cl.command_queue_properties.PROFILING_ENABLE if profile else 0
        self.queue = cl.CommandQueue(self.context, properties=props)
        self.gate = gate_for(self.context, self.queue, self.limits.is_gpu)
        self.profiler = StageProfiler(enabled=profile)
        self._programs: OrderedDict[ProgramKey, Program] = OrderedDict()
        self._built: OrderedDict[ProgramKey, cl.Program] = OrderedDict()  # shared by siblings

    def sibling(self) -> ClRuntime:
        """
        Return a runtime on this device and context with a command queue of its own.

        Commands of different queues may run at the same time on the device: a GPU runs one
        capability's kernels beside another's. The profiler and the built programs are shared
        (nothing compiles twice); buffers of one are valid in the other, and the caller orders
        the work across queues (``finish`` one before the other reads what it wrote).
        """
        twin = copy.copy(self)
        twin.queue = cl.CommandQueue(self.context, properties=self.queue.properties)
        twin.gate = gate_for(self.context, twin.queue, self.limits.is_gpu)
        twin._programs = OrderedDict()
        return twin

    def describe(self) -> str:
        return self.entry.describe()

    def program(self, files: str | Sequence[str], defines: Defines = NO_DEFINES) -> Program:
        """
        Return the program of kernel ``files`` built with ``defines`` (KernelBuildError).

        ``files`` are paths under kernels/, joined in order. The program is built on the first
        request, then the same object is returned.
        """
        files = (files,) if isinstance(files, str) else tuple(files)
        key = (files, build_options(defines))
        return _cached(self._programs, key, lambda: Program(
            _cached(self._built, key, lambda: build(self.context, self.entry, files, defines)),
            files, self.gate, self.entry, self.profiler))

    def buffers(self) -> Buffers:
        """Return a new, empty buffer pool for one owner."""
        return Buffers(self.context, self.gate)

    def finish(self) -> None:
        """Wait until every command enqueued so far has completed (a timing boundary)."""
        self.gate.release()
        self.queue.finish()

    def fill(self, buf: cl.Buffer, value: np.generic, stage: str,
             nbytes: int | None = None) -> cl.Event:
        """Set the first ``nbytes`` (default: all) of ``buf`` to ``value`` on the device."""
        event = cl.enqueue_fill_buffer(self.gate.admit(), buf, np.array([value]), 0,
                                       buf.size if nbytes is None else nbytes)
        self.profiler.record(stage, event)
        return event

    def upload(self, buf: cl.Buffer, host: np.ndarray, stage: str, *,
               blocking: bool = False) -> cl.Event:
        """
        Copy ``host`` into the start of ``buf``; by default without waiting.

        A non-blocking upload reads ``host`` later: pyopencl keeps the array alive until then,
        but the caller must not change it. ``blocking`` for arrays about to be reused.
        """
        if blocking:
            self.gate.release()
        event = cl.enqueue_copy(self.gate.admit(), buf, host, is_blocking=blocking)
        self.profiler.record(stage, event)
        return event

    def download(self, host: np.ndarray, buf: cl.Buffer, stage: str, *,
                 src_offset: int = 0) -> cl.Event:
        """
        Copy ``host.nbytes`` of ``buf``, from byte ``src_offset`` on, into ``host``.

        Blocking: callers read ``host`` as soon as this returns.
        """
        self.gate.release()
        event = cl.enqueue_copy(self.queue, host, buf, is_blocking=True,
                                **{READ_OFFSET: src_offset})
        self.profiler.record(stage, event)
        return event

    def marker(self) -> cl.Event:
        """Return an event that completes when every command enqueued so far has."""
        return cl.enqueue_marker(self.gate.admit())

    def start_read(self, buffers: Buffers, role: str, buf: cl.Buffer, shape: tuple[int, ...],
                   dtype: np.dtype, stage: str) -> PendingRead:
        """
        Enqueue a read of the start of ``buf`` after the commands before; return it pending.

        Mapped where the device computes in host memory (``DeviceLimits.host_memory``), else
        downloaded into ``buffers``' pinned array of ``role``. Nothing waits here, so a frame's
        read follows its kernels on the queue and the host waits once for both. A mapped array
        is valid until the second ``age_views`` of ``buffers`` after it, which the owner calls
        before it writes ``buf`` again.
        """
        if self.limits.host_memory:
            host, event = buffers.map_read(buf, shape, dtype)
        else:
            host = buffers.pinned(role, shape, dtype)
            event = cl.enqueue_copy(self.gate.admit(), host, buf, is_blocking=False)
        self.profiler.record(stage, event)
        return PendingRead(host, event, self.gate)

    def copy(self, dst: cl.Buffer, src: cl.Buffer, stage: str,
             byte_count: int | None = None) -> cl.Event:
        """Copy the first ``byte_count`` (default: all) of ``src`` into ``dst`` on the device."""
        event = cl.enqueue_copy(self.gate.admit(), dst, src,
                                byte_count=-1 if byte_count is None else byte_count)
        self.profiler.record(stage, event)
        return event

    def constant(self, host: np.ndarray) -> cl.Buffer:
        """
        Return a read-only device copy of a table built once (filter taps, colours).

        Made with the buffer (COPY_HOST_PTR), so it has no event: it is no frame's device time.
        """
        return cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=np.ascontiguousarray(host))

    def cache_sizes(self) -> dict[str, int]:
        """Programs and kernel objects cached: constant while a stream's settings are."""
        return {'programs': len(self._programs),
                'kernels': sum(len(p) for p in self._programs.values())}
