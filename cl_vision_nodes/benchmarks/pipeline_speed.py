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
The pipeline's device work, one queue against one per capability (`cl-vision bench pipeline`).

What vision_pipeline does with a stereo frame, without DDS: decode the pair once, then ELAS
disparity, flow (the node's method on this device) and SURF on the left image, each downloaded
as its node does. ``sequential``: every capability on the one queue, each waited for before the
next (vision_pipeline before issue 21). ``concurrent``: a queue per capability
(``ClRuntime.sibling``), all started before any is waited for, as vision_pipeline runs them now.
The same frames in both; their outputs are checked equal.
"""
from __future__ import annotations

import itertools
from typing import Callable

from cl_vision_nodes.benchmarks.timing import BenchRow, time_ms
from cl_vision_nodes.capabilities.disparity import DisparityFrames
from cl_vision_nodes.capabilities.flow import FlowFrames
from cl_vision_nodes.capabilities.stages import StageTimes
from cl_vision_nodes.capabilities.surf import SurfFrames
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.schema import SURF_SCHEMA
import numpy as np


Outputs = tuple[np.ndarray, np.ndarray, np.ndarray]  # disparity, flow, keypoint records


def pipeline_frame(runtime: ClRuntime, concurrent: bool, left: np.ndarray,
                   right: np.ndarray, preset: str) -> Callable[[], Outputs]:
    """Return one frame of the pipeline's device work (its capabilities, built on ``runtime``)."""
    queues = [runtime.sibling() for _ in range(3)] if concurrent else [runtime] * 3
    images, clock = DeviceImages(runtime), StageTimes()
    elas = ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), PRESETS[preset], allow_read_only=True)
    disparity = DisparityFrames(queues[0], images, elas, clock)
    flow = FlowFrames(queues[1], FLOW_SCHEMA.defaults(), clock)
    surf = SurfFrames(queues[2], SURF_SCHEMA.defaults(), clock)
    raws = [array_to_raw(image, 'mono8') for image in (left, right)]
    stamps = itertools.count(1)

    def frame() -> Outputs:
        pair = tuple(images.decode(raw, role) for raw, role in zip(raws, ('left', 'right')))
        runtime.finish()
        matched = disparity.start(pair, None, None, None)
        if not concurrent:
            queues[0].finish()
        flowed = flow.start(pair[0], next(stamps), ('mono8', pair[0].width, pair[0].height))
        if not concurrent:
            queues[1].finish()
        described = surf.start(pair[0])  # waits for its count on its queue
        motion = flowed()
        return (matched().published.pixels,
                motion.flow if motion is not None else np.zeros(0, np.float32), described())
    return frame


def run(device: str, sizes: list[tuple[int, int]], repeats: int, preset: str) -> list[BenchRow]:
    rows = []
    for width, height in sizes:
        pair = stereo_pair(height, width, seed=3, max_disparity=32.0)
        runtime = ClRuntime(device)
        frames = {name: pipeline_frame(runtime, name == 'concurrent', pair.left, pair.right,
                                       preset) for name in ('sequential', 'concurrent')}
        outputs = {name: (frame(), frame()) for name, frame in frames.items()}  # flow: 2nd
        for got, want in zip(outputs['concurrent'][1], outputs['sequential'][1]):
            if got.tobytes() != want.tobytes():
                raise AssertionError('the concurrent queues gave other outputs than one queue')
        for name, frame in frames.items():
            rows.append(BenchRow(name, runtime.entry.name, width, height,
                                 *time_ms(frame, repeats)))
    return rows
