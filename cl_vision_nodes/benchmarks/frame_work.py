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
One frame's device work of each capability, prepared on a runtime, as the benches time it.

Each function returns ``prepare(runtime) -> call``: what ``timing.device_stages`` and
``timing.time_ms`` take, so a bench builds its programs once and times the calls alone.
"""
from __future__ import annotations

import itertools
from typing import Callable, Mapping

from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.surf.extractor import SurfExtractor


def streaming(method: str, raws: list, params: Mapping[str, Value] | None = None):
    """For a runtime: an estimator fed alternately with the two frames, one ``push`` a call."""
    def prepare(runtime: ClRuntime) -> Callable[[], object]:
        estimator = FlowEstimator(runtime, {**(params or {}), 'method': method})
        frames = itertools.cycle(raws)
        estimator.push(next(frames))
        return lambda: estimator.push(next(frames), copy=False)  # as flow_node calls it
    return prepare


def matching(preset: str, left, right):
    """For ``device_stages``: a matcher on the given runtime and its per-frame call."""
    def prepare(runtime: ClRuntime):
        matcher = ElasMatcher(runtime, PRESETS[preset])
        return lambda: matcher.compute_gray(left, right)
    return prepare


def extraction(params: dict, raw):
    """For ``device_stages``: an extractor on the given runtime and its per-frame call."""
    def prepare(runtime: ClRuntime):
        extractor = SurfExtractor(runtime, params)
        return lambda: extractor.detect_and_describe(raw)
    return prepare
