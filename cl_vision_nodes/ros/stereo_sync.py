"""Time synchronisation of N message streams (left/right images and camera infos).

PyPI has no ROS 2 message_filters, so the disparity node carries this small synchroniser with
stereo_image_proc's two policies:

- exact (default): a set is emitted when every stream has a message with the same stamp.
- approximate: whenever every stream has a message, the set closest to the newest of the
  streams' oldest stamps is taken (one message per stream, nearest in time); it is emitted if
  its stamps spread over at most ``tolerance_ns`` (0 = any spread), else the oldest message is
  dropped and the search repeats. A simpler rule than message_filters' ApproximateTime, with
  the same guarantees that matter here: every emitted set is one message per stream, sets come
  out in time order, and no message is used twice.

Each stream keeps at most ``queue_size`` messages; older ones are dropped and counted, so an
unsynchronised stream shows up as a growing ``dropped`` count the node can report.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Sequence

Stamped = tuple[int, Any]  # (stamp in ns, message)


def _first(queue: deque[Stamped]) -> Stamped:
    """The oldest message by stamp (arrival order may differ from stamp order)."""
    return min(queue, key=lambda item: item[0])


class StereoSynchronizer:
    def __init__(self, streams: int, callback: Callable[..., None], *, queue_size: int = 5,
                 approximate: bool = False, tolerance_ns: int = 0):
        self._queues: list[deque[Stamped]] = [deque() for _ in range(streams)]
        self._callback = callback
        self._queue_size = queue_size
        self._approximate = approximate
        self._tolerance_ns = tolerance_ns
        self.dropped = 0

    def add(self, stream: int, stamp_ns: int, msg: Any) -> None:
        """Queue a message of ``stream``; emits every set it completes."""
        queue = self._queues[stream]
        queue.append((stamp_ns, msg))
        if len(queue) > self._queue_size:
            queue.popleft()
            self.dropped += 1
        if self._approximate:
            self._emit_approximate()
        else:
            self._emit_exact(stamp_ns)

    def _emit_exact(self, stamp_ns: int) -> None:
        matched = [next((m for t, m in q if t == stamp_ns), None) for q in self._queues]
        if any(m is None for m in matched):
            return
        self._discard_through([stamp_ns] * len(self._queues))
        self._callback(*matched)

    def _emit_approximate(self) -> None:
        while all(self._queues):
            pivot = max(_first(q)[0] for q in self._queues)
            chosen = [min(q, key=lambda item: abs(item[0] - pivot)) for q in self._queues]
            stamps = [t for t, _ in chosen]
            if self._tolerance_ns == 0 or max(stamps) - min(stamps) <= self._tolerance_ns:
                self._discard_through(stamps)
                self._callback(*(m for _, m in chosen))
                return
            oldest = min(range(len(self._queues)), key=lambda i: _first(self._queues[i])[0])
            self._queues[oldest].remove(_first(self._queues[oldest]))
            self.dropped += 1

    def _discard_through(self, stamps: Sequence[int]) -> None:
        """Remove each stream's messages up to and including its used stamp; older unused
        ones count as dropped."""
        for index, stamp in enumerate(stamps):
            queue = self._queues[index]
            self.dropped += sum(1 for t, _ in queue if t < stamp)
            self._queues[index] = deque(item for item in queue if item[0] > stamp)
