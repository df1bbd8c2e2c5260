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
Per-frame timing of a node: latency, compute time, rate and dropped frames over a window.

A window holds sums and a bounded sample of recent latencies, never one entry per frame: with
``diagnostics_period`` 0 no report ever closes it, and it must not grow over days of frames.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
import time

import numpy as np

LATENCY_SAMPLES = 1000
"""Latencies kept for the p95: those of the window's last frames (a report every 5 s at 200
fps is exact)."""


@dataclass
class FrameWindow:
    """Counters since the last report; ``report()`` summarises and starts a new window."""

    started: float = field(default_factory=time.monotonic)
    frames: int = 0
    latency_sum_ms: float = 0.0
    compute_sum_ms: float = 0.0
    recent_latencies_ms: deque[float] = field(
        default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    stage_sums_ms: dict[str, list[float]] = field(default_factory=dict)  # stage -> [sum, count]
    rejected: int = 0
    lost_in_transport: int = 0


@dataclass(frozen=True)
class FrameReport:
    frames: int
    fps: float
    latency_mean_ms: float
    latency_p95_ms: float
    compute_mean_ms: float
    rejected: int
    lost_in_transport: int
    stage_mean_ms: dict[str, float] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return self.rejected + self.lost_in_transport

    def line(self) -> str:
        return (f'{self.frames} frames, {self.fps:.1f} fps, '
                f'latency mean {self.latency_mean_ms:.1f} ms p95 {self.latency_p95_ms:.1f} ms, '
                f'compute {self.compute_mean_ms:.1f} ms, '
                f'dropped {self.dropped} ({self.rejected} bad input, '
                f'{self.lost_in_transport} lost before the node)' + self._stages_text())

    def _stages_text(self) -> str:
        if not self.stage_mean_ms:
            return ''
        return '; device ms: ' + ', '.join(f'{k} {v:.2f}' for k, v in self.stage_mean_ms.items())

    def key_values(self) -> dict[str, str]:
        return {'frames': str(self.frames), 'fps': f'{self.fps:.2f}',
                'latency_mean_ms': f'{self.latency_mean_ms:.3f}',
                'latency_p95_ms': f'{self.latency_p95_ms:.3f}',
                'compute_mean_ms': f'{self.compute_mean_ms:.3f}',
                'dropped': str(self.dropped), 'rejected_bad_input': str(self.rejected),
                'lost_in_transport': str(self.lost_in_transport),
                **{f'stage_{k}_ms': f'{v:.3f}' for k, v in self.stage_mean_ms.items()}}


class FrameStats:
    """
    Accumulates frames of one input stream.

    Transport losses come from gaps in the publisher's sequence numbers (rmw MessageInfo); with
    keep-last-1 best-effort subscriptions they are the frames skipped because the node was busy.
    """

    def __init__(self) -> None:
        self.window = FrameWindow()
        self.total_frames = 0
        self._last_sequence: dict[bytes, int] = {}

    def note_sequence(self, publisher: bytes, sequence: int | None) -> None:
        if not sequence:  # 0 or None: the rmw does not provide sequence numbers
            return
        last = self._last_sequence.get(publisher)
        if last is not None and sequence > last + 1:
            self.window.lost_in_transport += sequence - last - 1
        self._last_sequence[publisher] = sequence

    def frame_done(self, latency_s: float, compute_s: float,
                   stages_ms: dict[str, float] | None = None) -> None:
        """Count a published frame; ``stages_ms`` are device times from profiling events."""
        self.total_frames += 1
        w = self.window
        w.frames += 1
        w.latency_sum_ms += latency_s * 1e3
        w.compute_sum_ms += compute_s * 1e3
        w.recent_latencies_ms.append(latency_s * 1e3)
        for stage, ms in (stages_ms or {}).items():
            sums = w.stage_sums_ms.setdefault(stage, [0.0, 0])
            sums[0] += ms
            sums[1] += 1

    def frame_rejected(self) -> None:
        self.window.rejected += 1

    def report(self) -> FrameReport:
        w, self.window = self.window, FrameWindow()
        elapsed = max(time.monotonic() - w.started, 1e-9)
        frames = max(w.frames, 1)
        recent = np.asarray(w.recent_latencies_ms) if w.recent_latencies_ms else np.zeros(1)
        return FrameReport(frames=w.frames, fps=w.frames / elapsed,
                           latency_mean_ms=w.latency_sum_ms / frames,
                           latency_p95_ms=float(np.percentile(recent, 95)),
                           compute_mean_ms=w.compute_sum_ms / frames, rejected=w.rejected,
                           lost_in_transport=w.lost_in_transport,
                           stage_mean_ms={k: total / count
                                          for k, (total, count) in w.stage_sums_ms.items()})
