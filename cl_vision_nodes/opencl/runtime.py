"""OpenCL runtime: device choice, one context and in-order queue, cached programs and buffers.

One ``ClRuntime`` per node (or CLI run). Programs are built once per context and define set;
kernels are looked up once; buffers are keyed by role and reallocated only when the size changes,
so the per-frame path allocates nothing on the device.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np
import pyopencl as cl

from cl_vision_nodes.errors import DeviceError, KernelBuildError
from cl_vision_nodes.opencl.profiling import StageProfiler

DEVICE_ENV = 'CL_VISION_DEVICE'
Defines = Mapping[str, 'int | float | str']
NO_DEFINES: Defines = MappingProxyType({})

INSTALL_HINT = (
    'install an OpenCL driver: on a CPU-only machine `pip install "pyopencl[pocl]"` '
    '(or `apt install pocl-opencl-icd`); for NVIDIA the driver ICD (`nvidia-opencl-icd` or the '
    'CUDA driver), for Intel GPUs `intel-opencl-icd`, for AMD ROCm `rocm-opencl-runtime`; '
    '`cl-vision devices` lists what is found')


@dataclass(frozen=True)
class DeviceEntry:
    """One OpenCL device with the ``P:D`` indices that select it."""

    platform_index: int
    device_index: int
    platform_name: str
    device: cl.Device

    @property
    def name(self) -> str:
        return self.device.name.strip()

    @property
    def is_gpu(self) -> bool:
        return bool(self.device.type & cl.device_type.GPU)

    @property
    def kind(self) -> str:
        if self.is_gpu:
            return 'GPU'
        return 'CPU' if self.device.type & cl.device_type.CPU else 'other'


def list_devices() -> list[DeviceEntry]:
    """All devices of all platforms; DeviceError with install advice when there are none."""
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise DeviceError(f'no OpenCL platform found ({exc}); {INSTALL_HINT}') from None
    entries = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue  # a platform whose driver is installed but unusable: skip it
        entries.extend(DeviceEntry(p_index, d_index, platform.name.strip(), device)
                       for d_index, device in enumerate(devices))
    if not entries:
        raise DeviceError(f'OpenCL platforms exist but expose no device; {INSTALL_HINT}')
    return entries


def resolve_spec(spec: str | None) -> str:
    """The effective device request: an explicit one, else CL_VISION_DEVICE, else ``auto``."""
    if spec and spec != 'auto':
        return spec
    return os.environ.get(DEVICE_ENV, '').strip() or 'auto'


def select_device(spec: str | None = None) -> DeviceEntry:
    """Pick a device by ``auto``, ``gpu``, ``cpu``, ``P:D`` or a case-insensitive name part."""
    request = resolve_spec(spec)
    entries = list_devices()
    key = request.lower()
    if key == 'auto':
        return next((e for e in entries if e.is_gpu), entries[0])
    if key in ('gpu', 'cpu'):
        found = [e for e in entries if e.kind.lower() == key]
    elif ':' in key and all(part.isdigit() for part in key.split(':', 1)):
        p_index, d_index = (int(part) for part in key.split(':', 1))
        found = [e for e in entries
                 if (e.platform_index, e.device_index) == (p_index, d_index)]
    else:
        found = [e for e in entries if key in f'{e.platform_name} {e.name}'.lower()]
    if not found:
        available = '; '.join(f'{e.platform_index}:{e.device_index} {e.name} ({e.kind})'
                              for e in entries)
        raise DeviceError(f'no OpenCL device matches {request!r}; available: {available}')
    return found[0]


def kernel_source(name: str) -> str:
    """The text of ``cl_vision_nodes/kernels/<name>.cl`` (package data)."""
    return resources.files('cl_vision_nodes').joinpath('kernels', f'{name}.cl').read_text()


def define_options(defines: Defines) -> tuple[str, ...]:
    return tuple(f'-D{key}={value}' for key, value in sorted(defines.items()))


class ClRuntime:
    """Context, queue, program/kernel cache and buffer pool of one node or CLI run."""

    def __init__(self, device: str | None = 'auto', *, profile: bool = False):
        self.entry = select_device(device)
        self.device = self.entry.device
        self.context = cl.Context([self.device])
        props = cl.command_queue_properties.PROFILING_ENABLE if profile else 0
        self.queue = cl.CommandQueue(self.context, properties=props)
        self.profiler = StageProfiler(enabled=profile)
        self._programs: dict[tuple[str, tuple[str, ...]], cl.Program] = {}
        self._kernels: dict[tuple[str, tuple[str, ...], str], cl.Kernel] = {}
        self._launchers: dict[tuple[str, str, int], tuple[Defines, cl.Kernel]] = {}
        self._buffers: dict[str, cl.Buffer] = {}

    def describe(self) -> str:
        return f'{self.entry.name} ({self.entry.kind}, {self.entry.platform_name}, ' \
               f'{self.entry.platform_index}:{self.entry.device_index})'

    def program(self, name: str, defines: Defines = NO_DEFINES) -> cl.Program:
        """Build ``kernels/<name>.cl`` once per define set; KernelBuildError carries the log."""
        key = (name, define_options(defines))
        program = self._programs.get(key)
        if program is None:
            source = kernel_source(name)
            options = ['-cl-std=CL1.2', *key[1]]
            try:
                program = cl.Program(self.context, source).build(options=options)
            except cl.RuntimeError as exc:
                raise KernelBuildError(
                    f'building kernels/{name}.cl for {self.entry.name} with '
                    f"{' '.join(options)} failed:\n{exc}") from None
            self._programs[key] = program
        return program

    def kernel(self, program: str, kernel: str,
               defines: Defines = NO_DEFINES) -> cl.Kernel:
        """A kernel object, created once and reused (pyopencl re-creates on attribute access)."""
        key = (program, define_options(defines), kernel)
        found = self._kernels.get(key)
        if found is None:
            found = cl.Kernel(self.program(program, defines), kernel)
            self._kernels[key] = found
        return found

    def launch(self, program: str, kernel: str, items: tuple[int, ...],
               local: tuple[int, ...] | None, args: tuple[Any, ...], stage: str,
               defines: Defines = NO_DEFINES) -> cl.Event:
        """Enqueue ``kernel`` over ``items`` work-items and record it under ``stage``.

        With an explicit ``local`` size the global size is rounded up to a multiple of it (the
        kernels check their bounds); with None the driver picks the group size. Scalars are
        NumPy scalars of the kernel's types: on the first launch they fix the kernel's scalar
        argument types, after which pyopencl packs arguments through a generated invoker
        (about 4 us per launch instead of tens for untyped arguments; hs and SURF launch
        dozens of kernels per frame). The kernel lookup is keyed by the identity of the
        ``defines`` object, which callers keep as a constant, to skip formatting the options.
        """
        fast_key = (program, kernel, id(defines))
        cached = self._launchers.get(fast_key)
        if cached is None or cached[0] is not defines:
            k = self.kernel(program, kernel, defines)
            k.set_scalar_arg_dtypes([a.dtype if isinstance(a, np.generic) else None
                                     for a in args])
            cached = self._launchers[fast_key] = (defines, k)
        size = items if local is None else tuple(-(-n // g) * g for n, g in zip(items, local))
        event = cached[1](self.queue, size, local, *args)
        self.profiler.record(stage, event)
        return event

    def buffer(self, role: str, nbytes: int,
               flags: int = cl.mem_flags.READ_WRITE) -> cl.Buffer:
        """A device buffer for ``role``, reallocated only when the byte size changes."""
        nbytes = max(int(nbytes), 1)
        found = self._buffers.get(role)
        if found is None or found.size != nbytes:
            found = cl.Buffer(self.context, flags, nbytes)
            self._buffers[role] = found
        return found

    def allocated_bytes(self) -> int:
        return sum(buf.size for buf in self._buffers.values())
