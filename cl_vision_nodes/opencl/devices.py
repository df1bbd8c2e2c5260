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
Which OpenCL devices exist, which of them can build our kernels, and which one to use.

A device is usable only if it compiles and runs a tiny probe kernel: an installed driver whose
compiler cannot target this CPU (PoCL 3.0 inside the pyopencl wheel on AMD family 26 says
``unknown target CPU 'generic'``) lists a device that would fail every build. ``auto``, ``gpu``
and ``cpu`` skip such devices with one warning naming the reason and the fix; an explicit
choice (``P:D`` or a name) that fails is an error.
"""
from __future__ import annotations

from dataclasses import dataclass
import functools
import logging
import os
from typing import Callable

from cl_vision_nodes.errors import DeviceError
import numpy as np
import pyopencl as cl

DEVICE_ENV = 'CL_VISION_DEVICE'
LOG = logging.getLogger('cl_vision_nodes.opencl')

INSTALL_HINT = (
    'install an OpenCL driver: on a CPU-only Debian/Ubuntu machine `sudo apt install '
    'pocl-opencl-icd` (the `make` set-up does this when the bundled PoCL cannot compile); for '
    'NVIDIA the driver ICD (`nvidia-opencl-icd` or the CUDA driver), for Intel GPUs '
    '`intel-opencl-icd`, for AMD ROCm `rocm-opencl-runtime`; `cl-vision doctor` checks every '
    'device')

PROBE_SOURCE = """
__kernel void probe(__global float* out) {
    const int i = get_global_id(0);
    out[i] = (float)i * 0.5f;
}
"""


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
    def index(self) -> str:
        return f'{self.platform_index}:{self.device_index}'

    @property
    def driver(self) -> str:
        """Return the driver's version: two PoCLs (a distribution's, a wheel's) share names."""
        return self.device.driver_version.strip()

    @property
    def platform(self) -> str:
        """Return the platform's name and the driver's version, as logs and listings show it."""
        return f'{self.platform_name} {self.driver}'

    @property
    def is_gpu(self) -> bool:
        return bool(self.device.type & cl.device_type.GPU)

    @property
    def kind(self) -> str:
        if self.is_gpu:
            return 'GPU'
        return 'CPU' if self.device.type & cl.device_type.CPU else 'other'

    def describe(self) -> str:
        return f'{self.name} ({self.kind}, {self.platform}, {self.index})'


def pin_cpu_workers() -> None:
    """
    Ask PoCL to pin its worker threads, one a core (POCL_AFFINITY=1), unless set already.

    Unpinned, on a 2-core machine runs of frames took the time of one worker, not two (dis
    ultrafast 640x480: 1.65 ms against 1.15 ms; steady at 1.15 ms pinned). PoCL pins worker i to
    CPU i, so only where this process may run on every CPU (a taskset or cpuset would refuse the
    CPUs outside it). PoCL reads it when it starts: before the process first lists platforms.
    """
    allowed = getattr(os, 'sched_getaffinity', None)  # Linux only, as is POCL_AFFINITY
    cpus = os.cpu_count() or 1
    if 'POCL_AFFINITY' not in os.environ and allowed and allowed(0) == set(range(cpus)):
        os.environ['POCL_AFFINITY'] = '1'


def list_devices() -> list[DeviceEntry]:
    """All devices of all platforms; DeviceError with install advice when there are none."""
    pin_cpu_workers()
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


def first_line(text: str) -> str:
    """
    Return the first line of a compiler or driver message that says what went wrong.

    pyopencl's own header lines are skipped; a heading such as "Error(s) while linking:" comes with
    its next line.
    """
    lines = [line.strip() for line in str(text).splitlines() if line.strip()
             and not line.startswith(('clBuildProgram failed', 'Build on <', '(options:'))]
    for line in lines:
        if 'error:' in line.lower():
            return line
    for index, line in enumerate(lines):
        if 'error' in line.lower():
            following = lines[index + 1] if index + 1 < len(lines) else ''
            return f'{line} {following}'.strip() if line.endswith(':') else line
    return lines[0] if lines else str(text).strip() or 'no message'


@functools.lru_cache(maxsize=None)
def _probe(platform_index: int, device_index: int) -> str | None:
    device = cl.get_platforms()[platform_index].get_devices()[device_index]
    try:
        context = cl.Context([device])
        queue = cl.CommandQueue(context)
        kernel = cl.Program(context, PROBE_SOURCE).build().probe
        out = np.zeros(4, np.float32)
        buf = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
        kernel(queue, (4,), None, buf)
        cl.enqueue_copy(queue, out, buf)
    except (cl.Error, RuntimeError) as exc:
        return first_line(str(exc))
    if not np.array_equal(out, np.arange(4, dtype=np.float32) * 0.5):
        return f'the probe kernel computed {out.tolist()}'
    return None


def probe(entry: DeviceEntry) -> str | None:
    """
    Return None if ``entry`` builds and runs a tiny kernel, else the reason it cannot.

    Cached per process: a node or test session probes each device once.
    """
    return _probe(entry.platform_index, entry.device_index)


def resolve_spec(spec: str | None) -> str:
    """
    Return the effective device request.

    An explicit one, else CL_VISION_DEVICE, else ``auto``.
    """
    if spec and spec != 'auto':
        return spec
    return os.environ.get(DEVICE_ENV, '').strip() or 'auto'


def _matching(request: str, entries: list[DeviceEntry]) -> list[DeviceEntry]:
    key = request.lower()
    if key == 'auto':
        return sorted(entries, key=lambda e: not e.is_gpu)  # GPUs first, stable otherwise
    if key in ('gpu', 'cpu'):
        return [e for e in entries if e.kind.lower() == key]
    if ':' in key and all(part.isdigit() for part in key.split(':', 1)):
        return [e for e in entries if e.index == key]
    return [e for e in entries if key in f'{e.platform_name} {e.name}'.lower()]


def select_device(spec: str | None = None,
                  warn: Callable[[str], None] = LOG.warning) -> DeviceEntry:
    """
    Pick a working device by ``auto``, ``gpu``, ``cpu``, ``P:D`` or a name part.

    ``auto``/``gpu``/``cpu`` take the first candidate that passes the probe and ``warn`` once
    about each one skipped; an explicit choice that fails the probe raises DeviceError.
    """
    request = resolve_spec(spec)
    entries = list_devices()
    found = _matching(request, entries)
    if not found:
        available = '; '.join(f'{e.index} {e.name} ({e.kind})' for e in entries)
        raise DeviceError(f'no OpenCL device matches {request!r}; available: {available}')
    explicit = request.lower() not in ('auto', 'gpu', 'cpu')
    failures = []
    for entry in found:
        reason = probe(entry)
        if reason is None:
            return entry
        if explicit:
            raise DeviceError(f'OpenCL device {entry.describe()} cannot build kernels: {reason}; '
                              f'{INSTALL_HINT}')
        warn(f'skipping OpenCL device {entry.describe()}: it cannot build kernels ({reason}); '
             f'{INSTALL_HINT}')
        failures.append(f'{entry.describe()}: {reason}')
    raise DeviceError(f'no {request} OpenCL device can build kernels ({"; ".join(failures)}); '
                      f'{INSTALL_HINT}')
