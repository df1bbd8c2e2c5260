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
OpenCL programs built from kernel files and ``-D`` defines, and the kernels in them.

A program is identified by its value: the kernel files it is made of and its defines. Host code
passes its constants as defines (the single source of every size a kernel shares with the
host), so the same request always finds the same built program, whoever asks.

Every build bans double precision (the source starts by defining ``double`` away, after the
compiler's own headers, and constants are single precision): the kernels must run on GPUs
without ``cl_khr_fp64`` (Intel Xe-LP/Arc, Mali, Raspberry Pi), and a use of ``double`` is a
compile error on every device, not only on those.
"""
from __future__ import annotations

from importlib import resources
from types import MappingProxyType
from typing import Mapping, Sequence

from cl_vision_nodes.errors import KernelBuildError
from cl_vision_nodes.opencl.devices import DeviceEntry, first_line
from cl_vision_nodes.opencl.gate import QueueGate
from cl_vision_nodes.opencl.kernel import Kernel
from cl_vision_nodes.opencl.profiling import StageProfiler
import pyopencl as cl

Defines = Mapping[str, 'int | float | str']
NO_DEFINES: Defines = MappingProxyType({})
NO_FP64_PRELUDE = ''.join(f'#define double{n} fp64_is_not_used_by_cl_vision_nodes\n'
                          for n in ('', '2', '3', '4', '8', '16'))
CPU_DEVICE_PRELUDE = ('#define CL_VISION_CPU_DEVICE 1\n'
                      '#pragma clang diagnostic ignored "-Wpsabi"\n')
"""Added to every build for a CPU device: kernels may then spell a value so PoCL computes it
fast (its built-in functions are calls), without changing the value. Without AVX-512, clang
warns at each float16 a function takes or returns (vload16 among them) that its ABI differs
from AVX-512's: true, harmless inside one program, and PoCL prints "N warnings generated." on
the process's stderr, a stray line in a node's log."""
BUILD_FIX = ('choose another device (`device` parameter, --device or CL_VISION_DEVICE) or '
             'install a working OpenCL driver; `cl-vision doctor` checks each device')


def kernel_source(file: str) -> str:
    """
    Return the text of ``cl_vision_nodes/kernels/<file>`` (package data).

    It starts with a ``#line`` marker so compiler messages name the file.
    """
    text = resources.files('cl_vision_nodes').joinpath('kernels', file).read_text()
    return f'#line 1 "{file}"\n{text}\n'


def build_options(defines: Defines) -> tuple[str, ...]:
    """Return the compiler options of a program: OpenCL C 1.2, no fp64, the sorted defines."""
    return ('-cl-std=CL1.2', '-cl-single-precision-constant',
            *(f'-D{key}={value}' for key, value in sorted(defines.items())))


class Program:
    """One built program and the kernels taken from it (each created once)."""

    def __init__(self, program: cl.Program, files: tuple[str, ...], gate: QueueGate,
                 entry: DeviceEntry, profiler: StageProfiler):
        self.program = program
        self.files = files
        self._gate = gate  # of the queue its kernels run on
        self._entry = entry
        self._profiler = profiler
        self._kernels: dict[str, Kernel] = {}

    def kernel(self, name: str) -> Kernel:
        found = self._kernels.get(name)
        if found is None:
            found = self._kernels[name] = Kernel(self.program, name, self._gate, self._entry,
                                                 self._profiler)
        return found

    def __len__(self) -> int:
        return len(self._kernels)


def build(context: cl.Context, entry: DeviceEntry, files: Sequence[str],
          defines: Defines) -> cl.Program:
    """
    Compile ``files`` (in order, one translation unit) with ``defines``.

    KernelBuildError: one line naming the device, the files, the compiler's first error and the
    fix; the whole compiler log is in its ``log`` attribute.
    """
    cpu = CPU_DEVICE_PRELUDE if entry.device.type & cl.device_type.CPU else ''
    source = NO_FP64_PRELUDE + cpu + ''.join(kernel_source(file) for file in files)
    options = build_options(defines)
    try:
        return cl.Program(context, source).build(options=list(options))
    except cl.RuntimeError as exc:
        names = ' + '.join(f'kernels/{file}' for file in files)
        raise KernelBuildError(
            f'building {names} for {entry.describe()} failed: {first_line(str(exc))}; '
            f'{BUILD_FIX}', log=str(exc)) from None
