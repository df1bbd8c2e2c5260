"""Per-frame timing of a node: latency, compute time, rate and dropped frames over a window."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class FrameWindow:
    """Counters since the last report; ``report()`` summarises and starts a new window."""

    started: float = field(default_factory=time.monotonic)
    latencies_ms: list[float] = field(default_factory=list)
    compute_ms: list[float] = field(default_factory=list)
    stage_ms: dict[str, list[float]] = field(default_factory=dict)
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
        return (f'{self.frames} frames, {self.fps:.1f} fps, latency mean {self.latency_mean_ms:.1f}'
                f' ms p95 {self.latency_p95_ms:.1f} ms, compute {self.compute_mean_ms:.1f} ms, '
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
    """Accumulates frames of one input stream.

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
        self.window.latencies_ms.append(latency_s * 1e3)
        self.window.compute_ms.append(compute_s * 1e3)
        for stage, ms in (stages_ms or {}).items():
            self.window.stage_ms.setdefault(stage, []).append(ms)

    def frame_rejected(self) -> None:
        self.window.rejected += 1

    def report(self) -> FrameReport:
        w, self.window = self.window, FrameWindow()
        elapsed = max(time.monotonic() - w.started, 1e-9)
        lat = np.asarray(w.latencies_ms) if w.latencies_ms else np.zeros(1)
        comp = np.asarray(w.compute_ms) if w.compute_ms else np.zeros(1)
        return FrameReport(frames=len(w.latencies_ms), fps=len(w.latencies_ms) / elapsed,
                           latency_mean_ms=float(lat.mean()),
                           latency_p95_ms=float(np.percentile(lat, 95)),
                           compute_mean_ms=float(comp.mean()), rejected=w.rejected,
                           lost_in_transport=w.lost_in_transport,
                           stage_mean_ms={k: float(np.mean(v)) for k, v in w.stage_ms.items()})
