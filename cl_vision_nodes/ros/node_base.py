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
What every cl_vision_nodes node shares: parameters, OpenCL runtime, QoS, timing, shutdown.

A node subclasses ``VisionNode``, names its ``SCHEMA``, constructs its algorithm objects in
``build`` (they compile their OpenCL programs there, so a node never compiles per frame),
creates its topics in ``connect`` and does convert -> compute -> publish in its handlers. Its
capabilities each take a command queue of their own (``capability_runtime``) and split a frame
into start (enqueue), finish (wait, publish the answer) and followup (pictures, depth, points),
so a node running several starts them all before it waits for any. Frames run on a thread of
their own, newest first (``FrameRunner``), while the executor thread takes the next messages;
answers go out on the publishing thread (``OutputQueue``). Bad input raises a
``CLVisionError``: the base logs it (throttled), counts it and keeps serving. A
``CLVisionError`` while starting ends the process with one FATAL line and exit code 2; SIGINT
and SIGTERM end it with exit code 0 (``node_process``).
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, ClassVar, Mapping

from cl_vision_nodes.dataio.compressed import decode_compressed
from cl_vision_nodes.errors import CLVisionError, PartnerPending
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.ros.cdr import parse_compressed_image, parse_image
from cl_vision_nodes.ros.executor_choice import executor_kind
from cl_vision_nodes.ros.frame_runner import FrameRunner
from cl_vision_nodes.ros.frame_stats import FrameStats, FrameTiming, receive_seconds
from cl_vision_nodes.ros.input_qos import Input, InputQos, LOSS_LOG_PERIOD_S
from cl_vision_nodes.ros.node_diagnostics import NodeDiagnostics
from cl_vision_nodes.ros.node_port import ImageFrame, NodePort, nothing_more
from cl_vision_nodes.ros.output_queue import OutputQueue
from cl_vision_nodes.ros.parameters import ParameterBinding
from cl_vision_nodes.ros.topics import image_input
from cl_vision_nodes.ros.warm_up import expected_size, WarmedConfigurations
from rclpy.node import Node
from sensor_msgs.msg import Image

BAD_INPUT_LOG_PERIOD_S = 5.0
PUBLISH_DRAIN_S = 2.0
FRAME_END_S = 2.0


class VisionNode(Node):
    """Base of every node: owns the parameter binding, the OpenCL runtime and frame statistics."""

    SCHEMA: ClassVar[ParameterSchema]
    SECTIONS: ClassVar[Mapping[str, ParameterSchema]] = {}
    """A node of several capabilities: their nodes' schemas by namespace (their files apply)."""

    def __init__(self, **node_kwargs: Any):
        super().__init__(self.SCHEMA.node_name, **node_kwargs)
        self.stats = FrameStats()
        self.failure: BaseException | None = None
        self.left_running = False
        """Whether ``destroy_node`` left the frame or publishing thread running (a device call)."""
        self.wake_executor: Callable[[], None] = nothing_more
        self.last_size: tuple[int, int] | None = None  # of the last frame read
        self._warmed = WarmedConfigurations()

    def start(self) -> None:
        """
        Declare the parameters, open the device, build every program, then connect the topics.

        Every OpenCL program is built here, and every kernel run once (``warm_up``). Raises
        CLVisionError (bad parameter, no device, a kernel that does not build), which
        ``node_process.spin_node`` reports as this node's FATAL line.
        """
        log = self.get_logger()
        self.binding = ParameterBinding(self, self.SCHEMA, self._on_parameters_changed,
                                        sys.argv, self.SECTIONS)
        self.executor_kind = executor_kind(str(self.params['executor']))
        self.runtime = ClRuntime(str(self.params['device']), profile=bool(self.params['profile']),
                                 warn=log.warning)
        self.images = DeviceImages(self.runtime)
        self._queues = [self.runtime]
        self.outputs = OutputQueue(f'{self.get_name()} publisher', self._publish_failed)
        self.port = NodePort(self, self.outputs, self._queues,
                             lambda: int(self.params['output_queue_size']))
        self.frames = FrameRunner(f'{self.get_name()} frames', self._frame_failed)
        size = expected_size(self.params, None)
        log.info('compiling OpenCL kernels' + (f' and running them on a {size[0]}x{size[1]} '
                                               'frame' if size else '') + ' ...')
        started = time.perf_counter()
        self.build()
        self.warm_up()
        self.diagnostics = NodeDiagnostics(self, self.stats, self.frames.work_lock,
                                           self.diagnostic_values, self._queues)
        self.diagnostics.schedule(float(self.params['diagnostics_period']))
        self.input_qos = InputQos(self, message_info=self.executor_kind != 'events')
        self.connect()
        log.info(f'ready in {time.perf_counter() - started:.1f} s on {self.runtime.describe()}, '
                 f'{self.executor_kind} executor')
        for line in [*self.binding.start_lines, *self.ready_lines()]:
            log.info(line)
        self.input_qos.ready()

    def capability_runtime(self) -> ClRuntime:
        """
        Return a runtime with a command queue of its own for one capability (``sibling``).

        Capabilities of one node (the pipeline's) then run beside each other on a GPU; the
        node's ``device_stage`` without a runtime waits for every queue.
        """
        runtime = self.runtime.sibling()
        self._queues.append(runtime)
        return runtime

    def ready_lines(self) -> list[str]:
        """Log lines after 'ready': what the node chose at start (none by default)."""
        return []

    def build(self) -> None:
        """
        Construct the algorithm objects on ``self.runtime``.

        Their OpenCL programs build here.
        """
        raise NotImplementedError

    def connect(self) -> None:
        """Create the publishers, subscriptions and timers of the node."""
        raise NotImplementedError

    def warm(self, width: int, height: int, values: Mapping[str, Value]) -> None:
        """
        Run every kernel a frame of this size launches with ``values``, publishing nothing.

        The frame work of the node's capabilities (their ``warm``) on a synthetic frame; none
        by default.
        """

    def warm_up(self, values: Mapping[str, Value] | None = None) -> None:
        """
        Warm the kernels of ``values`` (default: the parameters) at the expected size.

        Once per configuration (``warm_up``); the device time belongs to no frame.
        """
        values = self.params if values is None else values
        size = expected_size(values, self.last_size)
        if size is None or (values, size) in self._warmed:
            return
        self.outputs.drain()  # the previous frame's messages may be read from staging arrays
        self.warm(*size, values)
        self.images.warm(*size)
        for queue in self._queues:
            queue.finish()
        self.runtime.profiler.collect()
        self._warmed.add(values, size)

    @property
    def params(self) -> dict[str, Value]:
        """Return the accepted parameter values; changes land here before the next frame."""
        return self.binding.values

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        """
        React to accepted parameter changes; a no-op unless overridden.

        For nodes whose state depends on parameters (rebuild kernels, reset history).
        """

    def _on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        if 'diagnostics_period' in changed:
            self.diagnostics.schedule(float(values['diagnostics_period']))
        with self.frames.work_lock:  # between frames
            self.on_parameters_changed(values, changed)
            self.warm_up(values)  # the kernels the change brings, before the next frame

    # -- topics --------------------------------------------------------------------------------
    def image_input(self, topic: str) -> tuple[type, str]:
        """
        Return the message type and topic name of image input ``topic`` (``image_transport``).

        As image_transport: with ``compressed`` the CompressedImage topic is the resolved (so
        remapped) image topic plus ``/compressed``.
        """
        declared = image_input(topic, self.params)
        if declared.name == topic:
            return declared.msg_type, topic
        return declared.msg_type, self.resolve_topic_name(topic) + declared.name[len(topic):]

    def subscribe_images(self, topic: str, handler: Callable[[ImageFrame], None]) -> Input:
        """
        Subscribe keep-last 1 (the newest frame wins) to image input ``topic`` read as a frame.

        The message arrives serialized; a raw Image is read without a Python-level copy of its
        pixels, a CompressedImage decoded (``read_image``). Reliability as the publishers offer
        it (``InputQos``); users can override the QoS from YAML. ``handler`` runs as one frame
        (``run_frame``).
        """
        def on_message(data: bytes, info: Any) -> None:
            self.note_sequence(info)
            timing = FrameTiming(receive_seconds(info))
            self.run_frame(lambda: handler(self.read_image(data, timing)), timing)
        msg_type, name = self.image_input(topic)
        return self.input_qos.subscribe(msg_type, name, on_message, 1, raw=True)

    def subscribe_stream(self, msg_type: type, topic: str, callback: Callable[[Any, Any], None],
                         depth: int = 1, raw: bool = False) -> Input:
        """
        Subscribe keep-last ``depth`` to an input that is one part of a frame (``InputQos``).

        A stereo side, a camera_info: ``callback(msg, info)`` gets the message (its bytes with
        ``raw``) and rclpy's MessageInfo (None on Humble); the caller assembles frames and runs
        them through ``run_frame``. A raw Image stream follows ``image_transport``
        (``image_input``): its bytes are for ``read_image``.
        """
        if msg_type is Image and raw:
            msg_type, topic = self.image_input(topic)
        return self.input_qos.subscribe(msg_type, topic, callback, depth, raw)

    # -- per-frame work ------------------------------------------------------------------------
    def read_image(self, data: bytes, timing: FrameTiming) -> ImageFrame:
        """
        Read a serialized image input as a frame (ImageFormatError for a malformed one).

        A raw Image is read in place; a CompressedImage is decoded to the publisher's encoding,
        which is host time in the ``upload`` stage.
        """
        with timing.stage('upload'):
            if self.params['image_transport'] == 'compressed':
                header, compressed = parse_compressed_image(data)
                raw = decode_compressed(compressed.format, compressed.data)
            else:
                header, raw = parse_image(data)
        self.last_size = raw.width, raw.height
        return ImageFrame(header, raw, timing)

    def decode(self, frame: ImageFrame, role: str = 'gray') -> DeviceGray:
        """Upload and decode a frame on the device: the ``upload`` stage."""
        with self.port.device_stage('upload'):
            return self.images.decode(frame.raw, role)

    def run_frame(self, work: Callable[[], None], timing: FrameTiming | None = None) -> None:
        """
        Process one frame on the frame thread: time it, count a CLVisionError instead of raising.

        A frame still waiting there is skipped for this newer one (counted as dropped). A
        CLVisionError becomes a throttled log line and a rejected-frame count instead of an
        exception, so the next frame is served.
        """
        timing = timing or FrameTiming()
        if self.frames.submit(lambda: self._process(work, timing)):
            self.stats.frame_skipped()

    def _process(self, work: Callable[[], None], timing: FrameTiming) -> None:
        timing.waited()
        self.port.timing = timing
        try:
            work()
        except CLVisionError as exc:
            self.reject_frame(exc)
            return
        device_ms = self.runtime.profiler.collect()
        self.outputs.submit(lambda: self.stats.frame_done(timing, device_ms))  # after publishing

    def reject_frame(self, exc: CLVisionError) -> None:
        """Count a frame skipped for bad input and say why (throttled); PartnerPending quietly."""
        self.runtime.profiler.collect()  # its device events, if any, belong to no frame
        if isinstance(exc, PartnerPending):
            self.stats.frames_unmatched(1)
            self.get_logger().debug(f'frame skipped: {exc}')
            return
        self.stats.frame_rejected()
        self.get_logger().warning(f'frame skipped: {exc}',
                                  throttle_duration_sec=BAD_INPUT_LOG_PERIOD_S)

    def _frame_failed(self, exc: BaseException) -> None:
        """Hand an exception a frame raised (a bug, not bad input) to the executor thread."""
        self.failure = exc
        self.wake_executor()

    def _publish_failed(self, exc: BaseException) -> None:
        """Report a publish that failed on the publishing thread, unless rclpy was shut down."""
        if self.context.ok():
            self.get_logger().error(f'publishing failed: {type(exc).__name__}: {exc}')

    def destroy_node(self) -> None:
        """
        End the frame in progress, finish the queued publishes, then destroy the node.

        Within ``FRAME_END_S`` and ``PUBLISH_DRAIN_S``: a line says which did not end.
        """
        frames = getattr(self, 'frames', None)
        if frames is not None and not frames.close(FRAME_END_S):
            self.left_running = True
            self.get_logger().warning(
                f'stopping: the frame in progress did not end within {FRAME_END_S:g} s')
        for queue in getattr(self, '_queues', ()):
            queue.gate.release()  # work enqueued ahead of a frame that will not come
        outputs = getattr(self, 'outputs', None)
        if outputs is not None and not outputs.close(PUBLISH_DRAIN_S):
            self.left_running = True
            self.get_logger().warning(
                f'stopping: the publishing thread did not end within {PUBLISH_DRAIN_S:g} s; '
                'its last messages may not have gone out')
        super().destroy_node()

    def note_sequence(self, info: Any, stream: str = '') -> None:
        """
        Count the messages of ``stream`` lost between the publisher and this node; say why.

        ``info`` is None on Humble (its rclpy passes no MessageInfo) and under the EventsExecutor
        (Jazzy's and Kilted's raise SystemError for a callback that takes it): no count there.
        """
        info = info or {}
        gid = info.get('publisher_gid') or {}
        lost = self.stats.note_sequence(bytes(gid.get('data', b'')),
                                        info.get('publication_sequence_number'), stream)
        if lost:
            self.get_logger().warning(
                f'{lost} frame{"s" * (lost > 1)} lost before the node: '
                f'{self.input_qos.loss_cause()}',
                throttle_duration_sec=LOSS_LOG_PERIOD_S)

    # -- diagnostics ---------------------------------------------------------------------------
    def diagnostic_values(self) -> dict[str, str]:
        """
        Return the node's own key/values of the diagnostics window ending now (none here).

        Called between frames (``NodeDiagnostics``).
        """
        return {}
