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

"""`cl-vision replay` publishes a rosbag2's stored CDR bytes with the recorded timing."""
import re
import signal
import subprocess
import sys

from bagutil import (IMAGE_BAG_FRAMES, IMAGE_BAG_SPACING_NS, IMAGE_BAG_START_NS, TS,
                     write_image_bag, write_truncated_bag)
from cl_vision_nodes.bags.replay import REPLAY_DEPTH
from cl_vision_nodes.dataio.synthetic import texture
from cliutil import assert_one_line_error, cl_vision
import cv2
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from rosbags.rosbag2 import StoragePlugin, Writer
from rosgraph_msgs.msg import Clock
from rosutil import NodeProcess, REPO
from sensor_msgs.msg import CompressedImage, Image, PointCloud2

pytestmark = pytest.mark.ros

N, SPACING_NS = IMAGE_BAG_FRAMES, IMAGE_BAG_SPACING_NS
LAST_NS = IMAGE_BAG_START_NS + (N - 1) * SPACING_NS  # the bag time of the last frame


def replay(ros, bag, *args):
    """
    Run the replay to completion; messages received on /cam/image and /clock.

    Reliable, as the nodes' inputs subscribe: each frame sent after the replay saw this
    subscription arrives. A best-effort one loses a frame sent before its own side of the
    match completed (DDS discovery on a loaded machine; issue 31's CI).
    """
    images = ros.collect(Image, '/cam/image', REPLAY_DEPTH)
    clock = ros.collect(Clock, '/clock')
    result = subprocess.run([sys.executable, '-m', 'cl_vision_nodes.tools.cli', 'replay',
                             str(bag), '--wait-subscribers', '10', *args],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # Still in flight when the replay exits: the messages of a topic come in order, so the
    # last frame's arrival (and its /clock's) means every earlier one is here or lost.
    assert images.wait_for(lambda msgs: any(m.header.frame_id == f'f{N - 1}' for m in msgs)), \
        result.stdout
    if '--clock' in args:
        assert clock.wait_for(lambda msgs: any(
            c.clock.sec * 10**9 + c.clock.nanosec == LAST_NS for c in msgs)), result.stdout
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


def write_jpeg_bag(path, frames: int) -> list[bytes]:
    """Write colour JPEG frames ``j0``.. on /cam/image_raw/compressed; return their JPEG bytes."""
    CompressedMsg = TS.types['sensor_msgs/msg/CompressedImage']
    Header, Time = TS.types['std_msgs/msg/Header'], TS.types['builtin_interfaces/msg/Time']
    jpegs = []
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection('/cam/image_raw/compressed', CompressedMsg.__msgtype__,
                                     typestore=TS)
        for i in range(frames):
            gray = texture(96, 128, seed=i).astype(np.uint8)
            ok, data = cv2.imencode('.jpg', np.dstack([gray, 255 - gray, gray]))
            assert ok
            jpegs.append(data.tobytes())
            t = IMAGE_BAG_START_NS + i * IMAGE_BAG_SPACING_NS
            msg = CompressedMsg(header=Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9),
                                              frame_id=f'j{i}'),
                                format='bgr8; jpeg compressed bgr8', data=data.ravel())
            writer.write(conn, t, TS.serialize_cdr(msg, CompressedMsg.__msgtype__))
    return jpegs


def test_compressed_topic_is_replayed_as_recorded_and_answered(ros, tmp_path):
    """JPEG bytes go out unchanged; a node with image_transport:=compressed answers each frame."""
    frames = 3
    jpegs = write_jpeg_bag(tmp_path / 'bag', frames)
    images = ros.collect(CompressedImage, '/cam/image_raw/compressed', qos_profile_sensor_data)
    keypoints = ros.collect(PointCloud2, '/cam/keypoints')
    node = NodeProcess('cl_vision_nodes.ros.surf_node', [
        '-r', '__ns:=/cam', '-r', 'image:=/cam/image_raw', '-p', 'image_transport:=compressed'])
    proc = subprocess.Popen([sys.executable, '-m', 'cl_vision_nodes.tools.cli', 'replay',
                             str(tmp_path / 'bag'), '--loop', '--wait-subscribers', '60'],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Over the loops every frame is answered (one arriving while kernels build may not be)
        # and reaches this process too (its subscription may match the player a loop later).
        every = {f'j{i}' for i in range(frames)}
        answered = keypoints.wait_for(lambda msgs: {m.header.frame_id for m in msgs} >= every,
                                      timeout=120.0)
        images.wait_for(lambda msgs: {m.header.frame_id for m in msgs} >= every, timeout=60.0)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        code = node.stop()
    assert answered, node.output() + out + err
    assert proc.returncode == 0 and code == 0, err + node.output()
    assert out.splitlines()[0] == ('replay: /cam/image_raw/compressed is compressed: run nodes '
                                   'with -p image_transport:=compressed -r image:=/cam/image_raw')
    got = {m.header.frame_id: bytes(m.data) for m in images.messages}
    assert got == {f'j{i}': jpeg for i, jpeg in enumerate(jpegs)}
    assert all(m.format == 'bgr8; jpeg compressed bgr8' for m in images.messages)


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
