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
The stereo synchroniser: exact and approximate policies, queue limits, drop counts.

The approximate expectations are derived by hand from message_filters' ApproximateTime (the
policy of stereo_image_proc's approximate_sync): the queue heads form a candidate set whose
latest message is the pivot; the earliest head is passed, and the next heads replace the
candidate when (their end - candidate end) * 1.1 < (their start - candidate start) (age penalty
0.1). The candidate is emitted once the pivot itself is passed, or once (latest head - candidate
end) * 1.1 >= (pivot - candidate start), an empty queue counting as a message at the pivot's
stamp. Ties: the first stream is passed first, the last one is the pivot. With a tolerance,
heads spreading wider than it lose their earliest message before a candidate is formed.
"""
from itertools import product
import random
import re

from cl_vision_nodes.ros import stereo_sync
from cl_vision_nodes.ros.stereo_sync import StereoSynchronizer
import pytest

MS = 1_000_000
STEREO = ('L', 'R')
DISPARITY_INPUTS = ('L', 'R', 'LI', 'RI')  # the disparity node's order: images, then infos


def collect(streams=3, **kwargs):
    sets = []
    return StereoSynchronizer(streams, lambda *msgs: sets.append(msgs), **kwargs), sets


def approximate(names=STEREO, **kwargs):
    return collect(len(names), approximate=True, **kwargs)


def feed(sync, arrivals: str, names=STEREO) -> None:
    """Add messages in the given arrival order; 'R45' is stream R stamped 45 ms."""
    for token in arrivals.split():
        name, ms = re.fullmatch(r'([A-Z]+)(\d+)', token).groups()
        sync.add(names.index(name), int(ms) * MS, token)


def test_exact_emits_when_all_streams_share_a_stamp_in_any_arrival_order():
    sync, sets = collect()
    sync.add(0, 10, 'L10')
    sync.add(1, 20, 'R20')
    sync.add(2, 10, 'I10')
    assert sets == []
    sync.add(1, 10, 'R10')
    assert sets == [('L10', 'R10', 'I10')]
    sync.add(0, 20, 'L20')
    sync.add(2, 20, 'I20')
    assert sets[-1] == ('L20', 'R20', 'I20') and sync.dropped == 0


def test_exact_never_matches_different_stamps_and_drops_beyond_the_queue():
    sync, sets = collect(queue_size=2)
    for t in (1, 2, 3):
        sync.add(0, t, f'L{t}')
        sync.add(1, t + 100, f'R{t}')
        sync.add(2, t, f'I{t}')
    assert sets == [] and sync.dropped == 3  # one per stream beyond 2


def test_approximate_pairs_each_left_with_its_nearest_right_not_the_previous_one():
    sync, sets = approximate()
    feed(sync, 'L0 R45')
    assert sets == []  # a later left could still be nearer R45: wait
    feed(sync, 'L100')  # L100 is too far from R45: (L0, R45) is proven best
    assert sets == [('L0', 'R45')]
    feed(sync, 'R145 L200 R245 L300')
    assert sets == [('L0', 'R45'), ('L100', 'R145'), ('L200', 'R245')]
    assert sync.dropped == 0


def test_approximate_right_frames_arriving_before_their_left_pair_the_same():
    sync, sets = approximate()
    feed(sync, 'R45 R145 L0 L100 R245 L200 L300')
    assert sets == [('L0', 'R45'), ('L100', 'R145'), ('L200', 'R245')]
    assert sync.dropped == 0


def test_approximate_a_frame_lost_on_one_side_drops_its_partner():
    sync, sets = approximate()
    feed(sync, 'L0 R45 L100 R145 R245 L300 R345 L400')  # L200 lost
    # (L300, R245) is a candidate until R345 beats it: 45 * 1.1 < 300 - 245
    assert sets == [('L0', 'R45'), ('L100', 'R145'), ('L300', 'R345')]
    assert sync.dropped == 1  # R245


def test_approximate_a_missing_first_left_never_pairs_a_later_left_with_an_earlier_right():
    sync, sets = approximate()
    feed(sync, 'L100 R45 R145')
    assert sets == [('L100', 'R145')] and sync.dropped == 1  # R45


def test_approximate_the_tolerance_bounds_the_spread_of_emitted_sets():
    arrivals = 'L0 R10 L100 R160 L200 R205 L300 R310 L400'
    sync, sets = approximate(tolerance_ns=20 * MS)
    feed(sync, arrivals)
    assert sets == [('L0', 'R10'), ('L200', 'R205'), ('L300', 'R310')]
    assert sync.dropped == 2  # L100 and R160: no partner within 20 ms
    unbounded, loose = approximate()  # tolerance 0: any spread, the smallest one wins
    feed(unbounded, arrivals)
    assert loose == [('L0', 'R10'), ('L200', 'R160'), ('L300', 'R310')]
    assert unbounded.dropped == 2  # L100 (R160 is nearer L200) and R205 (R310 fits L300 better)


def test_approximate_tolerance_is_inclusive():
    sync, sets = approximate(tolerance_ns=20 * MS)
    feed(sync, 'L0 R20 L100 R120 L200')
    assert sets == [('L0', 'R20'), ('L100', 'R120')] and sync.dropped == 0


def test_approximate_with_zero_tolerance_accepts_any_spread():
    sync, sets = collect(approximate=True)
    sync.add(0, 0, 'a')
    sync.add(1, 10**9, 'b')
    sync.add(2, 5, 'c')
    assert sets == []  # a later c could be nearer to b
    sync.add(0, 2 * 10**9, 'a2')  # (2e9 - 1e9) * 1.1 >= 1e9 - 0: no later set can be better
    assert sets == [('a', 'b', 'c')] and sync.dropped == 0


def test_approximate_three_streams_drop_a_message_with_no_partner_within_tolerance():
    sync, sets = collect(approximate=True, tolerance_ns=5)
    sync.add(0, 100, 'L100')
    sync.add(1, 103, 'R103')
    sync.add(2, 101, 'I101')
    sync.add(0, 200, 'L200')
    assert sets == [('L100', 'R103', 'I101')]
    sync.add(1, 150, 'R150')  # too far from anything: dropped when I199 completes the heads
    sync.add(2, 199, 'I199')
    sync.add(1, 202, 'R202')
    sync.add(0, 300, 'L300')
    sync.add(1, 301, 'R301')
    sync.add(2, 300, 'I300')
    assert sets[-1] == ('L200', 'R202', 'I199') and sync.dropped == 1


def test_approximate_queue_overflow_drops_the_oldest_and_counts_it():
    sync, sets = approximate(queue_size=2)
    feed(sync, 'R0 R100 R200 R300')  # the left camera stalls: R0 and R100 pushed out
    assert sets == [] and sync.dropped == 2
    feed(sync, 'L290')  # (L290, R300) beats (L290, R200): 10 * 1.1 < 290 - 200
    assert sets == [('L290', 'R300')] and sync.dropped == 3


def test_approximate_a_stream_that_overflowed_is_not_taken_as_pivot_until_overtaken():
    sync, sets = approximate(queue_size=2)
    feed(sync, 'L0 R45 R145 R245')  # R45 pushed out: R, the pivot-to-be, may have lost a match
    assert sets == [] and sync.dropped == 2  # R45, then L0 (its set would end at R)
    feed(sync, 'L100')  # still ends at R145: dropped as well
    assert sets == [] and sync.dropped == 3
    feed(sync, 'L200')  # L now ends the set: (L200, R245) beats (L200, R145)
    assert sets == [('L200', 'R245')] and sync.dropped == 4  # R145


def test_approximate_age_penalty_keeps_an_earlier_set_unless_clearly_worse():
    sync, sets = approximate()
    feed(sync, 'L0 R50 L97')  # spread 47 < 50, but 47 * 1.1 >= 50: (L0, R50) stays
    assert sets == [('L0', 'R50')] and sync.dropped == 0


def test_approximate_next_infos_arriving_before_the_images_let_a_set_out_early():
    sync, sets = approximate(DISPARITY_INPUTS)
    feed(sync, 'L0 LI0 LI33 RI10 R10', DISPARITY_INPUTS)
    # L's queue is empty: its next message counts as at the pivot (10 ms), and LI33 alone
    # already makes every later set worse, so L33 need not be awaited
    assert sets == [('L0', 'R10', 'LI0', 'RI10')]


def test_approximate_equal_stamps_pass_the_first_input_first():
    sync, sets = approximate(DISPARITY_INPUTS)
    feed(sync, 'LI10 L10 R20 RI20', DISPARITY_INPUTS)
    assert sets == []  # a left pair at 20 would be better
    feed(sync, 'L30', DISPARITY_INPUTS)  # L10 was passed before LI10: L30 is proof enough
    assert sets == [('L10', 'R20', 'LI10', 'RI20')]


def test_approximate_reordered_frames_of_one_stream_are_put_back_in_stamp_order():
    sync, sets = approximate()
    feed(sync, 'L100 L0 R45 R145 L200 R245 L300')
    assert sets == [('L0', 'R45'), ('L100', 'R145'), ('L200', 'R245')]
    assert sync.dropped == 0
    feed(sync, 'L150')  # older than L200, already emitted: it can no longer be used
    assert sync.dropped == 1


def test_approximate_four_inputs_of_the_disparity_node_with_jitter_and_infos_first():
    sync, sets = approximate(DISPARITY_INPUTS)
    left, right = (0, 34, 66, 101), (3, 31, 70, 100)  # 30 fps, a few ms of jitter each side
    for l_ms, r_ms in zip(left, right):
        feed(sync, f'RI{r_ms} R{r_ms} LI{l_ms} L{l_ms}', DISPARITY_INPUTS)
    assert sets == [(f'L{lt}', f'R{rt}', f'LI{lt}', f'RI{rt}')
                    for lt, rt in zip(left[:3], right[:3])]
    assert sync.dropped == 0  # the last frame waits for the next one to prove it best


def smallest_contiguous_sets(per_stream: list[list[int]]) -> list[tuple[int, ...]]:
    """
    Compute ApproximateTime's output by brute force, as its wiki states it (age penalty 0).

    After the previous set, the set of smallest spread among those contiguous to it (on some stream
    the very next message), each stream's messages after the previous set's.
    """
    first, sets = [0] * len(per_stream), []
    while True:
        choices = [c for c in product(*(range(f, len(s)) for f, s in zip(first, per_stream)))
                   if any(c[i] == f for i, f in enumerate(first))]
        if not choices:
            return sets
        stamps = [tuple(s[i] for s, i in zip(per_stream, c)) for c in choices]
        best = min(range(len(choices)), key=lambda k: max(stamps[k]) - min(stamps[k]))
        sets.append(stamps[best])
        first = [i + 1 for i in choices[best]]


def arrival_order(rng: random.Random, per_stream: list[list[int]],
                  max_delay: int) -> list[tuple[int, int]]:
    """
    Order (stream, stamp) by arrival times up to ``max_delay`` after the stamps.

    Each stream in its own order (as DDS delivers one topic), the streams interleaved freely.
    """
    arrivals = []
    for stream, stamps in enumerate(per_stream):
        arrived = 0
        for stamp in stamps:
            arrived = max(arrived, stamp + rng.randint(0, max_delay))
            arrivals.append((arrived, stream, stamp))
    return [(stream, stamp) for _, stream, stamp in sorted(arrivals)]


def test_approximate_emits_the_smallest_contiguous_sets_of_message_filters_wiki(monkeypatch):
    monkeypatch.setattr(stereo_sync, 'AGE_PENALTY', 0)  # the wiki states its rules without it
    emitted = 0
    for seed in range(300):
        rng = random.Random(seed)
        per_stream = [sorted(rng.sample(range(10**6), rng.randint(1, 6)))
                      for _ in range(rng.choice((2, 3)))]
        expected = smallest_contiguous_sets(per_stream)
        sync, sets = approximate('LRI'[:len(per_stream)], queue_size=100)
        for stream, stamp in arrival_order(rng, per_stream, max_delay=10**6):
            sync.add(stream, stamp, stamp)
        assert sets == expected[:len(sets)], seed  # the newest sets may still wait for proof
        emitted += len(sets)
    assert emitted > 300


@pytest.mark.parametrize('seed', range(5))
def test_approximate_output_depends_on_the_stamps_not_on_the_arrival_order(seed):
    rng = random.Random(seed)
    cameras = [[k * 33 * MS + offset + rng.randint(-4 * MS, 4 * MS) for k in range(40)
                if rng.random() > 0.1] for offset in (0, 10 * MS)]  # 10 % of frames lost
    per_stream = [cameras[0], cameras[1], cameras[0], cameras[1]]  # infos stamped as images
    outputs = []
    for _ in range(3):
        sync, sets = approximate(DISPARITY_INPUTS, queue_size=10)
        for stream, stamp in arrival_order(rng, per_stream, max_delay=60 * MS):
            sync.add(stream, stamp, stamp)
        outputs.append((sets, sync.dropped))
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
    sets, dropped = outputs[0]
    assert len(sets) > 25
    for stream in range(4):
        used = [s[stream] for s in sets]
        assert used == sorted(set(used))  # each message once, sets never cross
    assert all(s[0] == s[2] and s[1] == s[3] for s in sets)  # each image with its own info
    assert dropped + 4 * len(sets) <= sum(map(len, per_stream))


def given_up_and_stamps(frames, *, right_offset_ns=0, late=(), lost=(), approximate=False,
                        tolerance_ns=0):
    """Feed a 10 Hz stereo camera's four streams; return what ``stamps_differ`` is given."""
    sync = StereoSynchronizer(4, lambda *msgs: None, queue_size=5, approximate=approximate,
                              tolerance_ns=tolerance_ns)
    stamps = [[], [], [], []]
    for frame in range(frames):
        stamp = frame * 100 * MS + (58 * MS if frame in late else 0)
        for stream in range(4):
            if (frame, stream) not in lost:
                stamps[stream].append(stamp + (right_offset_ns if stream == 1 else 0))
                sync.add(stream, stamps[stream][-1], None)
    return sync.take_given_up(), stamps


RIGHTS_LOST = {(frame, 1) for frame in range(0, 60, 4)}


@pytest.mark.parametrize('approximate, tolerance_ns', [(False, None), (True, 5 * MS)])
def test_lost_partners_beside_a_late_camera_timer_are_not_a_stamp_mismatch(
        approximate, tolerance_ns):
    # A loaded host: the camera's timer fires 58 ms late every 7th frame, so frames 3 -> 4 are
    # 42 ms apart, less than half a period; the node loses every 4th right image. Frame 4's left
    # image then has a near stamp of another frame (3's right), most lost partners none.
    late = set(range(3, 60, 7))
    given_up, stamps = given_up_and_stamps(60, late=late, lost=RIGHTS_LOST,
                                           approximate=approximate, tolerance_ns=tolerance_ns or 0)
    assert given_up
    assert not stereo_sync.stamps_differ(given_up, stamps, tolerance_ns)


@pytest.mark.parametrize('approximate, tolerance_ns, offset', [
    (False, None, 1 * MS), (True, 5 * MS, 20 * MS)])
def test_a_camera_stamping_each_side_on_its_own_is_a_stamp_mismatch(
        approximate, tolerance_ns, offset):
    given_up, stamps = given_up_and_stamps(60, right_offset_ns=offset, lost=RIGHTS_LOST,
                                           approximate=approximate, tolerance_ns=tolerance_ns or 0)
    assert stereo_sync.stamps_differ(given_up, stamps, tolerance_ns)
    if approximate:  # without a tolerance any spread pairs up
        assert not stereo_sync.stamps_differ(given_up, stamps, 0)
