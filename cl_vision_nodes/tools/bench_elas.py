"""`cl-vision bench elas`: ms per frame of ELAS with libelas' stage names, with libelas itself
(pyelas, single thread, when installed) and OpenCV StereoSGBM in the same run.

Frames: a real rectified pair (``--left``/``--right``, resized to each size) or a generated
stereo pair with ground truth. Ours: upload of both images, every stage on the device and the
download of the left map. No ROS imports.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import cv2
import numpy as np

from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.tools.bench_timing import device_stages, time_ms

SIZES = ((1242, 375), (640, 480), (1280, 720))
SGBM_DISPARITIES = 128


@dataclass(frozen=True)
class ElasRow:
    method: str
    where: str
    width: int
    height: int
    mean_ms: float
    best_ms: float
    stages: str = ''


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
        preset: str, sizes=SIZES) -> list[ElasRow]:
    runtime = ClRuntime(device)
    rows: list[ElasRow] = []
    for width, height in sizes:
        left, right = pair(width, height, left_path, right_path)
        call = matching(preset, left, right)(runtime)
        rows.append(ElasRow(f'ELAS {preset}', runtime.entry.name, width, height,
                            *time_ms(call, repeats),
                            device_stages(device, matching(preset, left, right))))
        reference = libelas(preset)
        if reference is not None:
            rows.append(ElasRow(f'libelas {preset}', 'pyelas, 1 thread', width, height,
                                *time_ms(lambda: reference.process(left, right), repeats)))
        elif width == sizes[0][0]:
            print('libelas: pyelas is not installed here, so no libelas row')
        sgbm = cv2.StereoSGBM_create(0, SGBM_DISPARITIES, 5, 8 * 25, 32 * 25)
        rows.append(ElasRow(f'SGBM {SGBM_DISPARITIES}', f'OpenCV CPU ({cv2.getNumThreads()} '
                            'threads)', width, height,
                            *time_ms(lambda: sgbm.compute(left, right), repeats)))
    return rows


def format_table(rows: list[ElasRow]) -> str:
    lines = [f'{"method":<20} {"size":>9} {"mean ms":>9} {"best ms":>9} {"fps":>8} '
             f'{"vs SGBM":>8}  where / device ms per stage']
    for size in sorted({(r.width, r.height) for r in rows}):
        group = [r for r in rows if (r.width, r.height) == size]
        sgbm = next(r.mean_ms for r in group if r.method.startswith('SGBM'))
        for r in group:
            lines.append(f'{r.method:<20} {f"{r.width}x{r.height}":>9} {r.mean_ms:>9.2f} '
                         f'{r.best_ms:>9.2f} {1e3 / r.mean_ms:>8.1f} {sgbm / r.mean_ms:>7.2f}x  '
                         f'{r.where}' + (f' / {r.stages}' if r.stages else ''))
    return '\n'.join(lines)


def main(args: argparse.Namespace) -> None:
    source = f'{args.left} / {args.right}' if args.left else 'generated stereo pairs'
    print(f'ELAS disparity, ms per frame (upload + all stages + download), {source}')
    print(format_table(run(args.device, args.repeats, args.left, args.right, args.preset)))
