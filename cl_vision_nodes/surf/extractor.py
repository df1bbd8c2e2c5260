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
SurfExtractor: the public entry point of the SURF algorithm layer (no ROS).

One call per frame: ``detect_and_describe(image)`` uploads the message bytes (or a host gray
array), runs every stage on the device and downloads the keypoints and descriptors once.
Stages, profiled under these names: upload/decode (DeviceImages), integral, hessian, detect,
select, orientation, descriptor, download. The only blocking read before the final download is
the candidate count after ``detect`` (it sizes the per-keypoint launches); keypoints and
descriptors then come back in one read. The constructor builds every program (their defines
are sizes from the device's limits, never parameters: ``configure`` applies validated
parameters to the next frame without a build). The extractor owns its device buffers
(``buffers`` for its stages, ``images.buffers`` for the decoded frame), reused across frames of
the same size and settings.

Deviations from OpenCV's SURF are listed where they live: ``detector`` (the keypoint cap),
``describe`` (descriptor cell sampling), ``integral`` (non-8-bit input is rounded to 0..255).
Images smaller than the first filter (9x9) give zero keypoints, not an error.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple

from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw, RawImage
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.surf.describe import Describer
from cl_vision_nodes.surf.detector import HessianDetector
from cl_vision_nodes.surf.integral import DeviceIntegral
from cl_vision_nodes.surf.keypoints import Keypoints, KP_FIELDS
from cl_vision_nodes.surf.schema import SURF_SCHEMA, SurfSettings
import numpy as np
import pyopencl as cl


class DeviceFrame(NamedTuple):
    """
    The last frame's gray and keypoint records where they lie on the device.

    The arguments of ``KeypointPainter.draw`` in its order; overwritten by the next frame.
    """

    gray: cl.Buffer
    height: int
    width: int
    records: cl.Buffer
    count: int
    record_floats: int


class SurfExtractor:
    """SURF keypoints and descriptors of single frames with the current settings."""

    def __init__(self, runtime: ClRuntime, params: Mapping[str, Value] | None = None):
        self.runtime = runtime
        self.values: dict[str, Value] = SURF_SCHEMA.defaults()
        self.settings = SurfSettings.from_values(self.values)
        if params:
            self.configure(params)
        self.buffers = runtime.buffers()
        self.images = DeviceImages(runtime)
        self._integral = DeviceIntegral(runtime, self.buffers)
        self._detector = HessianDetector(runtime, self.buffers, self.images)
        self._describer = Describer(runtime)
        self._frame: tuple[cl.Buffer, tuple[int, int]] | None = None
        self._records: tuple[cl.Buffer, int, int] | None = None  # of _frame, once detected

    def configure(self, params: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on; ParameterError leaves all unchanged."""
        self.values = SURF_SCHEMA.validate(self.values, params, allow_read_only=True)
        self.settings = SurfSettings.from_values(self.values)

    def detect_and_describe(self, image: RawImage | np.ndarray) -> Keypoints:
        """
        Keypoints of a message image or a HxW gray array, strongest first.

        The message may have any supported encoding; the array is uint8, or float on 0..255.
        """
        raw = image if isinstance(image, RawImage) else gray_to_raw(np.asarray(image))
        return self.download_keypoints(self.detect_gray(self.images.decode(raw)))

    def detect_gray(self, gray: DeviceGray) -> int:
        """
        Detect and describe the keypoints of a decoded frame on the device; return their count.

        The records stay on the device (``last_device_frame``) until ``download_keypoints``.
        """
        settings = self.settings
        height, width = gray.height, gray.width
        frame = self.images.floats(gray)  # a mono8 frame decoded on this extractor's queue
        self._frame, self._records = (frame, (height, width)), None
        integ = self._integral.compute(frame, height, width)
        keypoints, count = self._detector.detect(integ, height, width, settings)
        self._records = (keypoints, count, KP_FIELDS + settings.descriptor_length)
        if count:
            self._describer.describe(integ, height, width, keypoints, count, settings.upright,
                                     settings.extended)
        return count

    def download_keypoints(self, count: int) -> Keypoints:
        """Return the ``count`` keypoints of the last ``detect_gray``, strongest first."""
        if self._records is None:
            raise RuntimeError('download_keypoints before the first detect_gray')
        records, _, record_floats = self._records
        if count == 0:
            return Keypoints.empty(record_floats - KP_FIELDS)
        return Keypoints.from_records(
            self.images.download(records, (count, record_floats), np.dtype(np.float32)))

    def frame_gray(self) -> np.ndarray:
        """
        Return the last frame's gray as the device decoded it (HxW float32, 0..255).

        Downloaded once: what a picture of its keypoints is drawn on.
        """
        if self._frame is None:
            raise RuntimeError('frame_gray before the first detect_and_describe')
        gray, shape = self._frame
        return self.images.download(gray, shape, np.dtype(np.float32))

    @property
    def last_device_frame(self) -> DeviceFrame:
        """
        Return the last frame's decoded gray and keypoint records on the device (read-only).

        What the keypoints/image picture is drawn from without a download:
        ``KeypointPainter(runtime).draw(*extractor.last_device_frame, out=...)``.
        """
        if self._frame is None or self._records is None:
            raise RuntimeError('last_device_frame before the first detect_and_describe')
        gray, (height, width) = self._frame
        return DeviceFrame(gray, height, width, *self._records)
