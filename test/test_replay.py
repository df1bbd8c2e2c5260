"""`cl-vision replay` publishes a rosbag2's stored CDR bytes with the recorded timing."""
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image

from rosutil import REPO, RosHarness
from test_cli import assert_one_line_error, cl_vision

TS = get_typestore(Stores.ROS2_KILTED)
N, SPACING_NS = 10, 200_000_000


def write_image_bag(path, storage: StoragePlugin) -> None:
    Header, Time = TS.types['std_msgs/msg/Header'], TS.types['builtin_interfaces/msg/Time']
    RosImage = TS.types['sensor_msgs/msg/Image']
    with Writer(path, version=9, storage_plugin=storage) as writer:
        image = writer.add_connection('/cam/image', RosImage.__msgtype__, typestore=TS)
        other = writer.add_connection('/cam/other', RosImage.__msgtype__, typestore=TS)
        for i in range(N):
            t = 1_000_000_000 + i * SPACING_NS
            msg = RosImage(header=Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9),
                                         frame_id=f'f{i}'),
                           height=2, width=3, encoding='mono8', is_bigendian=0, step=3,
                           data=np.full(6, i, np.uint8))
            writer.write(image, t, TS.serialize_cdr(msg, RosImage.__msgtype__))
            writer.write(other, t, TS.serialize_cdr(msg, RosImage.__msgtype__))


@pytest.fixture(scope='module')
def ros():
    harness = RosHarness('replay_test_harness')
    yield harness
    harness.close()


def replay(ros, bag, *args):
    """Run the replay to completion; messages received on /cam/image and /clock."""
    images = ros.collect(Image, '/cam/image', qos_profile_sensor_data)
    clock = ros.collect(Clock, '/clock')
    result = subprocess.run([sys.executable, '-m', 'cl_vision_nodes.tools.cli', 'replay',
                             str(bag), '--wait-subscribers', '10', *args],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    ros.wait_until(lambda: False, timeout=0.5)
    return images, clock, result


@pytest.mark.parametrize('storage', [StoragePlugin.MCAP, StoragePlugin.SQLITE3])
def test_messages_arrive_in_order_with_original_headers(ros, tmp_path, storage):
    bag = tmp_path / 'bag'
    write_image_bag(bag, storage)
    images, _, _ = replay(ros, bag, '--topics', '/cam/image')
    got = [m.header.frame_id for m in images.messages]
    assert got == [f'f{i}' for i in range(N)]
    first = images.messages[0]
    assert (first.header.stamp.sec, first.header.stamp.nanosec) == (1, 0)
    assert list(images.messages[3].data) == [3] * 6


def test_rate_two_halves_the_wall_time_and_clock_follows_the_bag(ros, tmp_path):
    bag = tmp_path / 'bag'
    write_image_bag(bag, StoragePlugin.MCAP)
    spans = {}
    for rate in ('1', '2'):
        images, clock, _ = replay(ros, bag, '--rate', rate, '--clock', '--topics', '/cam/image')
        stamps = images.arrival_times
        assert len(stamps) == N
        spans[rate] = stamps[-1] - stamps[0]
        assert [c.clock.nanosec for c in clock.messages][:2] == [0, SPACING_NS]
    recorded = (N - 1) * SPACING_NS / 1e9
    assert abs(spans['1'] - recorded) < 0.3 and abs(spans['2'] - recorded / 2) < 0.3, spans


def test_start_offset_skips_the_beginning(ros, tmp_path):
    bag = tmp_path / 'bag'
    write_image_bag(bag, StoragePlugin.MCAP)
    images, _, _ = replay(ros, bag, '--start-offset', '1.0')
    assert [m.header.frame_id for m in images.messages] == [f'f{i}' for i in range(5, N)]


def test_replay_answers_parameter_queries_and_prints_progress_while_playing(ros, tmp_path):
    """`ros2 param list` asks every node, so a replay that never spins hangs it."""
    bag = tmp_path / 'bag'
    write_image_bag(bag, StoragePlugin.MCAP)
    images = ros.collect(Image, '/cam/image', qos_profile_sensor_data)
    proc = subprocess.Popen([sys.executable, '-m', 'cl_vision_nodes.tools.cli', 'replay',
                             str(bag), '--loop', '--topics', '/cam/image',
                             '--wait-subscribers', '10'],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert images.wait_for(lambda msgs: msgs, timeout=60.0)
        assert 'use_sim_time' in ros.describe_parameters('cl_vision_replay')
        seen = len(images.messages)
        assert images.wait_for(lambda msgs: len(msgs) > seen, timeout=30.0), 'replay stopped'
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith('replay: 1 messages, bag time 0.0 of 1.8 s'), out
    assert re.fullmatch(rf'replayed \d+ messages on 1 topics from {re.escape(str(bag))} '
                        r'\(interrupted\)', lines[-1]), out


def write_truncated_bag(path) -> None:
    write_image_bag(path, StoragePlugin.MCAP)
    storage = next(path.glob('*.mcap'))
    storage.write_bytes(storage.read_bytes()[:-100])


@pytest.mark.parametrize('args, words', [
    (['replay', 'no-such-bag'], 'no such bag'),
    (['replay', 'BAG', '--topics', '/nope'], 'no topic /nope; the bag has /cam/image, /cam/other'),
    (['replay', 'BAG', '--rate', '0'], "argument --rate: must be > 0, got '0'"),
    (['replay', 'BAG', '--rate', 'nan'], "argument --rate: expected a finite number, got 'nan'"),
    (['replay', 'BAG', '--start-offset', 'nan'], 'argument --start-offset: expected a finite'),
    (['replay', 'BAG', '--wait-subscribers', '-1'], "--wait-subscribers: must be >= 0, got '-1'"),
    (['replay', 'TRUNCATED'], 'cannot read the bag (File end magic is invalid.)'),
])
def test_bad_input_one_line_exit_2(tmp_path, args, words):
    bags = {'BAG': tmp_path / 'bag', 'TRUNCATED': tmp_path / 'truncated'}
    write_image_bag(bags['BAG'], StoragePlugin.MCAP)
    write_truncated_bag(bags['TRUNCATED'])
    assert_one_line_error(cl_vision(*[str(bags.get(a, a)) for a in args]), words)
