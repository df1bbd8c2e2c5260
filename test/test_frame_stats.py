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

"""Frame statistics behind the nodes' timing log line and /diagnostics."""
from cl_vision_nodes.ros.frame_stats import FrameStats, LATENCY_SAMPLES


def test_report_summarises_a_window_and_starts_the_next():
    stats = FrameStats()
    for ms in (10, 20, 30, 40):
        stats.frame_done(ms / 1e3, ms / 2e3, {'decode': 1.0, 'scale': ms / 10})
    stats.frame_rejected()
    report = stats.report()
    assert report.frames == 4 and report.rejected == 1 and report.dropped == 1
    assert abs(report.latency_mean_ms - 25.0) < 1e-9 and abs(report.compute_mean_ms - 12.5) < 1e-9
    assert report.latency_p95_ms > 38.0
    assert report.stage_mean_ms == {'decode': 1.0, 'scale': 2.5}
    assert 'device ms: decode 1.00, scale 2.50' in report.line()
    assert report.key_values()['stage_scale_ms'] == '2.500'
    assert stats.report().frames == 0 and stats.total_frames == 4


def test_sequence_gaps_count_as_lost_per_publisher():
    stats = FrameStats()
    for seq in (1, 2, 5, 6):
        stats.note_sequence(b'a', seq)
    stats.note_sequence(b'b', 10)  # a second publisher starts its own count
    stats.note_sequence(b'b', 11)
    stats.note_sequence(b'c', None)  # rmw without sequence numbers
    assert stats.report().lost_in_transport == 2


def test_a_window_never_reported_stays_bounded():
    """diagnostics_period 0: no report closes the window, yet 5,000 frames keep its size."""
    stats = FrameStats()
    for i in range(5000):
        stats.frame_done(i / 1e6, 1e-3, {'decode': 1.0, 'scale': 3.0})
    window = stats.window
    held = [value for value in vars(window).values() if hasattr(value, '__len__')]
    assert max(len(value) for value in held) <= LATENCY_SAMPLES
    report = stats.report()
    assert report.frames == 5000 and abs(report.latency_mean_ms - 2.4995) < 1e-9
    assert report.latency_p95_ms > 4.9  # the recent frames' latencies
    assert report.stage_mean_ms == {'decode': 1.0, 'scale': 3.0}
