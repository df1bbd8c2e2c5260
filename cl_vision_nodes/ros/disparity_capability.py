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
disparity_node's outputs, for disparity_node and the pipeline node alike.

``capabilities.disparity`` published, every output with the left image's header (its optical
frame and the pair's stamp):
- ``disparity`` (stereo_msgs/DisparityImage: 32FC1 in pixels, ``f`` = fx of the left camera,
  ``T`` = baseline from the right P, invalid pixels below ``min_disparity``, ``valid_window`` =
  the bounding box of valid pixels) and ``disparity/color`` (drawn on the device, only when
  subscribed; its range follows the data or ``color_min``/``color_max``);
- ``depth`` (32FC1 metres, REP 118: NaN where there is no depth, +inf at infinity) and
  ``points`` (PointCloud2 x, y, z float32 [+ rgb] in the left rectified camera frame, as
  stereo_image_proc's point_cloud_node packs it), each only while subscribed.

With ``subsampling`` the published map is W/2 x H/2 and the DisparityImage describes that image:
its disparities, ``f``, ``min_disparity``, ``max_disparity`` and ``delta_d`` are in its pixels
(half those of the input), ``T`` is unchanged, so ``depth = f * T / d`` still holds and ``f``
matches the image as a camera_info with binning 2 would; ``depth`` and ``points`` are of the
half-size map too.
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.capabilities.disparity import DisparityAnswer, DisparityFrames
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import RawImage
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.cdr import cloud_framing, disparity_framing
from cl_vision_nodes.ros.node_port import (CapabilityPort, Finish, Followup, ImageFrame,
                                           nothing_more)
from cl_vision_nodes.ros.topics import Topic
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage


class DisparityCapability:
    """ELAS disparity of synchronised pairs, with depth, points and the colour map."""

    OUTPUTS = (Topic('disparity', DisparityImage), Topic('disparity/color', Image),
               Topic('depth', Image), Topic('points', PointCloud2))

    def __init__(self, port: CapabilityPort, runtime: ClRuntime, images: DeviceImages,
                 values: Mapping[str, Value], prefix: str = ''):
        """
        Build the frame-level disparity on ``runtime``, timed on the port; stages ``prefix*``.

        ``images`` decodes the pair where it is not rectified (the node's, shared with its other
        capabilities).
        """
        self.port = port
        self.prefix = prefix
        self.frames = DisparityFrames(runtime, images, values, port, port.log, prefix)

    def connect(self) -> None:
        self.disparity_pub, self.color_pub, self.depth_pub, self.points_pub = map(
            self.port.output, self.OUTPUTS)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.frames.configure(values)

    def decode_pair(self, left: ImageFrame, right: ImageFrame, left_info: CameraInfo,
                    right_info: CameraInfo) -> tuple[DeviceGray, DeviceGray]:
        """Return the pair as gray on the device, after checking that it matches."""
        return self.frames.decode_pair(left.raw, right.raw, left_info, right_info)

    def decode(self, frame: ImageFrame, info: CameraInfo, side: int) -> DeviceGray:
        """Return one image of the pair as gray on the device (``DisparityFrames.decode``)."""
        return self.frames.decode(frame.raw, info, side)

    def warm(self, left: RawImage, right: RawImage, left_info: CameraInfo,
             right_info: CameraInfo, match: bool = True) -> DeviceGray:
        """Run every kernel of the current settings on a pair (``DisparityFrames.warm``)."""
        return self.frames.warm(left, right, left_info, right_info, match)

    def process(self, left: ImageFrame, pair: tuple[DeviceGray, DeviceGray],
                left_info: CameraInfo, right_info: CameraInfo) -> Followup:
        """Match a decoded pair and publish the disparity (``start``, then its finish)."""
        return self.start(left, pair, left_info, right_info)()

    def start(self, left: ImageFrame, pair: tuple[DeviceGray, DeviceGray],
              left_info: CameraInfo, right_info: CameraInfo) -> Finish:
        """
        Enqueue the matching of a decoded pair on this capability's queue, without waiting.

        Returns its finish: publish the disparity, and return the followup (whatever else is
        subscribed: its picture, depth, points).
        """
        port = self.port
        want_depth, want_points = port.wanted(self.depth_pub), port.wanted(self.points_pub)
        want_picture = port.wanted(self.color_pub)
        done = self.frames.start(pair, left.raw, left_info, right_info,
                                 colour=want_points and bool(self.frames.values['use_color']))
        stage = self.prefix + 'publish'

        def finish() -> Followup:
            answer = done()
            self._publish_disparity(answer, left)
            if not (want_picture or want_depth or want_points):
                return nothing_more

            def extras() -> None:
                if want_picture:
                    port.publish_image(self.color_pub, left.header, 'bgr8',
                                       self.frames.picture(answer), stage)
                if want_depth:
                    port.publish_image(self.depth_pub, left.header, '32FC1',
                                       self.frames.depth(answer), stage)
                if want_points:
                    cloud = self.frames.points(answer)
                    framing = cloud_framing(left.header, cloud.height, cloud.width,
                                            cloud.layout.fields, cloud.point_step,
                                            cloud.row_step, cloud.is_dense)
                    port.publish_serialized(self.points_pub, framing, cloud.data, stage)
            return extras
        return finish

    def _publish_disparity(self, answer: DisparityAnswer, left: ImageFrame) -> None:
        """Publish the DisparityImage (made on the device)."""
        framing = disparity_framing(left.header, answer.rows, answer.cols, f=answer.f,
                                    t=answer.baseline, valid_window=answer.published.valid_window,
                                    min_disparity=answer.min_disparity,
                                    max_disparity=answer.max_disparity, delta_d=answer.delta_d)
        self.port.publish_serialized(self.disparity_pub, framing, answer.published.pixels,
                                     self.prefix + 'publish')
