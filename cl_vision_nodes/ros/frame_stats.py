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
Per-frame timing of a node: where each frame's time goes, rate and dropped frames over a window.

A frame's latency runs from its message's send time (the publisher's source timestamp, same
host clock) to the end of its last publish, split into the stages ``receive`` (DDS delivery,
waiting in the executor and for the frame thread), ``upload`` (reading the message, upload and
decode on the device), ``compute``, ``download`` and ``publish`` (serialization and the DDS
write). Stage boundaries wait for the device queue, so each stage holds its own device time.
The pipeline node names stages per capability (``flow.compute``...).

A window holds sums and a bounded sample of recent latencies, never one entry per frame: with
``diagnostics_period`` 0 no report ever closes it, and it must not grow over days of frames.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
import threading
import time

from cl_vision_nodes.capabilities.stages import StageTimes
import numpy as np

LATENCY_SAMPLES = 1000
"""Latencies kept for the percentiles: those of the window's last frames (a report every 5 s at
200 fps is exact)."""
STAGES: tuple[str, ...] = ('receive', 'upload', 'compute', 'download', 'publish')
"""The stages of a frame, in order."""
SHORT_LINE_CHARS = 120
"""The most characters of the periodic INFO line (``FrameReport.line``) for any counts."""


class FrameTiming(StageTimes):
    """The stages of one frame: host seconds each, measured as the frame goes through the node."""

    def __init__(self, receive_s: float = 0.0):
        super().__init__()
        self.started = time.perf_counter()
        self.stages['receive'] = max(receive_s, 0.0)

    def waited(self) -> None:
        """Count the time since the frame arrived as ``receive``: its work starts now."""
        now = time.perf_counter()
        self.stages['receive'] += now - self.started
        self.started = now

    def latency_s(self) -> float:
        """Return the time from the message's send time until now."""
        return self.stages['receive'] + time.perf_counter() - self.started


def receive_seconds(info: dict | None) -> float:
    """
    Return the seconds from a message's send time to now (0 when the rmw gives no timestamp).

    ``info`` is rclpy's MessageInfo of the message: its ``source_timestamp`` is the publisher's
    system clock, which on one host is ours.
    """
    sent = (info or {}).get('source_timestamp') or 0
    return max(time.time_ns() - sent, 0) * 1e-9 if sent else 0.0


@dataclass
class FrameWindow:
    """Counters since the last report; ``report()`` summarises and starts a new window."""

    started: float = field(default_factory=time.monotonic)
    frames: int = 0
    latency_sum_ms: float = 0.0
    recent_latencies_ms: deque[float] = field(
        default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    stage_sums_ms: dict[str, float] = field(default_factory=dict)
    device_sums_ms: dict[str, list[float]] = field(default_factory=dict)  # stage: [sum, count]
    rejected: int = 0
    lost_in_transport: int = 0
    unmatched: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class FrameReport:
    frames: int
    fps: float
    latency_mean_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    rejected: int
    lost_in_transport: int
    unmatched: int = 0
    skipped: int = 0
    stage_mean_ms: dict[str, float] = field(default_factory=dict)
    device_mean_ms: dict[str, float] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return self.rejected + self.lost_in_transport + self.unmatched + self.skipped

    def drop_causes(self) -> dict[str, int]:
        """Return the dropped frames by cause, as the log lines name them."""
        return {'bad input': self.rejected, 'lost before the node': self.lost_in_transport,
                'without a partner': self.unmatched,
                'skipped for a newer one': self.skipped}

    def line(self) -> str:
        """
        Return the periodic INFO line: frames, fps, p50 latency, dropped and their main cause.

        At most ``SHORT_LINE_CHARS``; the whole split is ``detail_line`` and /diagnostics.
        """
        dropped = ''
        if self.dropped:
            cause, count = max(self.drop_causes().items(), key=lambda item: item[1])
            others = self.dropped - count
            dropped = f' ({count} {cause}' + (f', {others} other' if others else '') + ')'
        return (f'{self.frames} frames, {self.fps:.1f} fps, latency p50 '
                f'{self.latency_p50_ms:.1f} ms, dropped {self.dropped}{dropped}')

    def detail_line(self) -> str:
        """Return the whole split of the period (the DEBUG line): stages, causes, device ms."""
        stages = ', '.join(f'{k} {v:.2f}' for k, v in self.stage_mean_ms.items())
        device = ', '.join(f'{k} {v:.2f}' for k, v in self.device_mean_ms.items())
        return (f'{self.frames} frames, {self.fps:.1f} fps, latency mean '
                f'{self.latency_mean_ms:.1f} ms p50 {self.latency_p50_ms:.1f} ms p95 '
                f'{self.latency_p95_ms:.1f} ms' + (f' ({stages} ms)' if stages else '')
                + f', dropped {self.dropped} ('
                + ', '.join(f'{n} {cause}' for cause, n in self.drop_causes().items()) + ')'
                + (f'; device ms: {device}' if device else ''))

    def key_values(self) -> dict[str, str]:
        return {'frames': str(self.frames), 'fps': f'{self.fps:.2f}',
                'latency_mean_ms': f'{self.latency_mean_ms:.3f}',
                'latency_p50_ms': f'{self.latency_p50_ms:.3f}',
                'latency_p95_ms': f'{self.latency_p95_ms:.3f}',
                **{f'stage_{k}_ms': f'{v:.3f}' for k, v in self.stage_mean_ms.items()},
                'dropped': str(self.dropped), 'rejected_bad_input': str(self.rejected),
                'lost_in_transport': str(self.lost_in_transport),
                'unmatched': str(self.unmatched), 'skipped_for_newer': str(self.skipped),
                **{f'device_{k}_ms': f'{v:.3f}' for k, v in self.device_mean_ms.items()}}


class FrameStats:
    """
    Accumulates the frames of one node.

    Transport losses come from gaps in the publisher's sequence numbers (rmw MessageInfo); with
    keep-last subscriptions they are the frames overwritten before the node took them. Frames
    the stereo synchroniser gave up (no partner, or passed over) and images before their
    camera_info (``PartnerPending``) count as ``unmatched``, frames that waited for the frame
    thread until a newer one came as ``skipped``.
    """

    def __init__(self) -> None:
        self.window = FrameWindow()
        self.total_frames = 0
        self._last_sequence: dict[tuple[str, bytes], int] = {}
        self._lock = threading.Lock()  # frames end on the node's publishing thread

    def note_sequence(self, publisher: bytes, sequence: int | None, stream: str = '') -> int:
        """Count the gap before ``sequence`` of ``publisher`` on ``stream`` as lost; return it."""
        if not sequence:  # 0 or None: the rmw does not provide sequence numbers
            return 0
        key = (stream, publisher)
        with self._lock:
            last = self._last_sequence.get(key)
            self._last_sequence[key] = sequence
            if last is None or sequence <= last + 1:
                return 0
            self.window.lost_in_transport += sequence - last - 1
            return sequence - last - 1

    def frame_done(self, timing: FrameTiming, device_ms: dict[str, float] | None = None) -> None:
        """Count a published frame; ``device_ms`` are device times from profiling events."""
        latency_ms = timing.latency_s() * 1e3
        with self._lock:
            self.total_frames += 1
            w = self.window
            w.frames += 1
            w.latency_sum_ms += latency_ms
            w.recent_latencies_ms.append(latency_ms)
            for stage, seconds in timing.stages.items():
                w.stage_sums_ms[stage] = w.stage_sums_ms.get(stage, 0.0) + seconds * 1e3
            for stage, ms in (device_ms or {}).items():
                sums = w.device_sums_ms.setdefault(stage, [0.0, 0])
                sums[0] += ms
                sums[1] += 1

    def frame_rejected(self) -> None:
        with self._lock:
            self.window.rejected += 1

    def frame_skipped(self) -> None:
        """Count a frame that waited for the frame thread until a newer one replaced it."""
        with self._lock:
            self.window.skipped += 1

    def frames_unmatched(self, count: int) -> None:
        with self._lock:
            self.window.unmatched += count

    def report(self) -> FrameReport:
        with self._lock:
            w, self.window = self.window, FrameWindow()
        elapsed = max(time.monotonic() - w.started, 1e-9)
        frames = max(w.frames, 1)
        recent = np.asarray(w.recent_latencies_ms) if w.recent_latencies_ms else np.zeros(1)
        return FrameReport(frames=w.frames, fps=w.frames / elapsed,
                           latency_mean_ms=w.latency_sum_ms / frames,
                           latency_p50_ms=float(np.percentile(recent, 50)),
                           latency_p95_ms=float(np.percentile(recent, 95)),
                           rejected=w.rejected, lost_in_transport=w.lost_in_transport,
                           unmatched=w.unmatched, skipped=w.skipped,
                           stage_mean_ms={k: total / frames
                                          for k, total in w.stage_sums_ms.items()},
                           device_mean_ms={k: total / count
                                           for k, (total, count) in w.device_sums_ms.items()})
