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
Ms per frame of SURF detect + describe, with OpenCV SIFT and ORB (`cl-vision bench surf`).

Upload and download are included; keypoint count and per-stage device times are reported, with
OpenCV SIFT and ORB in the same run.

Frames are a real image (``--image``, resized) or a generated texture. No ROS imports.
"""
from __future__ import annotations


from cl_vision_nodes.benchmarks.frame_work import extraction
from cl_vision_nodes.benchmarks.timing import BenchRow, device_stages, time_ms
from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.dataio.synthetic import texture
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.extractor import SurfExtractor
import cv2
import numpy as np


SIZES = ((640, 480), (800, 640))
CAPS = (2000, 8000)


def frame(width: int, height: int, image_path: str | None) -> np.ndarray:
    if image_path:
        return cv2.resize(read_image(image_path), (width, height), interpolation=cv2.INTER_AREA)
    return texture(height, width, seed=0).astype(np.uint8)


def run(device: str, repeats: int, image_path: str | None, sizes=SIZES) -> list[BenchRow]:
    runtime = ClRuntime(device)
    rows: list[BenchRow] = []
    for width, height in sizes:
        gray = frame(width, height, image_path)
        raw = array_to_raw(gray, 'mono8')
        for cap in CAPS:
            params = {'max_keypoints': cap}
            extractor = SurfExtractor(runtime, params)
            count = len(extractor.detect_and_describe(raw))
            rows.append(BenchRow(f'SURF max {cap}', runtime.entry.name, width, height,
                                 *time_ms(lambda: extractor.detect_and_describe(raw), repeats),
                                 device_stages(device, extraction(params, raw)),
                                 note=f'{count} kp'))
        where = f'OpenCV CPU ({cv2.getNumThreads()} threads)'
        for name, detector in (('SIFT', cv2.SIFT_create()), ('ORB 2000', cv2.ORB_create(2000))):
            count = len(detector.detectAndCompute(gray, None)[0])
            rows.append(BenchRow(name, where, width, height,
                                 *time_ms(lambda: detector.detectAndCompute(gray, None), repeats),
                                 note=f'{count} kp'))
    return rows
