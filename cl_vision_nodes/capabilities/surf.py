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
SURF keypoints and descriptors of decoded frames: what surf_node does, without ROS.

Each frame's keypoints come back as records in ``surf.keypoints.point_dtype`` (strongest first,
what the node publishes as its cloud); the picture of a frame's keypoints is drawn on the device
from the records where they lie, only when asked for.
"""
from __future__ import annotations

from typing import Callable, Mapping

from cl_vision_nodes.capabilities.stages import StageClock
from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.surf.draw import KeypointPainter
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.keypoints import Keypoints, point_dtype
import numpy as np


class SurfFrames:
    """The keypoints of decoded frames, and their pictures."""

    def __init__(self, runtime: ClRuntime, values: Mapping[str, Value], clock: StageClock,
                 prefix: str = ''):
        """Build the extractor and painter on ``runtime``; stages named ``prefix*``."""
        self.runtime = runtime
        self.clock = clock
        self.prefix = prefix
        self.extractor = SurfExtractor(runtime, values)
        self.painter = KeypointPainter(runtime)
        self.staging = runtime.buffers()

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.extractor.configure(values)

    @property
    def point_dtype(self) -> np.dtype:
        """Return the records' dtype for the current descriptor length."""
        return point_dtype(self.extractor.settings.descriptor_length)

    def warm(self, gray: DeviceGray) -> None:
        """
        Run every kernel of the current settings on ``gray`` (keypoints and picture).

        The picture goes to an array of its own: the previous frame's may be on its way out.
        """
        count = self.extractor.detect_gray(gray)
        self.extractor.download_keypoints(count)
        self.painter.draw(*self.extractor.last_device_frame)

    def start(self, gray: DeviceGray) -> Callable[[], np.ndarray]:
        """
        Detect the keypoints of ``gray``; it waits for their count.

        Returns its finish: describe, download and return the records. Start it after
        capabilities that do not wait, so their device work runs meanwhile.
        """
        with self.clock.device_stage(self.prefix + 'compute', self.runtime):
            count = self.extractor.detect_gray(gray)

        def finish() -> np.ndarray:
            with self.clock.download_stage(self.prefix + 'download'):
                return self.extractor.download_keypoints(count).to_structured()
        return finish

    def picture(self, gray: DeviceGray) -> np.ndarray:
        """Draw the last frame's keypoints on ``gray`` on the device; return it (bgr8, pinned)."""
        shape = (gray.height, gray.width, 3)
        with self.clock.device_stage(self.prefix + 'visual', self.runtime):
            return self.painter.draw(*self.extractor.last_device_frame,
                                     out=self.staging.pinned('picture', shape, np.uint8))

    def keypoints(self, grays: list[DeviceGray]) -> list[Keypoints]:
        """Return the keypoints of each frame (tune, the benches)."""
        return [Keypoints.from_structured(self.start(gray)()) for gray in grays]
