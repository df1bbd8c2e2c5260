"""The stereo synchroniser: exact and approximate policies, queue limits, drop counts."""
from cl_vision_nodes.ros.stereo_sync import StereoSynchronizer


def collect(**kwargs):
    sets = []
    return StereoSynchronizer(3, lambda *msgs: sets.append(msgs), **kwargs), sets


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


def test_approximate_pairs_nearest_messages_within_tolerance_in_time_order():
    sync, sets = collect(approximate=True, tolerance_ns=5)
    sync.add(0, 100, 'L100')
    sync.add(1, 103, 'R103')
    sync.add(2, 101, 'I101')
    assert sets == [('L100', 'R103', 'I101')]
    sync.add(0, 200, 'L200')
    sync.add(1, 150, 'R150')  # too far from anything: dropped when a later set completes
    sync.add(2, 199, 'I199')
    sync.add(1, 202, 'R202')
    assert sets[-1] == ('L200', 'R202', 'I199') and sync.dropped == 1


def test_approximate_with_zero_tolerance_accepts_any_spread():
    sync, sets = collect(approximate=True)
    sync.add(0, 0, 'a')
    sync.add(1, 10**9, 'b')
    sync.add(2, 5, 'c')
    assert sets == [('a', 'b', 'c')]
