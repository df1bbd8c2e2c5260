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
and SIGTERM end it with exit code 0 (``spin_node``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
import os
import re
import sys
import threading
import time
from typing import Any, Callable, ClassVar, Iterator, Mapping

from cl_vision_nodes.dataio.compressed import decode_compressed
from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import RawImage
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.ros.allocator import configure_allocator
from cl_vision_nodes.ros.cdr import (CdrHeader, Framing, image_framing,
                                     parse_compressed_image, parse_image, raw_image_framing)
from cl_vision_nodes.ros.dds_profile import use_large_image_profile
from cl_vision_nodes.ros.executor_choice import executor_kind, new_executor
from cl_vision_nodes.ros.frame_runner import FrameRunner
from cl_vision_nodes.ros.frame_stats import FrameReport, FrameStats, FrameTiming, receive_seconds
from cl_vision_nodes.ros.input_qos import Input, InputQos, LOSS_LOG_PERIOD_S
from cl_vision_nodes.ros.node_help import usage, wants_help
from cl_vision_nodes.ros.output_queue import OutputQueue
from cl_vision_nodes.ros.parameters import ParameterBinding
from cl_vision_nodes.ros.stop_signals import exit_at_once, StopSignals
from cl_vision_nodes.ros.topics import image_input
from cl_vision_nodes.ros.warm_up import expected_size, WarmedConfigurations
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np
import rclpy
from rclpy._rclpy_pybind11 import RCLError
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.timer import Timer
from sensor_msgs.msg import Image

BAD_INPUT_LOG_PERIOD_S = 5.0
PUBLISH_DRAIN_S = 2.0
FRAME_END_S = 2.0
EXIT_CANNOT_START = 2
SPIN_BOUND_S = 1.0  # an executor spin returns at the latest after this, to look at the stop


Followup = Callable[[], None]
"""What a capability publishes after its answer (pictures, depth, points): run once every
capability of the frame has published its answer, so none of them waits for another's pictures."""


Finish = Callable[[], Followup]
"""What completes a capability's frame after its device work was enqueued (``start``): wait for
it, download and publish the answer, return the followup. A node that runs several capabilities
starts them all before it finishes any, so their device work runs side by side."""


def nothing_more() -> None:
    """Return from a followup with nothing to publish."""


@dataclass(frozen=True)
class ImageFrame:
    """
    A received image, read in place: its header, pixels viewing the message bytes, its timing.

    Outputs reuse ``header`` verbatim (the input's stamp and frame).
    """

    header: CdrHeader
    raw: RawImage
    timing: FrameTiming

    @property
    def stamp_ns(self) -> int:
        return self.header.sec * 1_000_000_000 + self.header.nanosec


class VisionNode(Node):
    """Base of every node: owns the parameter binding, the OpenCL runtime and frame statistics."""

    SCHEMA: ClassVar[ParameterSchema]
    SECTIONS: ClassVar[Mapping[str, ParameterSchema]] = {}
    """A node of several capabilities: their nodes' schemas by namespace (their files apply)."""

    def __init__(self, **node_kwargs: Any):
        super().__init__(self.SCHEMA.node_name, **node_kwargs)
        self.stats = FrameStats()
        self.timing = FrameTiming()
        self.failure: BaseException | None = None
        self.left_running = False
        """Whether ``destroy_node`` left the frame or publishing thread running (a device call)."""
        self.wake_executor: Callable[[], None] = nothing_more
        self._diag_timer: Timer | None = None
        self.last_size: tuple[int, int] | None = None  # of the last frame read
        self._warmed = WarmedConfigurations()

    def start(self) -> None:
        """
        Declare the parameters, open the device, build every program, then connect the topics.

        Every OpenCL program is built here, and every kernel run once (``warm_up``). Raises
        CLVisionError (bad parameter, no device, a kernel that does not build), which
        ``spin_node`` reports as this node's FATAL line.
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
        self.frames = FrameRunner(f'{self.get_name()} frames', self._frame_failed)
        size = expected_size(self.params, None)
        log.info('compiling OpenCL kernels' + (f' and running them on a {size[0]}x{size[1]} '
                                               'frame' if size else '') + ' ...')
        started = time.perf_counter()
        self.build()
        self.warm_up()
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._schedule_diagnostics(float(self.params['diagnostics_period']))
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
            self._schedule_diagnostics(float(values['diagnostics_period']))
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

    def output_publisher(self, msg_type: type, topic: str) -> Publisher:
        """Reliable publisher with the depth of ``output_queue_size``."""
        qos = QoSProfile(reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST,
                         depth=int(self.params['output_queue_size']))
        return self.create_publisher(msg_type, topic, qos)

    @staticmethod
    def wanted(publisher: Publisher) -> bool:
        """Visual topics are computed only when someone listens."""
        return publisher.get_subscription_count() > 0

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
        with self.device_stage('upload'):
            return self.images.decode(frame.raw, role)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Count the host time of the ``with`` block as stage ``name`` of the current frame."""
        with self.timing.stage(name):
            yield

    @contextlib.contextmanager
    def device_stage(self, name: str, runtime: ClRuntime | None = None) -> Iterator[None]:
        """
        Count the block and the device work it enqueued (waited for) as stage ``name``.

        Waits for ``runtime``'s queue, or without one for every queue of the node.
        """
        with self.timing.stage(name):
            yield
            for queue in (self._queues if runtime is None else (runtime,)):
                queue.finish()

    @contextlib.contextmanager
    def download_stage(self, name: str) -> Iterator[None]:
        """
        Count the block as stage ``name``: a download into a staging array.

        Waits first until the previous frame's publishes, which may still read its staging
        arrays, are done (``OutputQueue``).
        """
        with self.timing.stage(name):
            self.outputs.drain()
            yield

    def publish_serialized(self, publisher: Publisher, framing: Framing, payload: Any,
                           stage: str = 'publish') -> None:
        """
        Publish a message serialized around ``payload`` (one copy of it) as stage ``stage``.

        On the publishing thread, in order: the frame's next work, and the next frame's upload
        and compute, go on meanwhile. ``payload`` must stay untouched until ``download_stage``.
        """
        self._publish_later(publisher, lambda: framing.join(payload), stage)

    def publish_raw(self, publisher: Publisher, header: CdrHeader, raw: RawImage,
                    stage: str = 'publish') -> None:
        """Publish ``raw`` (any step, either byte order) as an Image, as ``publish_image`` does."""
        self.publish_serialized(publisher, raw_image_framing(header, raw), raw.data, stage)

    def publish_message(self, publisher: Publisher, msg: Any, stage: str = 'publish') -> None:
        """Publish a small message object as ``publish_serialized`` does: in order, later."""
        self._publish_later(publisher, lambda: msg, stage)

    def _publish_later(self, publisher: Publisher, message: Callable[[], Any], stage: str) -> None:
        """Publish ``message()`` on the publishing thread, timed as this frame's ``stage``."""
        timing = self.timing

        def send() -> None:
            with timing.stage(stage):
                publisher.publish(message())
        self.outputs.submit(send)

    def publish_image(self, publisher: Publisher, header: CdrHeader, encoding: str,
                      pixels: np.ndarray, stage: str = 'publish') -> None:
        """Publish HxW[xC] host-order ``pixels`` as a packed sensor_msgs/Image of ``encoding``."""
        if not pixels.flags.c_contiguous:
            raise ValueError('publish_image needs a C-contiguous array')
        height, width = pixels.shape[:2]
        framing = image_framing(header, encoding, height, width, pixels.nbytes // max(height, 1))
        self.publish_serialized(publisher, framing, pixels, stage)

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
        self.timing = timing
        try:
            work()
        except CLVisionError as exc:
            self.reject_frame(exc)
            return
        device_ms = self.runtime.profiler.collect()
        self.outputs.submit(lambda: self.stats.frame_done(timing, device_ms))  # after publishing

    def reject_frame(self, exc: CLVisionError) -> None:
        """Count a frame skipped for bad input and say why (throttled)."""
        self.stats.frame_rejected()
        self.runtime.profiler.collect()  # its device events, if any, belong to no frame
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
    def _schedule_diagnostics(self, period: float) -> None:
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if period > 0:
            self._diag_timer = self.create_timer(period, self.publish_diagnostics)

    def diagnostic_values(self) -> dict[str, str]:
        """Return the node's own key/values of the diagnostics window ending now (none here)."""
        return {}

    def cache_sizes(self) -> dict[str, int]:
        """Programs and kernels cached on every queue of the node (``ClRuntime.cache_sizes``)."""
        totals: dict[str, int] = {}
        for runtime in self._queues:
            for key, count in runtime.cache_sizes().items():
                totals[key] = totals.get(key, 0) + count
        return totals

    def publish_diagnostics(self) -> None:
        report = self.stats.report()
        if report.frames or report.dropped:
            self.get_logger().info(report.line())
            self.get_logger().debug(report.detail_line())
        with self.frames.work_lock:  # between frames
            own = self.diagnostic_values()
        level, message = diagnostic_status(report)
        status = DiagnosticStatus(
            level=level, name=f'{self.get_fully_qualified_name()}: frames', message=message,
            hardware_id=self.runtime.entry.name,
            values=[KeyValue(key=k, value=v)
                    for k, v in {**report.key_values(), **own}.items()]
            + [KeyValue(key=f'opencl_cached_{k}', value=str(v))  # constant in a steady stream
               for k, v in self.cache_sizes().items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(msg)


MISSED_WARN_SHARE = 0.1
MISSED_ERROR_SHARE = 0.5


def diagnostic_status(report: FrameReport) -> tuple[bytes, str]:
    """
    Return the diagnostics level and message of a window's frames.

    WARN when more than 10 % of the frames due (answered and dropped) were lost or skipped, or a
    frame had bad input; ERROR above half.
    """
    due = report.frames + report.dropped
    missed = report.dropped - report.rejected
    share = missed / due if due else 0.0
    parts = []
    if share > MISSED_WARN_SHARE:
        parts.append(f'{missed} of {due} frames missed ({report.lost_in_transport} lost before '
                     f'the node, {report.unmatched} without a stereo partner, {report.skipped} '
                     'skipped for a newer one)')
    if report.rejected:
        parts.append(f'{report.rejected} bad input frames skipped')
    level = (DiagnosticStatus.ERROR if share > MISSED_ERROR_SHARE
             else DiagnosticStatus.WARN if parts else DiagnosticStatus.OK)
    return level, '; '.join(parts) or 'ok'


def spin_node(node_class: type[VisionNode], args: list[str] | None = None,
              stop: StopSignals | None = None) -> int:
    """
    Run one node until Ctrl-C, SIGTERM or shutdown; return the exit code.

    A start-up failure is one FATAL line, under the node's name, and exit code 2. SIGINT and
    SIGTERM, once or several times at any moment (``StopSignals``, installed here unless
    ``stop`` was), end the node with exit code 0: the frame in progress is finished and
    published, the publishing thread is drained, the node destroyed and rclpy shut down, in that
    order, within ``STOP_DEADLINE_S``.
    """
    logger = rclpy.logging.get_logger(node_class.SCHEMA.node_name)
    if stop is None:
        stop = StopSignals(logger.warning)
        stop.install()
    if stop.requested:  # while the node's modules loaded (``executables``)
        stop.finished()
        return 0
    use_large_image_profile()
    allocator = configure_allocator()
    try:
        check_params_files(args or [])
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ParameterError, RCLError) as exc:  # bad ROS arguments, e.g. a YAML file's syntax
        reason = rcl_reason(exc) if isinstance(exc, RCLError) else str(exc)
        logger.fatal(f'cannot start: {reason}')
        return EXIT_CANNOT_START
    node = node_class()
    code = None
    try:
        code = start_and_spin(node, stop, allocator.line())
    finally:
        stop.phase = "the node's clean-up"
        node.destroy_node()
        rclpy.try_shutdown()
        stop.finished()
        if code is not None and node.left_running:
            # Python's finalization would stop that thread inside the device call it is in,
            # which aborts the process ("terminate called without an active exception")
            exit_at_once(code)
    return code


def start_and_spin(node: VisionNode, stop: StopSignals, allocator_line: str) -> int:
    """Build the node's kernels and serve it until a stop signal; return the exit code."""
    stop.phase = 'the OpenCL kernel build'
    try:
        node.start()
    except CLVisionError as exc:
        if stop.requested:  # e.g. LLVM deletes a build's temporary files on SIGINT
            node.get_logger().info('stopped while starting')
            node.get_logger().debug(f'start-up cut short: {exc}')
            return 0
        node.get_logger().fatal(f'cannot start: {exc}')
        return EXIT_CANNOT_START
    node.get_logger().debug(allocator_line)
    stop.phase = 'the frame in progress'
    spin_until_stopped(node, stop)
    return 0


def spin_until_stopped(node: VisionNode, stop: StopSignals) -> None:
    """
    Serve the node's callbacks until a stop signal; raise what a frame raised (a bug).

    The stop request and a failed frame wake the executor, so an idle node stops at once; the
    frame in progress ends in ``destroy_node``. (The EventsExecutor returns from a spin for
    neither ``wake()`` nor a guard condition: spins are bounded, so it stops within
    ``SPIN_BOUND_S``.)
    """
    executor = new_executor(node.executor_kind)
    executor.add_node(node)
    stopping = threading.Event()

    def wake() -> None:
        stopping.set()
        executor.wake()
    node.wake_executor = wake
    try:
        with stop.calling(wake):
            while not stopping.is_set():
                executor.spin_once(timeout_sec=SPIN_BOUND_S)
        if node.failure is not None:
            raise node.failure
    finally:
        node.wake_executor = nothing_more
        executor.shutdown()


def check_params_files(args: list[str]) -> None:
    """
    Raise ParameterError for a ``--params-file`` that cannot be read.

    rcl would log an extra ERROR line of its own and a reason without the file's name.
    """
    for option, path in zip(args, args[1:]):
        if option == '--params-file' and not os.access(path, os.R_OK):
            raise ParameterError(f'--params-file {path}: no such file or not readable')


def rcl_reason(exc: RCLError) -> str:
    """
    Return rcl's message on one line, without the C source locations it appends.

    They read like ", at /src/file.c:123".
    """
    return ' '.join(re.sub(r', at \S+:\d+', '', str(exc)).split())


def main_for(node_class: type[VisionNode], stop: StopSignals | None = None) -> None:
    """
    Run a node executable: print ``--help``, or run the node.

    ``stop``: the stop signals its console script took before loading it (``executables``).
    """
    if wants_help(sys.argv):
        print(usage(node_class))
        sys.exit(0)
    sys.exit(spin_node(node_class, sys.argv, stop))
