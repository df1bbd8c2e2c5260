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
The time spans of a flow node's flows, for its diagnostics and its ``max_span`` limit.

A flow spans from the previous processed frame to the current one: one camera period, or
longer where frames were dropped before the node (transport, a busy node, a bag played too
fast). The node knows no camera rate, so the period is estimated as the shortest positive span
among the last ``PERIOD_SPANS`` flows: drops only lengthen spans, so the shortest one is the
camera's period as soon as two consecutive frames got through (a repeated stamp, span 0, says
nothing). A span over ``LONG_FACTOR`` periods has at least one frame missing inside it.

Counts are per diagnostics window, like the frame statistics: ``key_values`` reports them and
starts a new window; the period estimate carries over. Used from the node's executor thread
only (frames and the diagnostics timer), so it needs no lock.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

PERIOD_SPANS = 100
"""Flows whose spans the period estimate looks at: a few seconds of a camera, so a rate change
is followed, and one lucky pair of consecutive frames is enough."""
LONG_FACTOR = 1.5
"""A span longer than this many estimated periods counts as long (a frame missing inside)."""
NS_PER_S = 1_000_000_000


@dataclass
class SpanWindow:
    """Counters since the last diagnostics report."""

    spans: int = 0
    long: int = 0
    max_ns: int = 0
    resets_gap: int = 0


class FlowSpans:
    """The spans of published flows: the camera period they suggest, long spans, gap resets."""

    def __init__(self, max_span_s: float = 0.0):
        """Start with no history; ``max_span_s`` is the ``max_span`` parameter (0 = no limit)."""
        self.max_span_s = max_span_s
        self.window = SpanWindow()
        self._recent: deque[int] = deque(maxlen=PERIOD_SPANS)  # positive spans, ns

    def beyond_limit(self, gap_ns: int) -> bool:
        """Return whether frames ``gap_ns`` apart are too far apart to estimate flow across."""
        return self.max_span_s > 0 and gap_ns > round(self.max_span_s * NS_PER_S)

    def history_reset(self) -> None:
        """Count a history restarted because the gap was ``beyond_limit``."""
        self.window.resets_gap += 1

    def flow_published(self, span_ns: int) -> None:
        """Count the span of a published flow, long if over ``LONG_FACTOR`` periods."""
        if span_ns > 0:
            self._recent.append(span_ns)
        w = self.window
        w.spans += 1
        w.long += span_ns > LONG_FACTOR * self.period_ns()
        w.max_ns = max(w.max_ns, span_ns)

    def period_ns(self) -> int:
        """Return the estimated camera period (0 until a positive span was seen)."""
        return min(self._recent, default=0)

    def key_values(self) -> dict[str, str]:
        """
        Return the window's diagnostics key/values and start a new window.

        ``flow_spans`` flows published, ``flow_spans_long`` of them long, ``flow_span_max_s``
        the longest (0 without flows), ``flow_period_s`` the period estimate (0 while unknown),
        ``flow_history_resets_gap`` histories restarted for a gap beyond ``max_span``.
        """
        w, self.window = self.window, SpanWindow()
        return {'flow_spans': str(w.spans), 'flow_spans_long': str(w.long),
                'flow_span_max_s': f'{w.max_ns / NS_PER_S:.6f}',
                'flow_period_s': f'{self.period_ns() / NS_PER_S:.6f}',
                'flow_history_resets_gap': str(w.resets_gap)}
