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

"""A CapabilityPort without a node: it keeps what a capability publishes and the stages timed."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.cdr import Framing
from cl_vision_nodes.ros.topics import Topic
import numpy as np


@dataclass
class Published:
    """One publish: the output's name, what kind of publish, and a copy of what went out."""

    topic: str
    kind: str  # 'image' (pixels), 'serialized' (the message's bytes) or 'message'
    value: Any
    stage: str


class FakePort:
    """Every publish at once into ``published``; ``wanted`` names the outputs with listeners."""

    def __init__(self, wanted: set[str] = frozenset()):
        self.wanted_topics = set(wanted)
        self.published: list[Published] = []
        self.stages: list[str] = []
        self.lines: list[str] = []

    def output(self, topic: Topic) -> str:
        return topic.name

    def wanted(self, output: str) -> bool:
        return output in self.wanted_topics

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.stages.append(name)
        yield

    @contextlib.contextmanager
    def device_stage(self, name: str, runtime: ClRuntime) -> Iterator[None]:
        self.stages.append(name)
        yield
        runtime.finish()

    @contextlib.contextmanager
    def download_stage(self, name: str) -> Iterator[None]:
        self.stages.append(name)
        yield

    def publish_image(self, output: str, header: Any, encoding: str, pixels: np.ndarray,
                      stage: str = 'publish') -> None:
        self.published.append(Published(output, 'image', (encoding, pixels.copy()), stage))

    def publish_serialized(self, output: str, framing: Framing, payload: Any,
                           stage: str = 'publish') -> None:
        self.published.append(Published(output, 'serialized', framing.join(payload), stage))

    def publish_message(self, output: str, msg: Any, stage: str = 'publish') -> None:
        self.published.append(Published(output, 'message', msg, stage))

    def log(self, line: str, once: str = '') -> None:
        self.lines.append(line)

    def take(self) -> list[Published]:
        """Return what was published since the last call."""
        taken, self.published = self.published, []
        return taken
