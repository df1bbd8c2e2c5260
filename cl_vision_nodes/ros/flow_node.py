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

Subscribes ``image`` (read in place from the serialized message, decoded on the device);
publishes ``flow``, ``flow/color`` and ``flow/span`` (see ``flow_capability``).
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.flow_capability import FlowCapability
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_port import ImageFrame
from cl_vision_nodes.ros.node_process import main_for
from cl_vision_nodes.ros.stop_signals import StopSignals
from cl_vision_nodes.ros.topics import image_input, NodeTopics
from cl_vision_nodes.ros.warm_up import warm_pair


class FlowNode(VisionNode):
    SCHEMA = FLOW_SCHEMA

    @classmethod
    def topics(cls, values: Mapping[str, Value]) -> NodeTopics:
        return NodeTopics((image_input('image', values),), FlowCapability.OUTPUTS)

    def build(self) -> None:
        self.flow = FlowCapability(self.port, self.capability_runtime(), self.params)

    def ready_lines(self) -> list[str]:
        return [self.flow.method_line()]

    def connect(self) -> None:
        self.flow.connect()
        self.subscribe_images('image', self.on_image)

    def warm(self, width: int, height: int, values: Mapping[str, Value]) -> None:
        self.flow.warm(self.images.decode(warm_pair(width, height)[0]))

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        self.flow.configure(values)

    def diagnostic_values(self) -> dict[str, str]:
        return self.flow.diagnostic_values()

    def on_image(self, frame: ImageFrame) -> None:
        publish_picture = self.flow.start_frame(frame)()
        publish_picture()
        self.flow.arm()  # the next frame's launches, enqueued now, wait for its bytes


def main(stop: StopSignals | None = None) -> None:
    main_for(FlowNode, stop)


if __name__ == '__main__':
    main()
