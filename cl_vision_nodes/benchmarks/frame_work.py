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
One frame's device work of each node kind, prepared on a runtime, as the benches time it.

Each function returns ``prepare(runtime) -> call``: what ``timing.device_stages`` and
``timing.time_ms`` take, so a bench builds its programs once and times the calls alone.
"""
from __future__ import annotations

import itertools
import time
from typing import Callable, Mapping

from cl_vision_nodes.capabilities.disparity import DisparityFrames
from cl_vision_nodes.capabilities.flow import FlowFrames
from cl_vision_nodes.capabilities.stages import StageTimes
from cl_vision_nodes.capabilities.surf import SurfFrames
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.surf.schema import SURF_SCHEMA


class FlowStream:
    """
    flow_node's frame work, fed the frames in turn: a frame a call, from its bytes to its flow.

    Upload and decode on the device, then ``capabilities.flow``'s frame (pyramid, flow,
    download). ``between`` is what the node does after publishing (``FlowFrames.arm``: the next
    frame's launches enqueued ahead); the benches call it between the timed calls.
    """

    def __init__(self, runtime: ClRuntime, method: str, raws: list,
                 params: Mapping[str, Value] | None = None):
        values = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), {**(params or {}), 'method': method})
        self.flow = FlowFrames(runtime, values, StageTimes())
        self.frames = itertools.cycle(raws)
        self.stamps = itertools.count(1)
        self.between_s: list[float] = []
        self()

    def __call__(self) -> object:
        return self.flow.start_frame(next(self.frames), next(self.stamps))()

    def between(self) -> None:
        """Enqueue the next frame ahead (``FlowFrames.arm``), timed into ``between_s``."""
        start = time.perf_counter()
        self.flow.arm()
        self.between_s.append(time.perf_counter() - start)


def streaming(method: str, raws: list,
              params: Mapping[str, Value] | None = None) -> Callable[[ClRuntime], FlowStream]:
    """For a runtime: flow_node's frame work (``FlowStream``)."""
    return lambda runtime: FlowStream(runtime, method, raws, params)


def matching(preset: str, left, right):
    """For a runtime: disparity_node's frame work on a rectified gray pair (decode, match, map)."""
    def prepare(runtime: ClRuntime):
        values = ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), PRESETS[preset],
                                      allow_read_only=True)
        disparity = DisparityFrames(runtime, DeviceImages(runtime), values, StageTimes())
        raws = (gray_to_raw(left), gray_to_raw(right))
        return lambda: disparity.start(disparity.decode_pair(*raws, None, None), None, None,
                                       None)().published
    return prepare


def extraction(params: dict, raw):
    """For a runtime: surf_node's frame work (decode, then ``capabilities.surf``'s frame)."""
    def prepare(runtime: ClRuntime):
        surf = SurfFrames(runtime, SURF_SCHEMA.validate(SURF_SCHEMA.defaults(), params),
                          StageTimes())
        images = DeviceImages(runtime)
        return lambda: surf.start(images.decode(raw))()
    return prepare
