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
surf_node's outputs, for surf_node and the pipeline node alike: ``capabilities.surf`` published.

Publishes ``keypoints`` (sensor_msgs/PointCloud2, one point per keypoint, strongest first; an
empty cloud when a frame has none; layout in ``keypoint_cloud``) and ``keypoints/image`` (the
frame with its keypoints, drawn on the device from the records where they lie and downloaded
finished, only while subscribed, after the frame's answers: ``process`` returns it).
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.capabilities.surf import SurfFrames
from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.cdr import cloud_framing
from cl_vision_nodes.ros.keypoint_cloud import point_fields
from cl_vision_nodes.ros.node_port import (CapabilityPort, Finish, Followup, ImageFrame,
                                           nothing_more)
from cl_vision_nodes.ros.topics import Topic
from sensor_msgs.msg import Image, PointCloud2


class SurfCapability:
    """SURF keypoints and descriptors of decoded frames, published with their picture."""

    OUTPUTS = (Topic('keypoints', PointCloud2), Topic('keypoints/image', Image))

    def __init__(self, port: CapabilityPort, runtime: ClRuntime, values: Mapping[str, Value],
                 prefix: str = ''):
        """Build the frame-level SURF on ``runtime``, timed on the port; stages ``prefix*``."""
        self.port = port
        self.prefix = prefix
        self.frames = SurfFrames(runtime, values, port, prefix)

    def connect(self) -> None:
        self.keypoints_pub, self.image_pub = map(self.port.output, self.OUTPUTS)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.frames.configure(values)

    def warm(self, gray: DeviceGray) -> None:
        """Run every kernel of the current settings on ``gray`` (``SurfFrames.warm``)."""
        self.frames.warm(gray)

    def process(self, frame: ImageFrame, gray: DeviceGray) -> Followup:
        """Detect and describe the keypoints of a decoded frame and publish them."""
        return self.start(frame, gray)()

    def start(self, frame: ImageFrame, gray: DeviceGray) -> Finish:
        """
        Detect the keypoints on this capability's queue; it waits for their count.

        Returns its finish: describe, download and publish them, and return the followup (the
        picture, if subscribed). Start it after capabilities that do not wait, so their device
        work runs meanwhile.
        """
        done = self.frames.start(gray)
        port, stage = self.port, self.prefix + 'publish'

        def finish() -> Followup:
            records = done()
            dtype = self.frames.point_dtype
            framing = cloud_framing(frame.header, 1, len(records), point_fields(dtype),
                                    dtype.itemsize, dtype.itemsize * len(records))
            port.publish_serialized(self.keypoints_pub, framing, records, stage)
            if not port.wanted(self.image_pub):
                return nothing_more

            def picture() -> None:
                port.publish_image(self.image_pub, frame.header, 'bgr8',
                                   self.frames.picture(gray), stage)
            return picture
        return finish
