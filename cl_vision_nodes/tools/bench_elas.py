"""`cl-vision bench elas`: ms per frame of ELAS with libelas' stage names, with libelas itself
(pyelas, single thread, when installed) and OpenCV StereoSGBM in the same run.

Frames: a real rectified pair (``--left``/``--right``, resized to each size) or a generated
stereo pair with ground truth. Ours: upload of both images, every stage on the device and the
download of the left map. No ROS imports.
"""
from __future__ import annotations

import argparse

import cv2

from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.tools.bench_timing import BenchRow, device_stages, format_rows, time_ms

SIZES = ((1242, 375), (640, 480), (1280, 720))
SGBM_DISPARITIES = 128


def pair(width: int, height: int, left_path: str | None, right_path: str | None):
    if left_path and right_path:
        return tuple(cv2.resize(read_image(p), (width, height), interpolation=cv2.INTER_AREA)
                     for p in (left_path, right_path))
    sample = stereo_pair(height, width, seed=0, max_disparity=width / 10)
    return sample.left, sample.right


def matching(preset: str, left, right):
    """For ``device_stages``: a matcher on the given runtime and its per-frame call."""
    def prepare(runtime: ClRuntime):
        matcher = ElasMatcher(runtime, PRESETS[preset])
        return lambda: matcher.compute_gray(left, right)
    return prepare


def libelas(preset: str):
    """pyelas' matcher with the same setting, or None where pyelas is not installed."""
    try:
        import elas
    except ImportError:
        return None
    matcher = elas.Elas()
    matcher.set_preset(elas.PRESET_MIDDLEBURY if preset == 'middlebury' else elas.PRESET_ROBOTICS)
    return matcher


def run(device: str, repeats: int, left_path: str | None, right_path: str | None,
        preset: str, sizes=SIZES) -> list[BenchRow]:
    runtime = ClRuntime(device)
    rows: list[BenchRow] = []
    for width, height in sizes:
        left, right = pair(width, height, left_path, right_path)
        call = matching(preset, left, right)(runtime)
        rows.append(BenchRow(f'ELAS {preset}', runtime.entry.name, width, height,
                            *time_ms(call, repeats),
                            device_stages(device, matching(preset, left, right))))
        reference = libelas(preset)
        if reference is not None:
            rows.append(BenchRow(f'libelas {preset}', 'pyelas, 1 thread', width, height,
                                *time_ms(lambda: reference.process(left, right), repeats)))
        elif width == sizes[0][0]:
            print('libelas: pyelas is not installed here, so no libelas row')
        sgbm = cv2.StereoSGBM_create(0, SGBM_DISPARITIES, 5, 8 * 25, 32 * 25)
        rows.append(BenchRow(f'SGBM {SGBM_DISPARITIES}', f'OpenCV CPU ({cv2.getNumThreads()} '
                            'threads)', width, height,
                            *time_ms(lambda: sgbm.compute(left, right), repeats)))
    return rows


def main(args: argparse.Namespace) -> None:
    source = f'{args.left} / {args.right}' if args.left else 'generated stereo pairs'
    print(f'ELAS disparity, ms per frame (upload + all stages + download), {source}')
    print(format_rows(run(args.device, args.repeats, args.left, args.right, args.preset),
                      'SGBM', lambda r: r.method.startswith('SGBM')))
