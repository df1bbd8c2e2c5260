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
What flow_node does with a decoded frame, for flow_node and the pipeline node alike.

Publishes ``flow`` (32FC2, u,v in pixels per frame from the previous frame to this one, header
of this frame, NaN where the method has no estimate) and ``flow/color`` (the Middlebury colour
wheel, drawn on the device and downloaded finished, only while subscribed). The first frame
publishes nothing; a change of size or encoding, or a timestamp going backwards (a bag loop),
restarts the stream. The method that runs is logged after 'ready' (``method_line``) and whenever
it changes: with ``method: auto`` that is dis on a CPU device and hs on a GPU.
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.flow.colorwheel import FlowColorizer
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.node_base import ImageFrame, VisionNode
from cl_vision_nodes.ros.topics import Topic
import numpy as np
from sensor_msgs.msg import Image


class FlowCapability:
    """Dense optical flow of a stream of decoded frames, published with its picture."""

    OUTPUTS = (Topic('flow', Image), Topic('flow/color', Image))

    def __init__(self, node: VisionNode, values: Mapping[str, Value], prefix: str = ''):
        """Build the estimator and colour wheel on the node's runtime; stages named ``prefix*``."""
        self.node = node
        self.prefix = prefix
        self.estimator = FlowEstimator(node.runtime, values)
        self.colorizer = FlowColorizer(node.runtime)
        self.staging = node.runtime.buffers()
        self.max_flow = float(values['max_flow'])
        self._stream: tuple[str, int, int] | None = None
        self._last_stamp = 0
        self._announced = ''

    def connect(self) -> None:
        self.flow_pub, self.color_pub = (self.node.output_publisher(t.msg_type, t.name)
                                         for t in self.OUTPUTS)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.estimator.configure(values)
        self.max_flow = float(values['max_flow'])
        self._announce_method()

    def method_line(self) -> str:
        """Return the log line naming the method that runs (and why, for auto)."""
        method = self._announced = self.estimator.method
        why = ''
        if self.estimator.settings.method == 'auto':
            device = 'a GPU' if self.node.runtime.limits.is_gpu else 'a CPU device'
            why = f' (method auto on {device}; set method to choose another)'
        return f'flow method: {method}{why}'

    def _announce_method(self) -> None:
        """Log the method that runs when a parameter change made it another."""
        if self.estimator.method != self._announced:
            self.node.get_logger().info(self.method_line())

    def reset(self) -> None:
        """Forget the previous frame (the pipeline switched flow off and on)."""
        self.estimator.reset()
        self._stream = None

    def process(self, frame: ImageFrame, gray: DeviceGray) -> None:
        """Push a decoded frame; publish the flow from the previous one."""
        self._follow_stream(frame)
        node, prefix = self.node, self.prefix
        with node.device_stage(prefix + 'compute'):
            flow = self.estimator.push_gray(gray)
        if flow is None:
            return
        with node.download_stage(prefix + 'download'):
            host = self.estimator.download(flow)
        node.publish_image(self.flow_pub, frame.header, '32FC2', host, prefix + 'publish')
        if node.wanted(self.color_pub):
            shape = (gray.height, gray.width, 3)
            with node.device_stage(prefix + 'visual'):
                picture = self.colorizer.draw(flow, gray.height, gray.width, self.max_flow,
                                              out=self.staging.pinned('color', shape, np.uint8))
            node.publish_image(self.color_pub, frame.header, 'bgr8', picture, prefix + 'publish')

    def _follow_stream(self, frame: ImageFrame) -> None:
        raw = frame.raw
        stream = (raw.encoding, raw.width, raw.height)
        if self._stream is not None and (stream != self._stream
                                         or frame.stamp_ns < self._last_stamp):
            why = 'time went backwards' if stream == self._stream else \
                f'{self._stream[0]} {self._stream[1]}x{self._stream[2]} -> ' \
                f'{raw.encoding} {raw.width}x{raw.height}'
            self.node.get_logger().info(f'flow history reset ({why})')
            self.estimator.reset()
        self._stream, self._last_stamp = stream, frame.stamp_ns
