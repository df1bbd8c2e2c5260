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
vision_pipeline: flow, SURF and ELAS disparity of one camera in one process and one OpenCL context.

Each image crosses DDS and the bus once: the node reads it in place, decodes (or, with
``disparity.rectify``, rectifies) it on the device once, and hands the same device frame to
every enabled capability. It publishes the topics of the separate nodes (``flow``,
``flow/color``, ``flow/span``, ``keypoints``, ``keypoints/image``, ``disparity``,
``disparity/color``, ``depth``, ``points``) and flow_node's diagnostics keys (``flow_spans``...,
named alike so a consumer reads either node), with their parameters under ``flow.``, ``surf.``
and ``disparity.``; ``<name>.enabled`` switches a capability off and on while running (flow
starts a new stream when switched back on).

Inputs: with ``stereo`` (default) those of disparity_node (``stereo_inputs``); flow and SURF run
on the left image of each pair, which is published after disparity. Without it, one camera on
``image``, and no disparity nor its topics. Each frame's answers (``disparity``, ``flow``,
``keypoints``) are published first, then the pictures, depth and points that are subscribed,
so those never delay another capability's answer. Frame timing stages are named per capability
(``flow.compute``...) beside the shared ``receive`` and ``upload``.

A separate node's parameter file applies to its section: ``--flow-params FILE`` (before
``--ros-args``, as the launch files pass ``flow_params``) puts its ``method: hs`` in
``flow.method`` (ros/start_parameters.py).
"""
from __future__ import annotations

from typing import Mapping

from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.params import section, Value
from cl_vision_nodes.ros.disparity_capability import DisparityCapability
from cl_vision_nodes.ros.flow_capability import FlowCapability
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_port import Finish, ImageFrame
from cl_vision_nodes.ros.node_process import main_for
from cl_vision_nodes.ros.stereo_inputs import StereoInputs
from cl_vision_nodes.ros.stop_signals import StopSignals
from cl_vision_nodes.ros.surf_capability import SurfCapability
from cl_vision_nodes.ros.topics import image_input, NodeTopics
from cl_vision_nodes.ros.warm_up import warm_camera_infos, warm_pair
from cl_vision_nodes.schemas import CAPABILITIES, PIPELINE_SCHEMA
from sensor_msgs.msg import CameraInfo


class VisionPipeline(VisionNode):
    SCHEMA = PIPELINE_SCHEMA
    SECTIONS = CAPABILITIES

    @classmethod
    def topics(cls, values: Mapping[str, Value]) -> NodeTopics:
        if not values['stereo']:  # one camera: no disparity, nor its topics
            return NodeTopics((image_input('image', values),),
                              FlowCapability.OUTPUTS + SurfCapability.OUTPUTS)
        inputs = StereoInputs.topics(section(values, 'disparity', CAPABILITIES['disparity']))
        return NodeTopics(inputs, FlowCapability.OUTPUTS + SurfCapability.OUTPUTS
                          + DisparityCapability.OUTPUTS)

    def build(self) -> None:
        """Build every capability, enabled or not, so switching one on never compiles."""
        values = self.params
        parts = {name: section(values, name, schema) for name, schema in CAPABILITIES.items()}
        self.flow = FlowCapability(self.port, self.capability_runtime(), parts['flow'], 'flow.')
        self.surf = SurfCapability(self.port, self.capability_runtime(), parts['surf'], 'surf.')
        self.disparity = DisparityCapability(self.port, self.capability_runtime(), self.images,
                                             parts['disparity'], 'disparity.')

    def ready_lines(self) -> list[str]:
        return [self.flow.method_line()]

    def connect(self) -> None:
        self.flow.connect()
        self.surf.connect()
        if self.params['stereo']:
            self.disparity.connect()
            self.inputs = StereoInputs(self, section(self.params, 'disparity',
                                                     CAPABILITIES['disparity']), self.on_stereo)
        else:
            self.subscribe_images('image', self.on_image)

    def enabled(self, name: str) -> bool:
        return bool(self.params[f'{name}.enabled'])

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        capabilities = {'flow': self.flow, 'surf': self.surf, 'disparity': self.disparity}
        for name, schema in CAPABILITIES.items():
            if any(key.startswith(f'{name}.') and key != f'{name}.enabled' for key in changed):
                capabilities[name].configure(section(values, name, schema))
        if 'flow.enabled' in changed and values['flow.enabled']:
            self.flow.reset()

    def warm(self, width: int, height: int, values: Mapping[str, Value]) -> None:
        """Warm the enabled capabilities on one decode, as a frame runs them."""
        left, right = warm_pair(width, height)
        gray = self.disparity.warm(left, right, *warm_camera_infos(width, height),
                                   match=bool(values['disparity.enabled'])) \
            if values['stereo'] else self.images.decode(left)
        for name, capability in (('flow', self.flow), ('surf', self.surf)):
            if values[f'{name}.enabled']:
                capability.warm(gray)

    def diagnostic_values(self) -> dict[str, str]:
        return self.flow.diagnostic_values()

    def on_image(self, frame: ImageFrame) -> None:
        run_all(self.start_capabilities(frame, self.decode(frame)))

    def on_stereo(self, left: ImageFrame, right: ImageFrame, left_info: CameraInfo,
                  right_info: CameraInfo) -> None:
        stereo = self.enabled('disparity')
        with self.port.device_stage('upload'):
            pair = self.disparity.decode_pair(left, right, left_info, right_info) if stereo \
                else (self.disparity.decode(left, left_info, 0),)
        started = [self.disparity.start(left, pair, left_info, right_info)] if stereo else []
        run_all(started + self.start_capabilities(left, pair[0]))

    def start_capabilities(self, frame: ImageFrame, gray: DeviceGray) -> list[Finish]:
        """
        Start the enabled single-image capabilities on a decoded frame; return their finishes.

        SURF last: its start waits for its keypoint count while the others' work runs.
        """
        return [capability.start(frame, gray)
                for name, capability in (('flow', self.flow), ('surf', self.surf))
                if self.enabled(name)]


def run_all(started: list[Finish]) -> None:
    """
    Finish every started capability in order, then run their followups.

    Each waits for its own queue, publishes its answer, then the pictures, depth and points go
    out once every answer of the frame is out.
    """
    for followup in [finish() for finish in started]:
        followup()


def main(stop: StopSignals | None = None) -> None:
    main_for(VisionPipeline, stop)


if __name__ == '__main__':
    main()
