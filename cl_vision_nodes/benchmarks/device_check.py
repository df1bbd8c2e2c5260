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
Whether an OpenCL device runs each capability, its limits and a frame's time (`cl-vision doctor`).

For a device: whether it builds a probe kernel and each capability's programs, its limits (fp64,
work-group size, local memory, image support), and the time of a 640x480 bgr8 frame's upload,
decode and download; and the install command of an OpenCL driver for each kind of hardware.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import statistics
import time
from typing import Callable

from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.errors import CLVisionError
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.devices import DeviceEntry, probe
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.extractor import SurfExtractor
import numpy as np


FRAME = (480, 640)
TIMED_FRAMES = 10

INSTALL_ROUTES: tuple[tuple[str, str], ...] = (
    ('CPU (any x86-64/arm64 Debian/Ubuntu)', 'sudo apt install pocl-opencl-icd'),
    ('NVIDIA GPU', 'sudo apt install nvidia-opencl-icd (Debian) or the NVIDIA driver '
                   'packages (Ubuntu: nvidia-driver-XXX ships the OpenCL ICD)'),
    ('Intel GPU (UHD, Iris Xe, Arc)', 'sudo apt install intel-opencl-icd'),
    ('AMD GPU', 'ROCm: sudo apt install rocm-opencl-runtime (amdgpu-install --usecase=opencl)'),
    ('NVIDIA Jetson', 'no NVIDIA OpenCL on Jetson: use the CPU (sudo apt install '
                      'pocl-opencl-icd) or PoCL built with its CUDA backend'),
    ('Raspberry Pi', 'CPU: sudo apt install pocl-opencl-icd (the VideoCore GPU has no fp64 and '
                     'a small work-group limit; its OpenCL driver is experimental)'),
)


def capability_builders() -> dict[str, Callable[[ClRuntime], object]]:
    """Each capability's algorithm object: constructing it builds all of its programs."""
    return {'image': DeviceImages, 'flow': FlowEstimator, 'surf': SurfExtractor,
            'elas': ElasMatcher}


@dataclass
class DeviceReport:
    """What doctor found out about one device."""

    index: str
    name: str
    kind: str
    platform: str
    driver: str
    builds: bool
    problem: str | None = None
    fp64: bool = False
    max_work_group: int = 0
    local_memory_kib: int = 0
    image_support: bool = False
    compute_units: int = 0
    frame_ms: float | None = None
    capabilities: dict[str, str] = field(default_factory=dict)

    @property
    def runs_everything(self) -> bool:
        return self.builds and all(v == 'yes' for v in self.capabilities.values())


def frame_round_trip_ms(images: DeviceImages) -> float:
    """Median ms of upload + decode to gray + mono8 download of a 640x480 bgr8 frame."""
    rng = np.random.default_rng(0)
    raw = array_to_raw(rng.integers(0, 256, (*FRAME, 3), dtype=np.uint8), 'bgr8')
    images.convert(raw, 'mono8')  # first launch: argument types, caches
    times = []
    for _ in range(TIMED_FRAMES):
        start = time.perf_counter()
        images.convert(raw, 'mono8')
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def examine(entry: DeviceEntry) -> DeviceReport:
    """Probe one device, then build every capability on it and time a frame."""
    report = DeviceReport(index=entry.index, name=entry.name, kind=entry.kind,
                          platform=entry.platform_name, driver=entry.driver, builds=False)
    report.problem = probe(entry)
    if report.problem is not None:
        return report
    runtime = ClRuntime(entry.index)
    limits = runtime.limits
    report.builds = True
    report.fp64, report.image_support = limits.fp64, limits.image_support
    report.max_work_group, report.compute_units = limits.max_group, limits.compute_units
    report.local_memory_kib = limits.local_mem // 1024
    for name, build in capability_builders().items():
        try:
            built = build(runtime)
        except CLVisionError as exc:
            report.capabilities[name] = f'no: {exc}'
            continue
        report.capabilities[name] = 'yes'
        if isinstance(built, DeviceImages):
            report.frame_ms = frame_round_trip_ms(built)
    return report
