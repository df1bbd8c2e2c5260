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
Time synchronisation of N message streams (left/right images and camera infos).

PyPI has no ROS 2 message_filters, so the disparity node carries this small synchroniser with
stereo_image_proc's two policies:

- exact (default): a set is emitted when every stream has a message with the same stamp.
- approximate: message_filters' ApproximateTime, the policy behind stereo_image_proc's
  ``approximate_sync``. Among the sets (one message per stream) that follow the last emitted
  one, it picks the one whose stamps spread the least, and emits it only once no later message
  can make a better set, so a left frame is never paired with the previous right frame just
  because that one came first. Emitted sets never share a message and never cross (each
  stream's messages come out in stamp order); they are contiguous (message_filters' rule: the
  leftovers of frames lost on both sides pair up rather than being skipped). The price is
  latency: a set is usually proven best only when a message of the next frame arrives.
  ``tolerance_ns`` > 0 is message_filters' max interval duration: a set whose stamps spread over
  more than it is never emitted (0 = no bound, stereo_image_proc's default). Recent
  stereo_image_proc switches to the greedy ApproximateEpsilonTime when its tolerance is set;
  this keeps the best-set policy and applies the tolerance as a bound on it.

Each stream keeps at most ``queue_size`` messages. Every message that will never be emitted
(pushed out of a full queue, passed over for a better set, too far from any partner, or arriving
older than what its stream already gave up) counts in ``dropped``, which the node reports; the
stamps of the latest ones stay in ``given_up`` so the node can tell a lost partner from stamps
that differ.
"""
from __future__ import annotations

from bisect import insort
from collections import deque
from fractions import Fraction
from statistics import median
from typing import Any, Callable, Iterable, Sequence

Stamped = tuple[int, Any]  # (stamp in ns, message)
Emit = Callable[..., None]

# message_filters' default age penalty: a later set must beat an earlier one's spread by a tenth
# of how much later it ends (its wiki says the default is 0; its code has used 0.1 ever since).
AGE_PENALTY = Fraction(1, 10)
GIVEN_UP_KEPT = 256  # (stream, stamp) of the latest messages given up


class _Policy:
    """What both policies share: the count and the latest stamps of the messages given up."""

    def __init__(self, streams: int):
        self.dropped = [0] * streams
        self.given_up: deque[tuple[int, int]] = deque(maxlen=GIVEN_UP_KEPT)

    def _drop(self, stream: int, stamp: int) -> None:
        self.dropped[stream] += 1
        self.given_up.append((stream, stamp))


class StereoSynchronizer:
    """Calls ``callback(*messages)`` with one message per stream, in stream order."""

    def __init__(self, streams: int, callback: Emit, *, queue_size: int = 5,
                 approximate: bool = False, tolerance_ns: int = 0):
        self._policy = (_ApproximateTime(streams, callback, queue_size, tolerance_ns)
                        if approximate else _ExactTime(streams, callback, queue_size))

    def add(self, stream: int, stamp_ns: int, msg: Any) -> None:
        """Queue a message of ``stream``; emits every set it completes."""
        self._policy.add(stream, stamp_ns, msg)

    @property
    def dropped(self) -> int:
        """Messages discarded so far without being part of an emitted set."""
        return sum(self._policy.dropped)

    def dropped_of(self, stream: int) -> int:
        """Messages of ``stream`` discarded so far (a node counts its left images as frames)."""
        return self._policy.dropped[stream]

    def take_given_up(self) -> list[tuple[int, int]]:
        """Return (stream, stamp) of the messages given up since the last call (the latest)."""
        taken = list(self._policy.given_up)
        self._policy.given_up.clear()
        return taken


class _ExactTime(_Policy):
    """message_filters' ExactTime: emit the messages of one stamp once every stream has it."""

    def __init__(self, streams: int, emit: Emit, queue_size: int):
        super().__init__(streams)
        self._queues: list[deque[Stamped]] = [deque() for _ in range(streams)]
        self._emit = emit
        self._queue_size = queue_size

    def add(self, stream: int, stamp_ns: int, msg: Any) -> None:
        queue = self._queues[stream]
        queue.append((stamp_ns, msg))
        if len(queue) > self._queue_size:
            self._drop(stream, queue.popleft()[0])
        matched = [next((m for t, m in q if t == stamp_ns), None) for q in self._queues]
        if any(m is None for m in matched):
            return
        self._discard_through([stamp_ns] * len(self._queues))
        self._emit(*matched)

    def _discard_through(self, stamps: Sequence[int]) -> None:
        """
        Remove each stream's messages up to and including its used stamp.

        Older unused ones count as dropped.
        """
        for index, stamp in enumerate(stamps):
            queue = self._queues[index]
            for t, _ in queue:
                if t < stamp:
                    self._drop(index, t)
            self._queues[index] = deque(item for item in queue if item[0] > stamp)


def _earliest(stamps: Sequence[int]) -> int:
    """Index of the earliest stamp, the first one on ties (as message_filters)."""
    return min(range(len(stamps)), key=lambda i: stamps[i])


def _latest(stamps: Sequence[int]) -> int:
    """Index of the latest stamp, the last one on ties (as message_filters)."""
    return max(reversed(range(len(stamps))), key=lambda i: stamps[i])


def _stamp(item: Stamped) -> int:
    return item[0]


class _ApproximateTime(_Policy):
    """
    message_filters' ApproximateTime without inter-message lower bounds.

    stereo_image_proc sets none; they only let a set out earlier, never change it.

    The search walks the queue heads: the latest head is the pivot, the heads form a candidate
    set, and the earliest head is moved aside ("passed") to look at the next set, which replaces
    the candidate when its spread is smaller. Once the pivot itself is passed, or any later set
    would have to span from the pivot to a head already too late, the candidate is emitted and
    the passed messages go back to their queues for the next search.
    """

    def __init__(self, streams: int, emit: Emit, queue_size: int, max_spread_ns: int):
        super().__init__(streams)
        self._queues: list[deque[Stamped]] = [deque() for _ in range(streams)]
        self._passed: list[list[Stamped]] = [[] for _ in range(streams)]
        self._emit = emit
        self._queue_size = queue_size
        self._max_spread_ns = max_spread_ns
        self._candidate: list[Stamped] | None = None
        self._candidate_span = (0, 0)  # its earliest and latest stamp
        self._pivot = 0
        self._pivot_ns = 0
        # a stream that overflowed may have lost the partner of the pivot it would give:
        # it cannot be the pivot until another stream's head is the latest
        self._overflowed = [False] * streams
        self._given_up: list[int | None] = [None] * streams  # newest stamp emitted or dropped

    def add(self, stream: int, stamp_ns: int, msg: Any) -> None:
        given_up = self._given_up[stream]
        if given_up is not None and stamp_ns < given_up:
            self._drop(stream, stamp_ns)  # too late: emitting it would cross sets decided
            return
        queue, passed = self._queues[stream], self._passed[stream]
        newest = queue[-1] if queue else passed[-1] if passed else None
        if newest is not None and stamp_ns < newest[0]:
            self._restart()  # out of order within the stream: search again from its place
            insort(queue, (stamp_ns, msg), key=_stamp)
        else:
            queue.append((stamp_ns, msg))
        self._process()
        if len(queue) + len(self._passed[stream]) > self._queue_size:
            self._restart()
            self._discard_front(stream)
            self._overflowed[stream] = True
            self._process()

    def _process(self) -> None:
        while all(self._queues):
            heads = [q[0][0] for q in self._queues]
            first, last = _earliest(heads), _latest(heads)
            start, end = heads[first], heads[last]
            self._overflowed = [flag and i == last for i, flag in enumerate(self._overflowed)]
            if self._candidate is None:
                too_wide = 0 < self._max_spread_ns < end - start
                if too_wide or self._overflowed[last]:
                    self._discard_front(first)
                    continue
                self._take_candidate(start, end)
                self._pivot, self._pivot_ns = last, end
            elif self._is_better(start, end):
                self._take_candidate(start, end)
            self._passed[first].append(self._queues[first].popleft())
            if first == self._pivot or self._is_proven(end):
                self._publish()
            elif not all(self._queues):
                self._search_ahead()

    def _search_ahead(self) -> None:
        """
        Search ahead with some queue empty: emit the candidate if proven best, else wait.

        Assume the empty queue's next message comes at the pivot's stamp (the most favourable stamp
        for a rival set) and keep passing heads: emit if the candidate is proven best even so, else
        put the heads back and wait.
        """
        moves: list[int] = []
        while True:
            heads = [q[0][0] if q else self._pivot_ns for q in self._queues]
            first, last = _earliest(heads), _latest(heads)
            if self._is_proven(heads[last]):
                self._publish()
                return
            if self._is_better(heads[first], heads[last]):
                for stream in reversed(moves):
                    self._queues[stream].appendleft(self._passed[stream].pop())
                return
            self._passed[first].append(self._queues[first].popleft())
            moves.append(first)

    def _is_better(self, start: int, end: int) -> bool:
        """Whether the set spanning [start, end] beats the candidate, age penalty included."""
        begin, finish = self._candidate_span
        return (end - finish) * (1 + AGE_PENALTY) < start - begin

    def _is_proven(self, end: int) -> bool:
        """
        Return whether every set ending at ``end`` or later is worse than the candidate.

        Such a set also reaches back to the pivot's stamp or earlier.
        """
        begin, finish = self._candidate_span
        return (end - finish) * (1 + AGE_PENALTY) >= self._pivot_ns - begin

    def _take_candidate(self, start: int, end: int) -> None:
        """
        Make the queue heads the candidate.

        Messages passed before it can no longer be part of any set.
        """
        for stream, passed in enumerate(self._passed):
            for stamp, _ in passed:
                self._give_up(stream, stamp)
            passed.clear()
        self._candidate = [q[0] for q in self._queues]
        self._candidate_span = (start, end)

    def _publish(self) -> None:
        chosen = self._candidate
        self._restart()
        for stream, queue in enumerate(self._queues):
            stamp, _ = queue.popleft()  # the candidate's message heads its queue again
            self._given_up[stream] = stamp
        self._emit(*(msg for _, msg in chosen))

    def _restart(self) -> None:
        """Drop the candidate and put every passed message back at the head of its queue."""
        for queue, passed in zip(self._queues, self._passed):
            queue.extendleft(reversed(passed))
            passed.clear()
        self._candidate = None

    def _discard_front(self, stream: int) -> None:
        stamp, _ = self._queues[stream].popleft()
        self._give_up(stream, stamp)

    def _give_up(self, stream: int, stamp: int) -> None:
        self._drop(stream, stamp)
        previous = self._given_up[stream]
        self._given_up[stream] = stamp if previous is None else max(previous, stamp)


def stamps_differ(given_up: Sequence[tuple[int, int]], stamps: Sequence[Iterable[int]],
                  tolerance_ns: int | None) -> bool:
    """
    Whether most of the messages given up had a near partner of another stamp on another stream.

    ``stamps``: each stream's recent stamps, the left image's first; ``tolerance_ns``: None for
    the exact policy, else the approximate one's. Near: within half a frame period (the median
    step of the left stamps), and beyond the tolerance. A camera that stamps each side on its own
    leaves such a partner beside every message given up; a lost partner leaves none, and a
    camera's timer running late now and then (a loaded host) brings two frames' stamps within
    half a period for a few of them only: so most, not one.
    """
    if not given_up or tolerance_ns == 0:
        return False  # any spread pairs up: what is given up was passed over or lost
    kept = [set(stream_stamps) for stream_stamps in stamps]
    left = sorted(kept[0])
    half_period = median(b - a for a, b in zip(left, left[1:])) / 2 if len(left) > 1 \
        else float('inf')
    low = min(tolerance_ns or 0, half_period)

    def has_near_partner(stream: int, stamp: int) -> bool:
        return any(low < abs(t - stamp) < half_period
                   for other, others in enumerate(kept)
                   if other != stream and stamp not in others for t in others)
    near = sum(has_near_partner(stream, stamp) for stream, stamp in given_up)
    return 2 * near > len(given_up)
