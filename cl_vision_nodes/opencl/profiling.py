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

"""Per-stage device timing from OpenCL profiling events, named like libelas/OpenCV stages."""
from __future__ import annotations

from collections import defaultdict

import pyopencl as cl


class StageProfiler:
    """
    Collects (stage, event) pairs of one frame; ``collect()`` returns device ms per stage.

    Disabled profilers ignore events, so algorithm code records unconditionally at no cost.
    """

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._events: list[tuple[str, cl.Event]] = []

    def record(self, stage: str, event: cl.Event | None) -> None:
        if self.enabled and event is not None:
            self._events.append((stage, event))

    def collect(self) -> dict[str, float]:
        """Wait for the recorded events and sum their execution time per stage, in ms."""
        totals: dict[str, float] = defaultdict(float)
        for stage, event in self._events:
            event.wait()
            totals[stage] += (event.profile.end - event.profile.start) * 1e-6
        self._events.clear()
        return dict(totals)
