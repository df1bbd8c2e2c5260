"""`cl-vision replay` publishes a rosbag2's stored CDR bytes with the recorded timing."""
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


@pytest.mark.parametrize('args, words', [
    (['replay', 'no-such-bag'], 'no such bag'),
    (['replay', 'BAG', '--topics', '/nope'], 'no topic /nope; the bag has /cam/image, /cam/other'),
    (['replay', 'BAG', '--rate', '0'], '--rate must be positive'),
])
def test_bad_input_one_line_exit_2(tmp_path, args, words):
    bag = tmp_path / 'bag'
    write_image_bag(bag, StoragePlugin.MCAP)
    assert_one_line_error(cl_vision(*[str(bag) if a == 'BAG' else a for a in args]), words)
