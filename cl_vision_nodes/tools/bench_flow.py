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
`cl-vision bench flow`: ms per frame of lk/hs/bm with OpenCV DIS and Farneback in the same run.

Our figure is the streaming cost a node pays per frame: upload of the new frame, its pyramid,
the flow to the previous frame (whose pyramid stays on the device) and the download of the
HxWx2 result into pinned memory (flow_node then copies it into its message). OpenCV runs on
the CPU, and through its own OpenCL path (T-API, UMat, download included) when the chosen
device is a GPU. No ROS imports: it runs on a GPU box with numpy,
OpenCV and pyopencl only.
"""
from __future__ import annotations

import argparse
import itertools
from typing import Callable

from cl_vision_nodes.dataio.synthetic import flow_pair
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.schema import METHODS
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.profiling import KernelTime
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.tools.bench_timing import BenchRow, device_stages, format_rows, time_ms
import cv2

SIZES = ((640, 480), (1280, 720))
DIS_PRESETS = {'DIS ULTRAFAST': cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
               'DIS FAST': cv2.DISOPTICAL_FLOW_PRESET_FAST,
               'DIS MEDIUM': cv2.DISOPTICAL_FLOW_PRESET_MEDIUM}


def farneback(f0, f1):
    """opencv_apps' fback_flow parameters (the ROS baseline)."""
    return cv2.calcOpticalFlowFarneback(f0, f1, None, 0.5, 3, 15, 3, 5, 1.2, 0)


def dis(preset: int) -> Callable:
    solver = cv2.DISOpticalFlow_create(preset)
    return lambda f0, f1: solver.calc(f0, f1, None)


def opencv_cases() -> dict[str, Callable]:
    """List OpenCV's flow functions; they take ndarrays (CPU) or UMats (OpenCV's OpenCL path)."""
    return {**{name: dis(preset) for name, preset in DIS_PRESETS.items()},
            'Farneback': farneback}


def streaming(method: str, raws: list):
    """For a runtime: an estimator fed alternately with the two frames, one ``push`` a call."""
    def prepare(runtime: ClRuntime) -> Callable[[], object]:
        estimator = FlowEstimator(runtime, {'method': method})
        frames = itertools.cycle(raws)
        estimator.push(next(frames))
        return lambda: estimator.push(next(frames), copy=False)  # as flow_node calls it
    return prepare


def run(device: str, repeats: int, sizes=SIZES) -> list[BenchRow]:
    runtime = ClRuntime(device)
    rows: list[BenchRow] = []
    for width, height in sizes:
        sample = flow_pair(height, width, motion='translation', seed=0)
        frames = [sample.frame0, sample.frame1]
        raws = [gray_to_raw(f) for f in frames]
        for method in METHODS:
            step = streaming(method, raws)(runtime)
            rows.append(BenchRow(method, runtime.entry.name, width, height,
                                 *time_ms(step, repeats),
                                 device_stages(device, streaming(method, raws))))
        cv2.ocl.setUseOpenCL(False)
        for name, fn in opencv_cases().items():
            rows.append(BenchRow(name, f'OpenCV CPU ({cv2.getNumThreads()} threads)', width,
                                 height, *time_ms(lambda: fn(*frames), repeats)))
        if runtime.entry.is_gpu and cv2.ocl.haveOpenCL():
            cv2.ocl.setUseOpenCL(True)
            umats = [cv2.UMat(f) for f in frames]
            for name, fn in opencv_cases().items():
                rows.append(BenchRow(name, f'OpenCV OpenCL ({cv2.ocl.Device.getDefault().name()})',
                                     width, height, *time_ms(lambda: fn(*umats).get(), repeats)))
            cv2.ocl.setUseOpenCL(False)
    return rows


KERNEL_METHODS = ('lk', 'hs', 'bm')


def kernel_times(device: str, method: str, size: tuple[int, int], frames: int = 3,
                 formulation: str | None = None,
                 params: dict | None = None) -> dict[str, KernelTime]:
    """
    Launches and device ms per frame of each kernel of ``method`` (mean over ``frames``).

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


def print_kernels(device: str, sizes, formulation: str, frames: int) -> None:
    """Print per method and size: kernel, launches per frame, device ms per frame."""
    formulation = None if formulation == 'device' else formulation
    chosen = formulation or ClRuntime(device).limits.formulation
    print(f'Flow kernels, per frame (mean of {frames} frames), {chosen} formulation')
    for method, size in itertools.product(KERNEL_METHODS, sizes):
        times = kernel_times(device, method, size, frames, formulation)
        print(f'\n{method} {size[0]}x{size[1]}\n{"kernel":<20} {"launches":>9} {"ms":>9}')
        for name, time in sorted(times.items(), key=lambda item: -item[1].ms):
            print(f'{name:<20} {time.launches:>9} {time.ms:>9.2f}')
        print(f'{"total":<20} {sum(t.launches for t in times.values()):>9} '
              f'{sum(t.ms for t in times.values()):>9.2f}')


def main(args: argparse.Namespace) -> None:
    if getattr(args, 'kernels', None):
        print_kernels(args.device, args.sizes, args.kernels, min(args.repeats, 5))
        return
    print('Dense optical flow, ms per frame (ours: upload + pyramid + flow + download)')
    print(format_rows(run(args.device, args.repeats), 'DIS MEDIUM cpu',
                      lambda r: r.method == 'DIS MEDIUM' and r.where.startswith('OpenCV CPU')))
