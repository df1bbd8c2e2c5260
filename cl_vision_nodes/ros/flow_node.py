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
flow_node: dense optical flow between consecutive frames of one camera, on the OpenCL device.

Subscribes ``image``; publishes ``flow`` (32FC2, u,v in pixels per frame from the previous frame
to this one, header of this frame, NaN where the method has no estimate) and ``flow/color``
(Middlebury colour wheel, computed only when subscribed). The first frame publishes nothing; a
change of size or encoding, or a timestamp going backwards (a bag loop), restarts the stream.
"""
from __future__ import annotations

from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.encodings import validate_intensity
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.image_conversion import image_msg_to_raw, numpy_to_image
from cl_vision_nodes.ros.node_base import main_for, VisionNode
from rclpy.time import Time
from sensor_msgs.msg import Image


class FlowNode(VisionNode):
    SCHEMA = FLOW_SCHEMA

    def build(self) -> None:
        self.estimator = FlowEstimator(self.runtime, self.params)

    def connect(self) -> None:
        self.flow_pub = self.output_publisher(Image, 'flow')
        self.color_pub = self.output_publisher(Image, 'flow/color')
        self.subscribe_images(Image, 'image', self.on_image)
        self._stream: tuple[str, int, int] | None = None
        self._last_stamp: Time | None = None

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        self.estimator.configure(values)

    def on_image(self, msg: Image) -> None:
        raw = image_msg_to_raw(msg)
        validate_intensity(raw)  # a bad frame must neither reach nor reset the stream
        stream = (raw.encoding, raw.width, raw.height)
        stamp = Time.from_msg(msg.header.stamp)
        if self._stream is not None and (stream != self._stream or stamp < self._last_stamp):
            why = 'time went backwards' if stream == self._stream else \
                f'{self._stream[0]} {self._stream[1]}x{self._stream[2]} -> ' \
                f'{raw.encoding} {raw.width}x{raw.height}'
            self.get_logger().info(f'flow history reset ({why})')
            self.estimator.reset()
        self._stream, self._last_stamp = stream, stamp
        with self.compute():
            flow = self.estimator.push(raw, copy=False)  # copied into the message below
        if flow is None:
            return
        self.flow_pub.publish(numpy_to_image(flow, '32FC2', msg.header))
        if self.wanted(self.color_pub):
            color = flow_to_color(flow, float(self.params['max_flow']))
            self.color_pub.publish(numpy_to_image(color, 'bgr8', msg.header))


def main() -> None:
    main_for(FlowNode)


if __name__ == '__main__':
    main()
