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
Ms per frame of lk/hs/bm/dis with OpenCV DIS and Farneback in one run (`cl-vision bench flow`).

Our figure is the streaming cost a node pays per frame: upload of the new frame, its pyramid,
the flow to the previous frame (whose pyramid stays on the device) and the download of the
HxWx2 result into pinned memory (flow_node then copies it into its message), timed from the
frame's bytes to its flow. As in the node, the next frame's launches are enqueued between
frames (``FlowFrames.arm``), untimed: their host time is the row's ``ahead`` figure. OpenCV runs on
the CPU, and through its own OpenCL path (T-API, UMat, download included) when the chosen
device is a GPU. Our dis and OpenCV's DIS run with each of OpenCV's presets (ultrafast, fast,
medium; ours with the values of flow/presets.py). Each case: mean, best, p50 and p95 ms (how
steady frame to frame). ``--json FILE`` writes the rows as a list of ``{method, preset, size,
ms, ms_best, ms_p50, ms_p95, device}`` (``FlowRow.as_dict``) besides the table. No ROS imports:
it runs on a GPU box with numpy, OpenCV and pyopencl only.
"""
from __future__ import annotations

from dataclasses import dataclass
import itertools
from typing import Callable, Mapping

from cl_vision_nodes.benchmarks.frame_work import streaming
from cl_vision_nodes.benchmarks.timing import BenchRow, device_stages, time_ms
from cl_vision_nodes.dataio.synthetic import flow_pair
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.schema import METHODS
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.profiling import KernelTime
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
import cv2
import numpy as np


SIZES = ((640, 480), (1280, 720))
OPENCV_DIS_PRESETS = {'ultrafast': cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
                      'fast': cv2.DISOPTICAL_FLOW_PRESET_FAST,
                      'medium': cv2.DISOPTICAL_FLOW_PRESET_MEDIUM}
"""OpenCV's DIS presets by the names of ours (flow/presets.py holds their parameter values)."""
OCL_SUFFIX = '-ocl'
"""Appended to an OpenCV method's name on OpenCV's OpenCL path (T-API, UMat)."""


@dataclass(frozen=True)
class FlowRow:
    """
    One measured case: a row of the printed table and of the ``--json`` list.

    ``method``: lk, hs, bm, dis, opencv-dis-<preset>, opencv-farneback, OpenCV's with ``-ocl``
    on its OpenCL path; ``preset``: the DIS preset (ours and OpenCV's), else None; ``device``:
    our device's name, ``OpenCV CPU (N threads)`` or the OpenCL device OpenCV ran on.
    """

    method: str
    preset: str | None
    width: int
    height: int
    ms: float
    ms_best: float
    ms_p50: float
    ms_p95: float
    device: str
    label: str = ''
    stages: str = ''

    def as_dict(self) -> dict:
        """Return the ``--json`` row."""
        return {'method': self.method, 'preset': self.preset,
                'size': f'{self.width}x{self.height}', 'ms': self.ms, 'ms_best': self.ms_best,
                'ms_p50': self.ms_p50, 'ms_p95': self.ms_p95, 'device': self.device}

    def table_row(self) -> BenchRow:
        """Return the printed table's row (OpenCV's cases under their OpenCV names)."""
        ocl = self.method.endswith(OCL_SUFFIX)
        return BenchRow(self.label or self.method,
                        f'OpenCV OpenCL ({self.device})' if ocl else self.device,
                        self.width, self.height, self.ms, self.ms_best, self.ms_p50,
                        self.ms_p95, self.stages,
                        '' if self.label else self.preset or '')


@dataclass(frozen=True)
class OpenCVCase:
    """One of OpenCV's flow functions; it takes ndarrays (CPU) or UMats (OpenCV's OpenCL path)."""

    method: str
    preset: str | None
    label: str
    fn: Callable


def farneback(f0, f1):
    """opencv_apps' fback_flow parameters (the ROS baseline)."""
    return cv2.calcOpticalFlowFarneback(f0, f1, None, 0.5, 3, 15, 3, 5, 1.2, 0)


def dis(preset: int) -> Callable:
    solver = cv2.DISOpticalFlow_create(preset)
    return lambda f0, f1: solver.calc(f0, f1, None)


def opencv_cases() -> list[OpenCVCase]:
    """List OpenCV's cases: DIS with each preset, then Farneback."""
    return [*(OpenCVCase(f'opencv-dis-{name}', name, f'DIS {name.upper()}', dis(preset))
              for name, preset in OPENCV_DIS_PRESETS.items()),
            OpenCVCase('opencv-farneback', None, 'Farneback', farneback)]


def our_cases() -> list[tuple[str, str | None, Mapping[str, Value]]]:
    """List (method, preset, parameters) of ours: lk, hs, bm, then dis once per preset."""
    cases: list[tuple[str, str | None, Mapping[str, Value]]] = []
    for method in METHODS:
        if method == 'dis':
            cases += [(method, name, params) for name, params in DIS_PRESETS.items()]
        else:
            cases.append((method, None, {}))
    return cases


def run(device: str, repeats: int, sizes=SIZES) -> list[FlowRow]:
    runtime = ClRuntime(device)
    rows: list[FlowRow] = []
    for width, height in sizes:
        sample = flow_pair(height, width, motion='translation', seed=0)
        frames = [sample.frame0, sample.frame1]
        raws = [gray_to_raw(f) for f in frames]
        for method, preset, params in our_cases():
            step = streaming(method, raws, params)(runtime)
            timing = time_ms(step, repeats, between=step.between)
            ahead = f'ahead {1e3 * float(np.mean(step.between_s)):.3f} ms, '
            rows.append(FlowRow(method, preset, width, height, *timing, runtime.entry.name,
                                stages=ahead + device_stages(device, streaming(method, raws,
                                                                               params))))
        cv2.ocl.setUseOpenCL(False)
        for case in opencv_cases():
            rows.append(FlowRow(case.method, case.preset, width, height,
                                *time_ms(lambda: case.fn(*frames), repeats),
                                f'OpenCV CPU ({cv2.getNumThreads()} threads)', case.label))
        if runtime.entry.is_gpu and cv2.ocl.haveOpenCL():
            cv2.ocl.setUseOpenCL(True)
            umats = [cv2.UMat(f) for f in frames]
            for case in opencv_cases():
                rows.append(FlowRow(case.method + OCL_SUFFIX, case.preset, width, height,
                                    *time_ms(lambda: case.fn(*umats).get(), repeats),
                                    opencl_device_name(), case.label))
            cv2.ocl.setUseOpenCL(False)
    return rows


def opencl_device_name() -> str:
    """Return the name of OpenCV's OpenCL device (4.5.4 binds no static methods on classes)."""
    return cv2.ocl.Device_getDefault().name()


def kernel_times(device: str, method: str, size: tuple[int, int], frames: int = 3,
                 formulation: str | None = None,
                 params: dict | None = None) -> dict[str, KernelTime]:
    """
    Return launches and device ms per frame of each kernel of ``method`` (mean of ``frames``).

    Streaming as a node runs (after one warm frame), on a profiling runtime; copies show as
    ``[upload]``/``[download]``. ``formulation``: 'gpu' or 'cpu' (default: the device's).
    """
    runtime = ClRuntime(device, profile=True)
    width, height = size
    sample = flow_pair(height, width, motion='translation', seed=0)
    raws = itertools.cycle([gray_to_raw(sample.frame0), gray_to_raw(sample.frame1)])
    estimator = FlowEstimator(runtime, {**(params or {}), 'method': method}, formulation)
    for _ in range(2):  # the first frame has no flow; the second is the warm-up
        estimator.push(next(raws), copy=False)
    runtime.profiler.collect_kernels()
    totals: dict[str, KernelTime] = {}
    for _ in range(frames):
        estimator.push(next(raws), copy=False)
        for name, time in runtime.profiler.collect_kernels().items():
            total = totals.setdefault(name, KernelTime())
            total.launches += time.launches
            total.ms += time.ms
    return {name: KernelTime(t.launches // frames, t.ms / frames) for name, t in totals.items()}
