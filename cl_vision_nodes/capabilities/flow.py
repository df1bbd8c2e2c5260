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
Dense optical flow of a stream of frames: what flow_node (and the pipeline) does, without ROS.

Each frame's flow runs from the previous frame of its stream to it, with the span between their
stamps. A frame of another stream (size or encoding changed), a stamp going backwards (a bag
loop) or a gap over ``max_span`` seconds restarts the stream, so no flow is estimated across
it: the node, tune and the benches get the same flows from the same frames. The colour picture
(the Middlebury wheel, drawn on the device) is drawn only when asked for.

Frames enqueued ahead (``start_frame``, ``arm``): once a frame's answer is out, the next frame's
upload, pyramid, flow and read are enqueued behind a hold on the queue (``QueueGate``), which
its bytes, copied into the staging array, release. The host's enqueue calls (about 13 us a
launch on a GPU, most of a small frame's wall) then run between frames, not after the bytes
arrive. The staging array holds the last frame's bytes until then, so where the hold is
released otherwise (a wait or another command on the queue, a parameter change) or the next
frame does not continue the stream, the work enqueued ahead runs on them: the last frame again,
after which the history is what it was, and the frame takes the ordinary path. By default only
where held commands wait idle (``QueueGate.idle``: PoCL, and GPUs whose gate is a semaphore):
NVIDIA's driver spins a core for 100 ms after each user event, a core at any camera rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping
import weakref

from cl_vision_nodes.capabilities.flow_span import FlowSpans, NS_PER_S
from cl_vision_nodes.capabilities.stages import StageClock
from cl_vision_nodes.flow.colorwheel import FlowColorizer
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import RawImage, validate_intensity
from cl_vision_nodes.opencl.runtime import ClRuntime, PendingRead
from cl_vision_nodes.params import Value
import numpy as np
import pyopencl as cl

Stream = tuple[str, int, int]
"""What a stream's frames share: encoding, width, height."""
Log = Callable[..., None]
"""An info line: ``log(line)``, or ``log(line, once=KEY)`` for a line logged the first time."""


def no_log(line: str, once: str = '') -> None:
    """Log nothing (tune and the benches)."""


@dataclass(frozen=True)
class FlowAnswer:
    """One frame's flow, from the frame stamped ``previous_ns``; valid until the next frame."""

    flow: np.ndarray  # HxWx2 float32 (u, v): the mapped flow buffer, or a pinned array
    previous_ns: int
    device: cl.Buffer  # the same flow on the device (for the picture)
    height: int
    width: int


Pending = tuple[cl.Buffer, cl.Event, PendingRead] | None
"""A frame's enqueued flow: its device buffer, the kernels' end, its read (None: no flow)."""


@dataclass(frozen=True)
class Armed:
    """The next frame's work, enqueued behind the hold named ``token`` (``FlowFrames.arm``)."""

    token: object
    layout: tuple[str, int, int, int, int]  # encoding, step, width, height, is_bigendian
    pending: Pending


def layout(raw: RawImage) -> tuple[str, int, int, int, int]:
    """Return what a frame enqueued ahead must share with the one that releases it."""
    return raw.encoding, raw.step, raw.width, raw.height, int(bool(raw.is_bigendian))


class FlowFrames:
    """The flows of a stream of decoded frames, their spans and their pictures."""

    def __init__(self, runtime: ClRuntime, values: Mapping[str, Value], clock: StageClock,
                 log: Log = no_log, prefix: str = '', ahead: bool | None = None):
        """
        Build the estimator and colour wheel on ``runtime``; stages named ``prefix*``.

        ``ahead``: whether ``arm`` enqueues the next frame (by default where the queue's held
        commands wait idle, ``QueueGate.idle``, and ``runtime`` is not profiled: a profile is
        collected by waiting on a frame's events).
        """
        self.runtime = runtime
        self.ahead = (runtime.gate.idle and not runtime.profiler.enabled
                      if ahead is None else ahead)
        self.clock = clock
        self.log = log
        self.prefix = prefix
        self.estimator = FlowEstimator(runtime, values)
        self.colorizer = FlowColorizer(runtime)
        self._images = DeviceImages(runtime, staging=True)  # holds the last frame's bytes
        self.staging = runtime.buffers()
        self.max_flow = float(values['max_flow'])
        self.spans = FlowSpans(float(values['max_span']))
        self._stream: Stream | None = None
        self._last_stamp = 0
        self._announced = ''
        self._last_raw: RawImage | None = None  # the staging array holds its bytes
        self._armed: Armed | None = None
        self.ran_ahead = 0
        """Frames that ran from work enqueued ahead (the others took the ordinary path)."""
        self._ran_ahead_reported = 0
        # pyopencl waits for a read's end when its event is freed: release before they are
        weakref.finalize(self, runtime.gate.release)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.estimator.configure(values)
        self.runtime.gate.release()  # what was enqueued ahead with the previous ones is not used
        self.max_flow = float(values['max_flow'])
        self.spans.max_span_s = float(values['max_span'])
        if self.estimator.method != self._announced:
            self.log(self.method_line())

    def method_line(self) -> str:
        """Return the log line naming the method that runs (and why, for auto)."""
        method = self._announced = self.estimator.method
        why = ''
        if self.estimator.settings.method == 'auto':
            device = 'a GPU' if self.runtime.limits.is_gpu else 'a CPU device'
            why = f' (method auto on {device}; set method to choose another)'
        return f'flow method: {method}{why}'

    def reset(self) -> None:
        """Forget the previous frame (the pipeline switched flow off and on)."""
        self._retire()
        self.estimator.reset()
        self._stream = None
        self._last_raw = None

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
        """
        Return the span counts of the diagnostics window, and start a new one.

        With ``flow_ran_ahead``: the window's frames that ran from work enqueued ahead.
        """
        ran, self._ran_ahead_reported = self.ran_ahead - self._ran_ahead_reported, self.ran_ahead
        return {**self.spans.key_values(), 'flow_ran_ahead': str(ran)}

    def start(self, gray: DeviceGray, stamp_ns: int,
              stream: Stream) -> Callable[[], FlowAnswer | None]:
        """
        Enqueue the flow from the stream's previous frame to ``gray``, without waiting.

        The flow's read into a host array is enqueued behind its kernels. Returns its finish:
        wait for both and return the answer (None for the first frame of a stream).
        """
        self._retire()
        self._last_raw = None
        return self._start(gray, stamp_ns, stream)

    def start_frame(self, raw: RawImage, stamp_ns: int) -> Callable[[], FlowAnswer | None]:
        """
        ``start`` for a message frame uploaded on this queue, or releasing what ``arm`` enqueued.

        ImageFormatError for bad bytes (what was enqueued ahead waits for the next frame).
        """
        validate_intensity(raw)
        stream = (raw.encoding, raw.width, raw.height)
        armed, self._armed = self._armed, None
        if armed is not None and armed.layout == layout(raw) and self._continues(stamp_ns,
                                                                                 stream):
            with self.clock.stage(self.prefix + 'upload'):
                released = self.runtime.gate.release_with(
                    armed.token, lambda: self._images.stage(raw))
            if released:
                self.ran_ahead += 1
                previous_ns, self._last_stamp, self._last_raw = self._last_stamp, stamp_ns, raw
                return self._finish(armed.pending, raw.height, raw.width, stamp_ns, previous_ns)
        self._retire(armed)
        with self.clock.stage(self.prefix + 'upload'):
            gray = self._images.decode(raw)
        self._last_raw = raw
        return self._start(gray, stamp_ns, stream)

    def arm(self) -> None:
        """
        Enqueue the next frame's work behind a hold, once this frame's answer is out.

        After the last frame's picture, if any (a command enqueued later releases the hold: the
        work then runs on this frame's bytes). The next ``start_frame`` of the same stream
        releases it with its bytes. Nothing where frames are not enqueued ahead (``ahead``), one
        is already, or no stream of message frames runs.
        """
        raw = self._last_raw
        if not self.ahead or self._armed is not None or raw is None \
                or not self.estimator.streaming:
            return
        token = self.runtime.gate.hold()
        with self.clock.stage(self.prefix + 'ahead'), self.runtime.gate.ahead():
            flow = self.estimator.push_gray(self._images.decode(raw, staged=True))
            self._armed = Armed(token, layout(raw), self._enqueue_read(flow))

    def _retire(self, armed: Armed | None = None) -> None:
        """
        Let work enqueued ahead that no frame releases run, and wait for it (not an answer).

        It runs on the staging array's bytes, the last frame's: the history is as it was. After
        the previous publishes, which may read the host arrays its read and the next reuse.
        """
        armed = armed or self._armed
        self._armed = None
        if armed is not None:
            with self.clock.download_stage(self.prefix + 'download'):
                self.runtime.finish()

    def _start(self, gray: DeviceGray, stamp_ns: int,
               stream: Stream) -> Callable[[], FlowAnswer | None]:
        previous_ns = self._last_stamp
        self._follow_stream(stamp_ns, stream)
        with self.clock.stage(self.prefix + 'compute'):
            pending = self._enqueue_read(self.estimator.push_gray(gray))
        return self._finish(pending, gray.height, gray.width, stamp_ns, previous_ns)

    def _enqueue_read(self, flow: cl.Buffer | None) -> Pending:
        """Enqueue the read behind the flow's kernels: the host waits once a frame."""
        return None if flow is None else (flow, self.runtime.marker(),
                                          self.estimator.start_download(flow))

    def _finish(self, pending: Pending, height: int, width: int, stamp_ns: int,
                previous_ns: int) -> Callable[[], FlowAnswer | None]:
        def finish() -> FlowAnswer | None:
            if pending is None:
                with self.clock.device_stage(self.prefix + 'compute', self.runtime):
                    pass  # the first frame's pyramid, enqueued above
                return None
            device_flow, computed, read = pending
            with self.clock.stage(self.prefix + 'compute'):
                computed.wait()
            with self.clock.download_stage(self.prefix + 'download'):
                host = read.wait()
            self.spans.flow_published(stamp_ns - previous_ns)
            return FlowAnswer(host, previous_ns, device_flow, height, width)
        return finish

    def picture(self, answer: FlowAnswer) -> np.ndarray:
        """Draw the answer's colour picture on the device; return it (bgr8, pinned staging)."""
        shape = (answer.height, answer.width, 3)
        with self.clock.device_stage(self.prefix + 'visual', self.runtime):
            return self.colorizer.draw(answer.device, answer.height, answer.width,
                                       self.max_flow,
                                       out=self.staging.pinned('color', shape, np.uint8))

    def flows(self, grays: list[DeviceGray],
              stamps_ns: list[int] | None = None) -> list[np.ndarray | None]:
        """
        Return each frame's flow as a copy (None where a stream starts), from a new stream.

        ``stamps_ns``: the frames' stamps (a bag's), so that gaps and loops restart the stream as
        in the node; without them the frames are consecutive.
        """
        self.reset()
        stamps_ns = stamps_ns or list(range(1, len(grays) + 1))
        answers = []
        for gray, stamp in zip(grays, stamps_ns):
            answer = self.start(gray, stamp, ('mono8', gray.width, gray.height))()
            answers.append(None if answer is None else answer.flow.copy())
        return answers

    def _continues(self, stamp_ns: int, stream: Stream) -> bool:
        """Whether a frame continues the stream (``_follow_stream`` keeps the history)."""
        gap_ns = stamp_ns - self._last_stamp
        return stream == self._stream and gap_ns >= 0 and not self.spans.beyond_limit(gap_ns)

    def _follow_stream(self, stamp_ns: int, stream: Stream) -> None:
        """Start a new history where the frame does not continue the previous frame's."""
        gap_ns = stamp_ns - self._last_stamp
        if self._stream is not None and (stream != self._stream or gap_ns < 0):
            why = 'time went backwards' if stream == self._stream else \
                f'{self._stream[0]} {self._stream[1]}x{self._stream[2]} -> ' \
                f'{stream[0]} {stream[1]}x{stream[2]}'
            self.log(f'flow history reset ({why})')
            self.estimator.reset()
        elif self._stream is not None and self.spans.beyond_limit(gap_ns):
            # Every such gap is counted; a log line each would flood a lossy link.
            self.log(f'flow history reset: {gap_ns / NS_PER_S:.2f} s since the previous frame '
                     f'is more than max_span {self.spans.max_span_s:g} s (logged once; counted '
                     'in diagnostics)', once='max_span reset')
            self.spans.history_reset()
            self.estimator.reset()
        self._stream, self._last_stamp = stream, stamp_ns
