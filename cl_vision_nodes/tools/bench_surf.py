"""`cl-vision bench surf`: ms per frame of SURF detect + describe (upload and download included),
keypoint count and per-stage device times, with OpenCV SIFT and ORB in the same run.

Frames are a real image (``--image``, resized) or a generated texture. No ROS imports.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import cv2
import numpy as np

from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.dataio.synthetic import texture
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.tools.bench_timing import device_stages, time_ms

SIZES = ((640, 480), (800, 640))
CAPS = (2000, 8000)


@dataclass(frozen=True)
class SurfRow:
    method: str
    where: str
    width: int
    height: int
    keypoints: int
    mean_ms: float
    best_ms: float
    stages: str = ''


def frame(width: int, height: int, image_path: str | None) -> np.ndarray:
    if image_path:
        return cv2.resize(read_image(image_path), (width, height), interpolation=cv2.INTER_AREA)
    return texture(height, width, seed=0).astype(np.uint8)


def extraction(params: dict, raw):
    """For ``device_stages``: an extractor on the given runtime and its per-frame call."""
    def prepare(runtime: ClRuntime):
        extractor = SurfExtractor(runtime, params)
        return lambda: extractor.detect_and_describe(raw)
    return prepare


def run(device: str, repeats: int, image_path: str | None, sizes=SIZES) -> list[SurfRow]:
    runtime = ClRuntime(device)
    rows: list[SurfRow] = []
    for width, height in sizes:
        gray = frame(width, height, image_path)
        raw = array_to_raw(gray, 'mono8')
        for cap in CAPS:
            params = {'max_keypoints': cap}
            extractor = SurfExtractor(runtime, params)
            count = len(extractor.detect_and_describe(raw))
            rows.append(SurfRow(f'SURF max {cap}', runtime.entry.name, width, height, count,
                                *time_ms(lambda: extractor.detect_and_describe(raw), repeats),
                                device_stages(device, extraction(params, raw))))
        where = f'OpenCV CPU ({cv2.getNumThreads()} threads)'
        for name, detector in (('SIFT', cv2.SIFT_create()), ('ORB 2000', cv2.ORB_create(2000))):
            count = len(detector.detectAndCompute(gray, None)[0])
            rows.append(SurfRow(name, where, width, height, count,
                                *time_ms(lambda: detector.detectAndCompute(gray, None), repeats)))
    return rows


def format_table(rows: list[SurfRow]) -> str:
    lines = [f'{"method":<15} {"size":>8} {"kp":>6} {"mean ms":>9} {"best ms":>9} {"fps":>8} '
             f'{"vs SIFT":>8}  where / device ms per stage']
    for size in sorted({(r.width, r.height) for r in rows}):
        group = [r for r in rows if (r.width, r.height) == size]
        sift = next(r.mean_ms for r in group if r.method == 'SIFT')
        for r in group:
            lines.append(f'{r.method:<15} {f"{r.width}x{r.height}":>8} {r.keypoints:>6} '
                         f'{r.mean_ms:>9.2f} {r.best_ms:>9.2f} {1e3 / r.mean_ms:>8.1f} '
                         f'{sift / r.mean_ms:>7.1f}x  {r.where}'
                         + (f' / {r.stages}' if r.stages else ''))
    return '\n'.join(lines)


def main(args: argparse.Namespace) -> None:
    source = args.image or 'generated texture'
    print(f'SURF detect + describe, ms per frame (upload and download included), {source}')
    print(format_table(run(args.device, args.repeats, args.image)))
