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
flow_node's outputs, for flow_node and the pipeline node alike: ``capabilities.flow`` published.

Publishes ``flow`` (32FC2, u,v in pixels from the previous processed frame to this one, header
of this frame, NaN where the method has no estimate), ``flow/color`` (the Middlebury colour
wheel, drawn on the device and downloaded finished, only while subscribed) and ``flow/span``
with every flow: a sensor_msgs/TimeReference whose header is the flow's (pair them by stamp)
and whose ``time_ref`` is the previous frame's stamp, since frames dropped before the node make
a flow span more than one camera period. The first frame publishes nothing; a change of size or
encoding, a timestamp going backwards (a bag loop) or a gap over ``max_span`` seconds restarts
the stream, so no flow is estimated across it. Diagnostics count the spans, the long ones and
the gap restarts (``flow_span.FlowSpans``). The method that runs is logged after 'ready'
(``method_line``) and whenever it changes: with ``method: auto`` that is dis on a CPU device and
hs on a GPU.
"""
from __future__ import annotations

from typing import Callable, Mapping

from builtin_interfaces.msg import Time
from cl_vision_nodes.capabilities.flow import FlowAnswer, FlowFrames
from cl_vision_nodes.capabilities.flow_span import NS_PER_S
from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.node_port import (CapabilityPort, Finish, Followup, ImageFrame,
                                           nothing_more)
from cl_vision_nodes.ros.topics import Topic
from sensor_msgs.msg import Image, TimeReference

SPAN_SOURCE = 'previous frame'
"""``source`` of the flow/span messages: what their ``time_ref`` is the stamp of."""


class FlowCapability:
    """Dense optical flow of a stream of decoded frames, published with its picture and span."""

    OUTPUTS = (Topic('flow', Image), Topic('flow/color', Image),
               Topic('flow/span', TimeReference))
    """The answer, its picture, then the rest (``cl-vision eval`` records the first two)."""

    def __init__(self, port: CapabilityPort, runtime: ClRuntime, values: Mapping[str, Value],
                 prefix: str = ''):
        """Build the frame-level flow on ``runtime``, timed on the port; stages ``prefix*``."""
        self.port = port
        self.prefix = prefix
        self.frames = FlowFrames(runtime, values, port, port.log, prefix)

    def connect(self) -> None:
        self.flow_pub, self.color_pub, self.span_pub = map(self.port.output, self.OUTPUTS)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.frames.configure(values)

    def method_line(self) -> str:
        """Return the log line naming the method that runs (and why, for auto)."""
        return self.frames.method_line()

    def reset(self) -> None:
        """Forget the previous frame (the pipeline switched flow off and on)."""
        self.frames.reset()

    def warm(self, gray: DeviceGray) -> None:
        """Run every kernel of the current settings on ``gray`` (``FlowFrames.warm``)."""
        self.frames.warm(gray)

    def diagnostic_values(self) -> dict[str, str]:
        """Return the span counts of the diagnostics window, and start a new one."""
        return self.frames.diagnostic_values()

    def start(self, frame: ImageFrame, gray: DeviceGray) -> Finish:
        """
        Enqueue the flow from the previous frame on this capability's queue, without waiting.

        Returns its finish: publish the flow and its span, and return the followup (the colour
        picture, if subscribed).
        """
        raw = frame.raw
        return self._published(frame, self.frames.start(gray, frame.stamp_ns,
                                                        (raw.encoding, raw.width, raw.height)))

    def start_frame(self, frame: ImageFrame) -> Finish:
        """``start`` for a frame uploaded on this queue (or releasing what ``arm`` enqueued)."""
        return self._published(frame, self.frames.start_frame(frame.raw, frame.stamp_ns))

    def arm(self) -> None:
        """Enqueue the next frame's work ahead, after this frame's picture (``FlowFrames.arm``)."""
        self.frames.arm()

    def _published(self, frame: ImageFrame, done: Callable[[], FlowAnswer | None]) -> Finish:
        port, stage = self.port, self.prefix + 'publish'

        def finish() -> Followup:
            answer = done()
            if answer is None:
                return nothing_more
            sec, nanosec = divmod(answer.previous_ns, NS_PER_S)
            span = TimeReference(header=frame.header.to_msg(), source=SPAN_SOURCE,
                                 time_ref=Time(sec=sec, nanosec=nanosec))
            port.publish_image(self.flow_pub, frame.header, '32FC2', answer.flow, stage)
            port.publish_message(self.span_pub, span, stage)
            if not port.wanted(self.color_pub):
                return nothing_more

            def picture() -> None:
                port.publish_image(self.color_pub, frame.header, 'bgr8',
                                   self.frames.picture(answer), stage)
            return picture
        return finish
