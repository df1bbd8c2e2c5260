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
surf_node: SURF keypoints and descriptors of every frame, on the OpenCL device.

Subscribes ``image``; publishes ``keypoints`` (sensor_msgs/PointCloud2, one point per keypoint,
strongest first; an empty cloud when a frame has none) and ``keypoints/image`` (the frame with
the keypoints drawn; computed only when subscribed).
"""
from __future__ import annotations

from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.image_conversion import image_msg_to_raw, numpy_to_image
from cl_vision_nodes.ros.keypoint_cloud import keypoints_to_cloud
from cl_vision_nodes.ros.node_base import main_for, VisionNode
from cl_vision_nodes.surf.draw import draw_keypoints
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.schema import SURF_SCHEMA
from sensor_msgs.msg import Image, PointCloud2


class SurfNode(VisionNode):
    SCHEMA = SURF_SCHEMA

    def build(self) -> None:
        self.extractor = SurfExtractor(self.runtime, self.params)

    def connect(self) -> None:
        self.keypoints_pub = self.output_publisher(PointCloud2, 'keypoints')
        self.image_pub = self.output_publisher(Image, 'keypoints/image')
        self.subscribe_images(Image, 'image', self.on_image)

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        self.extractor.configure(values)

    def on_image(self, msg: Image) -> None:
        raw = image_msg_to_raw(msg)
        with self.compute():
            keypoints = self.extractor.detect_and_describe(raw)
        self.keypoints_pub.publish(keypoints_to_cloud(keypoints, msg.header))
        if self.wanted(self.image_pub):
            picture = draw_keypoints(self.extractor.frame_gray(), keypoints)
            self.image_pub.publish(numpy_to_image(picture, 'bgr8', msg.header))


def main() -> None:
    main_for(SurfNode)


if __name__ == '__main__':
    main()
