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
Where a capability's stage times go: the node's port, or a sum per stage for tune and benches.

Stage names are the node's (``compute``, ``download``, ``visual``, with a capability's prefix in
the pipeline); ``device_stage`` counts the device work the block enqueued on a runtime, waited
for; ``download_stage`` a download into a staging array.
"""
from __future__ import annotations

import contextlib
import time
from typing import ContextManager, Iterator, Protocol

from cl_vision_nodes.opencl.runtime import ClRuntime


class StageClock(Protocol):
    """Times the stages of a frame (``ros.node_port.NodePort`` is the node's)."""

    def stage(self, name: str) -> ContextManager[None]:
        """Count the host time of the block as stage ``name``."""

    def device_stage(self, name: str, runtime: ClRuntime) -> ContextManager[None]:
        """Count the block and the work it enqueued on ``runtime`` (waited for) as ``name``."""

    def download_stage(self, name: str) -> ContextManager[None]:
        """Count a download into a staging array as ``name``."""


class StageTimes:
    """Host seconds per stage name, summed over every block timed (a frame, tune, the benches)."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Add the time spent in the ``with`` block to stage ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - start

    @contextlib.contextmanager
    def device_stage(self, name: str, runtime: ClRuntime) -> Iterator[None]:
        with self.stage(name):
            yield
            runtime.finish()

    def download_stage(self, name: str) -> ContextManager[None]:
        return self.stage(name)
