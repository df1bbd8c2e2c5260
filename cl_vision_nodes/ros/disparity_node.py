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
disparity_node: ELAS stereo on the OpenCL device, from a pair to disparity, depth and points.

The pair is rectified or raw: image_proc's rectify, stereo_image_proc's disparity_node and
point_cloud_node in one process. Inputs: ``stereo_inputs`` (left/right images and
camera_infos, synchronised exactly or approximately); outputs: ``disparity_capability``
(disparity, disparity/color, depth, points).
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.disparity_capability import DisparityCapability
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_port import ImageFrame
from cl_vision_nodes.ros.node_process import main_for
from cl_vision_nodes.ros.stereo_inputs import StereoInputs
from cl_vision_nodes.ros.stop_signals import StopSignals
from cl_vision_nodes.ros.topics import NodeTopics
from cl_vision_nodes.ros.warm_up import warm_camera_infos, warm_pair
from sensor_msgs.msg import CameraInfo


class DisparityNode(VisionNode):
    SCHEMA = ELAS_SCHEMA

    @classmethod
    def topics(cls, values: Mapping[str, Value]) -> NodeTopics:
        return NodeTopics(StereoInputs.topics(values), DisparityCapability.OUTPUTS)

    def build(self) -> None:
        self.disparity = DisparityCapability(self.port, self.capability_runtime(), self.images,
                                             self.params)

    def connect(self) -> None:
        self.disparity.connect()
        self.inputs = StereoInputs(self, self.params, self.on_stereo)

    def warm(self, width: int, height: int, values: Mapping[str, Value]) -> None:
        self.disparity.warm(*warm_pair(width, height), *warm_camera_infos(width, height))

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        self.disparity.configure(values)

    def on_stereo(self, left: ImageFrame, right: ImageFrame, left_info: CameraInfo,
                  right_info: CameraInfo) -> None:
        with self.port.device_stage('upload'):
            pair = self.disparity.decode_pair(left, right, left_info, right_info)
        publish_extras = self.disparity.process(left, pair, left_info, right_info)
        publish_extras()


def main(stop: StopSignals | None = None) -> None:
    main_for(DisparityNode, stop)


if __name__ == '__main__':
    main()
