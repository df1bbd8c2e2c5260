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
import time

from cl_vision_nodes.ros.frame_stats import (FrameStats, FrameTiming, LATENCY_SAMPLES,
                                             receive_seconds, SHORT_LINE_CHARS)


class FixedTiming(FrameTiming):
    """A frame whose latency is the sum of its stages (no wall clock)."""

    def latency_s(self) -> float:
        return sum(self.stages.values())


def fixed(receive_ms: float, **stages_ms: float) -> FixedTiming:
    frame = FixedTiming(receive_ms / 1e3)
    frame.stages.update({k: v / 1e3 for k, v in stages_ms.items()})
    return frame


def test_report_summarises_a_window_and_starts_the_next():
    stats = FrameStats()
    for ms in (10, 20, 30, 40):
        stats.frame_done(fixed(ms / 2, upload=1.0, compute=ms / 4, publish=ms / 4 - 1.0),
                         {'decode': 1.0, 'scale': ms / 10})
    stats.frame_rejected()
    stats.frames_unmatched(2)
    stats.frame_skipped()
    report = stats.report()
    assert report.frames == 4 and report.rejected == 1 and report.unmatched == 2
    assert report.skipped == 1 and report.dropped == 4
    assert abs(report.latency_mean_ms - 25.0) < 1e-9
    assert abs(report.stage_mean_ms['compute'] - 6.25) < 1e-9
    assert abs(report.stage_mean_ms['receive'] - 12.5) < 1e-9
    assert list(report.stage_mean_ms) == ['receive', 'upload', 'compute', 'publish']
    assert report.latency_p95_ms > 38.0 and 20.0 <= report.latency_p50_ms <= 30.0
    assert report.device_mean_ms == {'decode': 1.0, 'scale': 2.5}
    assert report.line() == '4 frames, ' + f'{report.fps:.1f}' + ' fps, latency p50 ' + \
        f'{report.latency_p50_ms:.1f}' + ' ms, dropped 4 (2 without a partner, 2 other)'
    line = report.detail_line()
    assert 'receive 12.50, upload 1.00, compute 6.25, publish 5.25 ms' in line
    assert 'device ms: decode 1.00, scale 2.50' in line and '2 without a partner' in line
    assert '1 skipped for a newer one' in line
    values = report.key_values()
    assert values['device_scale_ms'] == '2.500' and values['stage_compute_ms'] == '6.250'
    assert values['unmatched'] == '2' and values['dropped'] == '4'
    assert values['skipped_for_newer'] == '1'
    assert stats.report().frames == 0 and stats.total_frames == 4


def test_stages_measure_wall_time_and_latency_includes_receive():
    frame = FrameTiming(0.002)
    with frame.stage('compute'):
        sum(range(10000))
    assert frame.stages['compute'] > 0
    assert frame.latency_s() >= 0.002 + frame.stages['compute']


def test_waiting_for_the_frame_thread_counts_as_receive():
    frame = FrameTiming(0.002)
    time.sleep(0.01)
    frame.waited()
    assert frame.stages['receive'] >= 0.012
    assert frame.latency_s() - frame.stages['receive'] < 0.005


def test_receive_time_from_the_source_timestamp():
    assert receive_seconds({}) == 0.0 and receive_seconds(None) == 0.0
    sent = time.time_ns() - 3_000_000
    assert 0.003 <= receive_seconds({'source_timestamp': sent}) < 1.0


def test_sequence_gaps_count_as_lost_per_publisher_and_stream():
    stats = FrameStats()
    for seq in (1, 2, 5, 6):
        stats.note_sequence(b'a', seq)
    stats.note_sequence(b'b', 10)  # a second publisher starts its own count
    stats.note_sequence(b'b', 11)
    stats.note_sequence(b'c', None)  # rmw without sequence numbers
    stats.note_sequence(b'a', 1, 'right')  # the same publisher gid on another input
    stats.note_sequence(b'a', 3, 'right')
    assert stats.report().lost_in_transport == 3


def test_a_window_never_reported_stays_bounded():
    """diagnostics_period 0: no report closes the window, yet 5,000 frames keep its size."""
    stats = FrameStats()
    for i in range(5000):
        stats.frame_done(fixed(0.0, compute=i / 1e3), {'decode': 1.0, 'scale': 3.0})
    window = stats.window
    held = [value for value in vars(window).values() if hasattr(value, '__len__')]
    assert max(len(value) for value in held) <= LATENCY_SAMPLES
    report = stats.report()
    assert report.frames == 5000 and abs(report.latency_mean_ms - 2.4995) < 1e-9
    assert report.latency_p95_ms > 4.9  # the recent frames' latencies
    assert report.device_mean_ms == {'decode': 1.0, 'scale': 3.0}


def test_the_info_line_stays_short_for_any_counts():
    """Six-figure counts in a period, five-figure fps and latency: still one short line."""
    stats = FrameStats()
    stats.frame_done(fixed(99999.0, compute=99999.0))
    window = stats.window
    window.started = time.monotonic() - 10.0  # 999999 frames in 10 s
    window.frames = window.rejected = window.lost_in_transport = window.skipped = 999999
    window.unmatched = 1000000
    line = stats.report().line()
    assert len(line) <= SHORT_LINE_CHARS, line
    assert line.startswith('999999 frames, ') and ' fps, latency p50 199998.0 ms, ' in line
    assert line.endswith(', dropped 3999997 (1000000 without a partner, 2999997 other)')
    assert 'receive' not in line and 'device' not in line
