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
rectify_node: image_proc's rectify on the OpenCL device (image_raw + camera_info -> image_rect).

Subscribes ``image_raw`` and ``camera_info`` (with their publishers' reliability); publishes
``image_rect`` with the raw image's header, in its encoding (mono8, mono16, bgr8, rgb8, bgra8,
rgba8; 32FC1 with a NaN border), Bayer and YUV rectified as their gray (mono8).
``interpolation`` is image_proc's (nearest, linear, cubic, or its numbers 0, 1, 2). The maps
come from the camera_info's K, D, R and P (plumb_bob, rational_polynomial, equidistant) and are
built on the host and uploaded once per calibration: per frame one upload, one kernel, one
download.

Each image is rectified with the newest camera_info received, whatever its stamp: a calibration
is static, and a driver that publishes its camera_info late, or a static camera_info publisher
stamped differently, still works. Unlike image_proc, zero distortion is no shortcut: R and P are
applied (a stereo camera's rectification rotates even an undistorted image). Images before the
first camera_info are skipped, quietly for ``CAMERA_INFO_GRACE_S`` (a driver's first camera_info
may come a moment after its first image), then with a throttled warning that says what publishes
camera_info; images of another size than it, or with an unusable calibration (uncalibrated,
binning, ROI), with a throttled warning.
"""
from __future__ import annotations

import time
from typing import Mapping

from cl_vision_nodes.camera.calibration import CalibrationError
from cl_vision_nodes.camera.camera_info import calibration_from_msg
from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.errors import CLVisionError, PartnerPending
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_port import ImageFrame
from cl_vision_nodes.ros.node_process import main_for
from cl_vision_nodes.ros.stop_signals import StopSignals
from cl_vision_nodes.ros.topics import image_input, NodeTopics, Topic
from cl_vision_nodes.ros.warm_up import warm_camera_infos, warm_pair
from sensor_msgs.msg import CameraInfo, Image

CAMERA_INFO_GRACE_S = 2.0


class RectifyNode(VisionNode):
    SCHEMA = RECTIFY_SCHEMA
    OUTPUTS = (Topic('image_rect', Image),)

    @classmethod
    def topics(cls, values: Mapping[str, Value]) -> NodeTopics:
        return NodeTopics((image_input('image_raw', values), Topic('camera_info', CameraInfo)),
                          cls.OUTPUTS)

    def build(self) -> None:
        self.rectifier = Rectifier(self.runtime)

    def connect(self) -> None:
        self.rect_pub, = (self.port.output(t) for t in self.OUTPUTS)
        self._info: CameraInfo | None = None
        self._uncalibrated_since: float | None = None
        self.info_input = self.subscribe_stream(CameraInfo, 'camera_info', self.on_camera_info)
        self.subscribe_images('image_raw', self.on_image)

    def warm(self, width: int, height: int, values: Mapping[str, Value]) -> None:
        """Rectify a frame on a rectifier of its own: the stream's maps stay."""
        rectifier = Rectifier(self.runtime)
        rectifier.set_calibration(calibration_from_msg(warm_camera_infos(width, height)[0]))
        rectifier.rectify(warm_pair(width, height)[0], str(values['interpolation']))

    def on_camera_info(self, msg: CameraInfo, info: object) -> None:
        self._info = msg

    def on_image(self, frame: ImageFrame) -> None:
        if self._info is None:
            raise self._no_camera_info()
        calibration = calibration_from_msg(self._info)
        if self.rectifier.set_calibration(calibration):
            self.get_logger().info(f'rectification maps of {calibration.describe()}')
        with self.port.device_stage('compute'):
            rectified = self.rectifier.rectify(frame.raw, str(self.params['interpolation']))
        self.port.publish_raw(self.rect_pub, frame.header, rectified)

    def _no_camera_info(self) -> CLVisionError:
        """Wait quietly for a camera_info that comes a moment after the images, then say why."""
        now = time.monotonic()
        if self._uncalibrated_since is None:
            self._uncalibrated_since = now
        if now - self._uncalibrated_since < CAMERA_INFO_GRACE_S:
            return PartnerPending('no camera_info yet')
        return CalibrationError(
            f'no camera_info {CAMERA_INFO_GRACE_S:g} s into the images '
            f"({self.info_input.describe()}): the image is rectified with its camera's "
            'calibration')


def main(stop: StopSignals | None = None) -> None:
    main_for(RectifyNode, stop)


if __name__ == '__main__':
    main()
