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
convert_node: decode any supported image encoding on the OpenCL device.

Subscribes ``image`` (mono8/16, bgr8, rgb8, bgra8, rgba8, 32FC1, 32FC2, Bayer, YUV 4:2:2, padded
rows, either byte order) and publishes ``image_out``: gray as mono8 or 32FC1 (times ``gain``),
or the input encoding with packed little-endian rows (``passthrough``). It is the front end of
the vision nodes on its own: useful to feed mono8 to consumers of a Bayer or YUV camera.
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.imaging.schema import CONVERT_SCHEMA
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_port import ImageFrame
from cl_vision_nodes.ros.node_process import main_for
from cl_vision_nodes.ros.stop_signals import StopSignals
from cl_vision_nodes.ros.topics import image_input, NodeTopics, Topic
from cl_vision_nodes.ros.warm_up import warm_pair
from sensor_msgs.msg import Image


class ConvertNode(VisionNode):
    SCHEMA = CONVERT_SCHEMA
    OUTPUTS = (Topic('image_out', Image),)

    @classmethod
    def topics(cls, values: Mapping[str, Value]) -> NodeTopics:
        return NodeTopics((image_input('image', values),), cls.OUTPUTS)

    def build(self) -> None:
        """Nothing beyond the node's DeviceImages: its programs build with the runtime."""

    def connect(self) -> None:
        self.publisher, = (self.port.output(t) for t in self.OUTPUTS)
        self.subscribe_images('image', self.on_image)

    def warm(self, width: int, height: int, values: Mapping[str, Value]) -> None:
        self.images.convert(warm_pair(width, height)[0], values['output_encoding'],
                            values['gain'])

    def on_image(self, frame: ImageFrame) -> None:
        with self.port.device_stage('compute'):
            out = self.images.convert(frame.raw, self.params['output_encoding'],
                                      self.params['gain'])
        self.port.publish_raw(self.publisher, frame.header, out)


def main(stop: StopSignals | None = None) -> None:
    main_for(ConvertNode, stop)


if __name__ == '__main__':
    main()
