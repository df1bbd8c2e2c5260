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

"""The span bookkeeping behind flow/span diagnostics and max_span: period, long spans, resets."""
from cl_vision_nodes.capabilities.flow_span import FlowSpans, PERIOD_SPANS

MS = 1_000_000


def test_period_is_the_shortest_span_and_longer_than_1_5_periods_is_long():
    spans = FlowSpans()
    assert spans.period_ns() == 0
    # a camera at 10 Hz with frames dropped before the node
    for ms in (200, 100, 200, 100, 150):
        spans.flow_published(ms * MS)
    assert spans.period_ns() == 100 * MS
    assert spans.key_values() == {'flow_spans': '5', 'flow_spans_long': '1',  # 200 before 100
                                  'flow_span_max_s': '0.200000', 'flow_period_s': '0.100000',
                                  'flow_history_resets_gap': '0'}
    spans.flow_published(151 * MS)
    assert spans.key_values()['flow_spans_long'] == '1'


def test_counts_are_per_window_and_the_period_carries_over():
    spans = FlowSpans()
    spans.flow_published(100 * MS)
    spans.key_values()
    assert spans.key_values() == {'flow_spans': '0', 'flow_spans_long': '0',
                                  'flow_span_max_s': '0.000000', 'flow_period_s': '0.100000',
                                  'flow_history_resets_gap': '0'}


def test_period_follows_the_last_spans_and_ignores_repeated_stamps():
    spans = FlowSpans()
    spans.flow_published(0)  # a repeated stamp says nothing about the camera
    assert spans.period_ns() == 0 and spans.key_values()['flow_spans_long'] == '0'
    spans.flow_published(50 * MS)
    for _ in range(PERIOD_SPANS - 1):
        spans.flow_published(100 * MS)
    assert spans.period_ns() == 50 * MS
    spans.flow_published(100 * MS)  # the 50 ms span is now older than the last PERIOD_SPANS
    assert spans.period_ns() == 100 * MS


def test_a_gap_beyond_max_span_resets_and_0_is_no_limit():
    spans = FlowSpans(max_span_s=0.15)
    assert not spans.beyond_limit(150 * MS) and spans.beyond_limit(150 * MS + 1)
    spans.history_reset()
    spans.history_reset()
    assert spans.key_values()['flow_history_resets_gap'] == '2'
    spans.max_span_s = 0.0
    assert not spans.beyond_limit(3600_000 * MS)
