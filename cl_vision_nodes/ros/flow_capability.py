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

from typing import Mapping

from builtin_interfaces.msg import Time
from cl_vision_nodes.flow.colorwheel import FlowColorizer
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.flow_span import FlowSpans, NS_PER_S

from cl_vision_nodes.ros.node_port import (CapabilityPort, Finish, Followup, ImageFrame,
                                           nothing_more)
from cl_vision_nodes.ros.topics import Topic
import numpy as np
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
        """Build the estimator and colour wheel on ``runtime``; stages named ``prefix*``."""
        self.port = port
        self.prefix = prefix
        self.runtime = runtime
        self.estimator = FlowEstimator(runtime, values)
        self.colorizer = FlowColorizer(runtime)
        self.staging = runtime.buffers()
        self.max_flow = float(values['max_flow'])
        self.spans = FlowSpans(float(values['max_span']))
        self._stream: tuple[str, int, int] | None = None
        self._last_stamp = 0
        self._announced = ''

    def connect(self) -> None:
        self.flow_pub, self.color_pub, self.span_pub = map(self.port.output, self.OUTPUTS)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.estimator.configure(values)
        self.max_flow = float(values['max_flow'])
        self.spans.max_span_s = float(values['max_span'])
        self._announce_method()

    def method_line(self) -> str:
        """Return the log line naming the method that runs (and why, for auto)."""
        method = self._announced = self.estimator.method
        why = ''
        if self.estimator.settings.method == 'auto':
            device = 'a GPU' if self.runtime.limits.is_gpu else 'a CPU device'
            why = f' (method auto on {device}; set method to choose another)'
        return f'flow method: {method}{why}'

    def _announce_method(self) -> None:
        """Log the method that runs when a parameter change made it another."""
        if self.estimator.method != self._announced:
            self.port.log(self.method_line())

    def reset(self) -> None:
        """Forget the previous frame (the pipeline switched flow off and on)."""
        self.estimator.reset()
        self._stream = None

    def warm(self, gray: DeviceGray) -> None:
        """
        Run every kernel of the current settings on ``gray`` (flows and their picture).

        Before the first frame, on the estimator that will serve (its buffers written once:
        ``FlowEstimator.warm``); in a stream, on an estimator of its own (the same programs and
        kernels), so the stream keeps its previous frame. The picture in an array of its own, as
        the previous frame's may still be on its way out.
        """
        estimator = self.estimator if not self.estimator.streaming else \
            FlowEstimator(self.runtime, self.estimator.values)
        flow = estimator.warm(gray)
        self.colorizer.draw(flow, gray.height, gray.width, self.max_flow)

    def diagnostic_values(self) -> dict[str, str]:
        """Return the span counts of the diagnostics window, and start a new one."""
        return self.spans.key_values()

    def process(self, frame: ImageFrame, gray: DeviceGray) -> Followup:
        """Push a decoded frame and publish the flow from the previous one (``start``, finish)."""
        return self.start(frame, gray)()

    def start(self, frame: ImageFrame, gray: DeviceGray) -> Finish:
        """
        Enqueue the flow from the previous frame on this capability's queue, without waiting.

        Returns its finish: publish the flow and its span, and return the followup (the colour
        picture, if subscribed).
        """
        previous_ns = self._last_stamp
        self._follow_stream(frame)
        port, prefix = self.port, self.prefix
        with port.stage(prefix + 'compute'):
            flow = self.estimator.push_gray(gray)

        def finish() -> Followup:
            with port.device_stage(prefix + 'compute', self.runtime):
                pass  # the device work enqueued above
            if flow is None:
                return nothing_more
            with port.download_stage(prefix + 'download'):
                host = self.estimator.download(flow)
            self.spans.flow_published(frame.stamp_ns - previous_ns)
            sec, nanosec = divmod(previous_ns, NS_PER_S)
            span = TimeReference(header=frame.header.to_msg(), source=SPAN_SOURCE,
                                 time_ref=Time(sec=sec, nanosec=nanosec))
            port.publish_image(self.flow_pub, frame.header, '32FC2', host, prefix + 'publish')
            port.publish_message(self.span_pub, span, prefix + 'publish')
            if not port.wanted(self.color_pub):
                return nothing_more

            def picture() -> None:
                shape = (gray.height, gray.width, 3)
                with port.device_stage(prefix + 'visual', self.runtime):
                    drawn = self.colorizer.draw(flow, gray.height, gray.width, self.max_flow,
                                                out=self.staging.pinned('color', shape, np.uint8))
                port.publish_image(self.color_pub, frame.header, 'bgr8', drawn,
                                   prefix + 'publish')
            return picture
        return finish

    def _follow_stream(self, frame: ImageFrame) -> None:
        """Start a new history where ``frame`` does not continue the previous frame's."""
        raw = frame.raw
        stream = (raw.encoding, raw.width, raw.height)
        gap_ns = frame.stamp_ns - self._last_stamp
        if self._stream is not None and (stream != self._stream or gap_ns < 0):
            why = 'time went backwards' if stream == self._stream else \
                f'{self._stream[0]} {self._stream[1]}x{self._stream[2]} -> ' \
                f'{raw.encoding} {raw.width}x{raw.height}'
            self.port.log(f'flow history reset ({why})')
            self.estimator.reset()
        elif self._stream is not None and self.spans.beyond_limit(gap_ns):
            # Every such gap is counted; a log line each would flood a lossy link.
            self.port.log(
                f'flow history reset: {gap_ns / NS_PER_S:.2f} s since the previous frame is '
                f'more than max_span {self.spans.max_span_s:g} s (logged once; counted in '
                'diagnostics)', once='max_span reset')
            self.spans.history_reset()
            self.estimator.reset()
        self._stream, self._last_stamp = stream, frame.stamp_ns
