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
from dataclasses import dataclass

import pyopencl as cl


@dataclass
class KernelTime:
    """Launches of one kernel (or other command) and their summed device time."""

    launches: int = 0
    ms: float = 0.0


class StageProfiler:
    """
    Collects (stage, kernel, event) of one frame; ``collect()`` returns device ms per stage.

    ``collect_kernels()`` returns launches and device ms per kernel instead. Disabled profilers
    ignore events, so algorithm code records unconditionally at no cost.
    """

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._events: list[tuple[str, str, cl.Event]] = []

    def record(self, stage: str, event: cl.Event | None, kernel: str | None = None) -> None:
        """Record ``event`` of ``stage``; ``kernel``: its kernel's name (else ``[stage]``)."""
        if self.enabled and event is not None:
            self._events.append((stage, kernel or f'[{stage}]', event))

    def _drain(self, key: int) -> dict[str, KernelTime]:
        totals: dict[str, KernelTime] = defaultdict(KernelTime)
        for entry in self._events:
            event = entry[2]
            event.wait()
            total = totals[entry[key]]
            total.launches += 1
            total.ms += (event.profile.end - event.profile.start) * 1e-6
        self._events.clear()
        return dict(totals)

    def collect(self) -> dict[str, float]:
        """Wait for the recorded events and sum their execution time per stage, in ms."""
        return {stage: total.ms for stage, total in self._drain(0).items()}

    def collect_kernels(self) -> dict[str, KernelTime]:
        """Wait for the recorded events; return launches and device ms per kernel name."""
        return self._drain(1)
