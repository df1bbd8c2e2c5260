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
`cl-vision eval` on bags that make-bag did not write (issue 14, items 1, 3 and 7).

Bags are written here with rosbags under a robot's topic names: JPEG-compressed colour stereo
(a ZED's names), raw images with distortion, two cameras, cameras stamped apart, no camera at
all. The scene is dataio.synthetic's stereo pan (bags.datasets.synthetic_stereo, 96x128,
disparities under 16 px). The pieces without DDS (finding cameras, grouping frames) are checked
on their own; the end-to-end runs use the real node processes over Fast DDS and read
report.json.
"""
from __future__ import annotations

from dataclasses import replace
import json
from pathlib import Path

from bagutil import read_bag, stamp_ns
from cl_vision_nodes.bags.datasets import MessageFactory, synthetic_stereo
from cl_vision_nodes.bags.layout import StereoCamera
from cl_vision_nodes.bags.storage import Bag
from cl_vision_nodes.evaluation.cameras import find_cameras, Overrides
from cl_vision_nodes.evaluation.frames import read_frames, Selection
from cl_vision_nodes.evaluation.one_bag import EvalOptions, flow_across_the_stride
from cl_vision_nodes.ros.cdr import read_stamp
from cliutil import assert_one_line_error, cl_vision
import cv2
import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores

pytestmark = pytest.mark.ros

TS = get_typestore(Stores.ROS2_KILTED)
MESSAGES = MessageFactory(TS, StereoCamera())
FRAMES, HEIGHT, WIDTH = 4, 96, 128
START_NS, PERIOD_NS = 1_000_000_000, 100_000_000
ZED = '/zed2/zed_node'
ZED_LEFT, ZED_RIGHT = f'{ZED}/left/image_rect_color/compressed', \
    f'{ZED}/right/image_rect_color/compressed'
DISTORTION = np.array([-0.05, 0.01, 0.0, 0.0, 0.0])


def colour(gray: np.ndarray) -> np.ndarray:
    """Return a bgr8 image whose channels differ, so its gray depends on the channel order."""
    return np.dstack([gray, 255 - gray, gray // 2 + 64]).astype(np.uint8)


def jpeg(gray: np.ndarray, stamp: int, frame_id: str):
    ok, data = cv2.imencode('.jpg', colour(gray), [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    return TS.types['sensor_msgs/msg/CompressedImage'](
        header=MESSAGES.header(stamp, frame_id), format='bgr8; jpeg compressed bgr8',
        data=data.ravel())


def raw(gray: np.ndarray, stamp: int, frame_id: str):
    return MESSAGES.image(colour(gray), 'bgr8', stamp, frame_id)


def write_bag(path: Path, cameras: dict[str, tuple[str | None, str]], *,
              right_offset_ns: int = 0, distortion: bool = False,
              frames: int = FRAMES, extra: tuple[str, ...] = (),
              storage: StoragePlugin = StoragePlugin.MCAP) -> None:
    """
    Write ``frames`` frames of the pan for each camera.

    ``cameras`` maps an image topic to (its camera_info topic or None, 'left', 'right' or
    'mono'), JPEG colour CompressedImages when the name ends in /compressed, else bgr8 Images;
    right images are stamped ``right_offset_ns`` after the left ones. ``extra`` names
    topics of other types (a depth image, an IMU) with one message each.
    """
    scene = list(synthetic_stereo(frames, HEIGHT, WIDTH, seed=3).frames)
    types = {t: 'sensor_msgs/msg/CompressedImage' if t.endswith('/compressed') else
             'sensor_msgs/msg/Image' for t in cameras}
    with Writer(path, version=9, storage_plugin=storage) as writer:
        conns = {t: writer.add_connection(t, types[t], typestore=TS) for t in cameras}
        infos = {i: writer.add_connection(i, 'sensor_msgs/msg/CameraInfo', typestore=TS)
                 for i, _ in cameras.values() if i}
        others = {t: writer.add_connection(t, m, typestore=TS) for t, m in (
            ('/zed2/zed_node/depth/depth_registered', 'sensor_msgs/msg/Image'),
            ('/imu/data', 'sensor_msgs/msg/Imu')) if t in extra}
        for k, frame in enumerate(scene):
            for topic, (info, side) in cameras.items():
                stamp = START_NS + k * PERIOD_NS + (right_offset_ns if side == 'right' else 0)
                gray = frame.right if side == 'right' else frame.left
                if info:
                    msg = MESSAGES.camera_info(WIDTH, HEIGHT, stamp, right=side == 'right')
                    if distortion:
                        msg = replace(msg, d=DISTORTION)
                    writer.write(infos[info], stamp,
                                 TS.serialize_cdr(msg, 'sensor_msgs/msg/CameraInfo'))
                encode = jpeg if types[topic].endswith('CompressedImage') else raw
                writer.write(conns[topic], stamp + 1000, TS.serialize_cdr(
                    encode(gray, stamp, f'{side}_frame'), types[topic]))
        for topic, conn in others.items():
            msg = MESSAGES.image(np.ones((4, 4), np.float32), '32FC1', START_NS, 'depth') \
                if conn.msgtype.endswith('Image') else TS.types['sensor_msgs/msg/Imu'](
                    header=MESSAGES.header(START_NS, 'imu'),
                    orientation=TS.types['geometry_msgs/msg/Quaternion'](x=0, y=0, z=0, w=1),
                    orientation_covariance=np.zeros(9),
                    angular_velocity=TS.types['geometry_msgs/msg/Vector3'](x=0, y=0, z=0),
                    angular_velocity_covariance=np.zeros(9),
                    linear_acceleration=TS.types['geometry_msgs/msg/Vector3'](x=0, y=0, z=0),
                    linear_acceleration_covariance=np.zeros(9))
            writer.write(conn, START_NS, TS.serialize_cdr(msg, conn.msgtype))


def zed_cameras(compressed: bool = True) -> dict[str, tuple[str | None, str]]:
    suffix = '/compressed' if compressed else ''
    return {f'{ZED}/left/image_rect_color{suffix}': (f'{ZED}/left/camera_info', 'left'),
            f'{ZED}/right/image_rect_color{suffix}': (f'{ZED}/right/camera_info', 'right')}


def evaluate(bag: Path, out: Path, *args: str):
    """Run eval; return (completed process, report)."""
    result = cl_vision('eval', str(bag), '--out', str(out), '--timeout', '120', *args)
    assert result.returncode == 0, result.stdout + result.stderr + ''.join(
        p.read_text() for p in (out / 'logs').glob('*.log'))
    return result, json.loads((out / 'report.json').read_text())


# --- finding cameras and frames, without DDS ---------------------------------------------------


def test_compressed_zed_pair_is_found_by_name(tmp_path):
    write_bag(tmp_path / 'bag', zed_cameras(), extra=('/zed2/zed_node/depth/depth_registered',
                                                      '/imu/data'))
    cameras = find_cameras(tmp_path / 'bag')
    assert (cameras.left.topic, cameras.right.topic) == (ZED_LEFT, ZED_RIGHT)
    assert (cameras.left.info, cameras.right.info) == (f'{ZED}/left/camera_info',
                                                       f'{ZED}/right/camera_info')
    assert cameras.compressed and not cameras.raw and cameras.pair_tolerance_ns == 0
    assert cameras.left.base == f'{ZED}/left/image_rect_color'
    assert cameras.others == ()  # the depth image is no camera picture
    assert 'no distortion' in cameras.rectification


@pytest.mark.parametrize('names', [
    ('/stereo/left/image_raw', '/stereo/right/image_raw'),
    ('/cam0/image_raw', '/cam1/image_raw'),
    ('/camera/infra1/image_rect_raw', '/camera/infra2/image_rect_raw'),
    ('/rig/front_a/image', '/rig/front_b/image'),  # no name pattern: the right P[0,3] < 0
])
def test_pairs_by_name_or_by_baseline(tmp_path, names):
    left, right = names
    cameras = {left: (left.rpartition('/')[0] + '/camera_info', 'left'),
               right: (right.rpartition('/')[0] + '/camera_info', 'right')}
    write_bag(tmp_path / 'bag', cameras, frames=2, storage=StoragePlugin.SQLITE3)
    found = find_cameras(tmp_path / 'bag')
    assert (found.left.topic, found.right and found.right.topic) == (left, right)


def test_pair_stamped_apart_is_paired_by_nearest_stamp_and_restamped(tmp_path):
    write_bag(tmp_path / 'bag', zed_cameras(), right_offset_ns=3_000_000)
    cameras = find_cameras(tmp_path / 'bag')
    assert cameras.pair_tolerance_ns == PERIOD_NS // 2
    streams = cameras.streams(Selection())
    frames = list(read_frames(Bag(tmp_path / 'bag', streams.topics), streams))
    assert len(frames) == FRAMES
    for frame in frames:
        assert frame.restamped == (ZED_RIGHT, f'{ZED}/right/camera_info')
        assert {t: read_stamp(d) for t, d in frame.messages.items()} == \
            dict.fromkeys(streams.topics, frame.stamp_ns)


def test_mono_camera_and_raw_beside_compressed(tmp_path):
    """The raw topic wins over its own /compressed twin; a mono camera needs no camera_info."""
    path = tmp_path / 'bag'
    write_bag(path, {'/front/image_raw': (None, 'mono'),
                     '/front/image_raw/compressed': (None, 'mono')}, frames=1)
    cameras = find_cameras(path)
    assert (cameras.left.topic, cameras.right, cameras.left.info) == ('/front/image_raw', None,
                                                                      None)
    assert cameras.rectification == 'no camera_info: images evaluated as they are'
    chosen = find_cameras(path, Overrides(image='/front/image_raw/compressed'))
    assert chosen.left.compressed and chosen.left.played == '/front/image_raw/compressed'


def test_a_pair_has_one_transport(tmp_path):
    """Left recorded raw and compressed, right only compressed: the compressed pair plays."""
    cameras = {**zed_cameras(), f'{ZED}/left/image_rect_color': (None, 'left')}
    write_bag(tmp_path / 'bag', cameras, frames=2)
    found = find_cameras(tmp_path / 'bag')
    assert (found.left.topic, found.right.topic) == (ZED_LEFT, ZED_RIGHT)
    assert found.others == (f'{ZED}/left/image_rect_color',)


def test_distortion_means_raw_images(tmp_path):
    write_bag(tmp_path / 'bag', zed_cameras(compressed=False), frames=2, distortion=True)
    cameras = find_cameras(tmp_path / 'bag')
    assert cameras.raw and 'distortion D = [-0.05, 0.01, 0.0, 0.0, 0.0]' in cameras.rectification


def test_frames_are_selected_by_bag_time(tmp_path):
    write_bag(tmp_path / 'bag', zed_cameras(), frames=8)
    cameras = find_cameras(tmp_path / 'bag')
    streams = cameras.streams(Selection())
    bag = Bag(tmp_path / 'bag', streams.topics)
    stamps = [f.stamp_ns for f in read_frames(bag, streams, Selection(0.15, 0.4, 2))]
    # Frames at 0.2, 0.3, 0.4, 0.5 s after the start; every second one of them.
    assert stamps == [START_NS + 2 * PERIOD_NS, START_NS + 4 * PERIOD_NS]


@pytest.mark.parametrize('every, nodes, params, expected', [
    (1, None, [], []),
    (5, None, [], ['flow.max_span=0.0']),
    (5, ['surf'], [], []),
    (5, None, ['flow.max_span=9.0'], ['flow.max_span=9.0']),
])
def test_flow_runs_across_the_stride_of_every_unless_max_span_is_given(every, nodes, params,
                                                                       expected):
    options = EvalOptions(Path('bag'), Path('out'), every=every, nodes=nodes, param=params)
    assignments, notes = flow_across_the_stride(options)
    assert assignments == expected and bool(notes) == (expected == ['flow.max_span=0.0'])


# --- end to end over DDS -----------------------------------------------------------------------


@pytest.fixture(scope='module')
def zed_run(tmp_path_factory):
    """Evaluate a ZED-like JPEG colour stereo bag without options (the acceptance run)."""
    root = tmp_path_factory.mktemp('zed')
    write_bag(root / 'bag', zed_cameras(), extra=('/imu/data',))
    result, report = evaluate(root / 'bag', root / 'out')
    return result, report, root / 'out'


def test_any_bag_every_frame_answered_without_options(zed_run):
    result, report, out = zed_run
    assert f'stereo camera {ZED_LEFT}' in result.stdout and ZED_RIGHT in result.stdout
    assert report['input']['compressed'] and not report['input']['raw']
    assert report['frames_sent'] == FRAMES and not report['interrupted']
    answered = {k: (n['frames_due'], n['answered'], n['dropped']) for k, n in
                report['nodes'].items()}
    assert answered == {'flow': (FRAMES - 1, FRAMES - 1, 0), 'surf': (FRAMES, FRAMES, 0),
                        'disparity': (FRAMES, FRAMES, 0)}
    for node in report['nodes'].values():
        assert node['eval_parameters']['image_transport'] == 'compressed'
        assert node['accuracy']['frames_scored'] == 0  # no ground truth in this bag
    # The recorded inputs are the bag's own compressed messages, under their names.
    recorded = read_bag(out / 'bag')
    assert recorded.types[ZED_LEFT] == 'sensor_msgs/msg/CompressedImage'
    assert [stamp_ns(m) for _, m in recorded.messages[ZED_LEFT]] == \
        [stamp_ns(m) for _, m in recorded.messages['/camera/disparity']]


def test_stage_timing_from_diagnostics_beside_latency(zed_run):
    _, report, out = zed_run
    for key, node in report['nodes'].items():
        stages = node['stages']
        assert stages['frames'] == node['frames_fed'] == FRAMES, key  # every frame timed
        assert {'receive', 'upload', 'compute', 'publish'} <= stages['stage_ms'].keys(), key
        assert all(ms >= 0 for ms in stages['stage_ms'].values())
        assert node['eval_parameters']['diagnostics_period'] == 1.0
    markdown = (out / 'report.md').read_text()
    assert '## Where the time goes' in markdown and '| disparity | 4 |' in markdown


def test_overrides_pick_a_camera(tmp_path):
    cameras = {**zed_cameras(), '/front/image_raw/compressed': (None, 'mono')}
    write_bag(tmp_path / 'bag', cameras)
    result, report = evaluate(tmp_path / 'bag', tmp_path / 'out', '--image',
                              '/front/image_raw/compressed', '--nodes', 'surf')
    assert report['input']['left'] == '/front/image_raw/compressed'
    assert report['input']['right'] is None
    assert report['nodes']['surf']['answered'] == FRAMES


def test_raw_images_with_distortion_are_rectified_on_the_way_in(tmp_path):
    write_bag(tmp_path / 'bag', zed_cameras(compressed=False), distortion=True, frames=3)
    result, report = evaluate(tmp_path / 'bag', tmp_path / 'out', '--nodes', 'surf,disparity',
                              '--param', 'disparity.disp_max=32')
    assert report['input']['raw']
    helper = report['helpers']['rectify_left']
    assert (helper['answered'], helper['dropped']) == (3, 0)
    assert report['nodes']['disparity']['eval_parameters']['rectify'] is True
    assert {k: n['answered'] for k, n in report['nodes'].items()} == {'surf': 3, 'disparity': 3}
    assert 'raw images rectified on the way in: surf on /cl_vision_eval/left/image_rect from ' \
        'rectify_node /cl_vision_eval/left/rectify_node (their latency includes it); ' \
        'disparity_node rectifies the raw pair itself (rectify:=true)' in report['notes']
    assert report['topics']['/cl_vision_eval/left/image_rect']['received'] == 3


def test_frame_selection_end_to_end(tmp_path):
    write_bag(tmp_path / 'bag', zed_cameras(), frames=8)
    _, report = evaluate(tmp_path / 'bag', tmp_path / 'out', '--nodes', 'surf', '--start', '0.15',
                         '--duration', '0.4', '--every', '2')
    assert report['frames_sent'] == 2 and report['nodes']['surf']['answered'] == 2
    assert report['input']['selection'] == 'from 0.15 s, for 0.4 s, one frame in 2'


@pytest.mark.parametrize('args, words', [
    (['eval', 'NOCAMERA', '--out', 'OUT'], 'no usable image topic'),
    (['eval', 'BAG', '--out', 'OUT', '--image', '/nope'], '--image /nope: no such image topic'),
    (['eval', 'BAG', '--out', 'OUT', '--left', ZED_LEFT], '--left and --right name the two'),
    (['eval', 'BAG', '--out', 'OUT', '--image', ZED_LEFT, '--left', ZED_LEFT, '--right',
      ZED_RIGHT], '--image names a mono camera'),
    (['eval', 'BAG', '--out', 'OUT', '--left-info', '/imu/data'],
     '--left-info /imu/data: no CameraInfo topic'),
    (['eval', 'BAG', '--out', 'OUT', '--every', '0'], "argument --every: must be >= 1, got '0'"),
    (['eval', 'BAG', '--out', 'OUT', '--duration', '0'], 'argument --duration: must be > 0'),
    (['eval', 'BAG', '--out', 'OUT', '--start', '-1'], 'argument --start: must be >= 0'),
    (['eval', 'BAG', '--out', 'OUT', '--start', '5'], '--start 5: the bag lasts only 0.100001 s'),
])
def test_bad_input_one_line_exit_2(tmp_path, args, words):
    write_bag(tmp_path / 'bag', zed_cameras(), frames=2, extra=('/imu/data',))
    with Writer(tmp_path / 'nocamera', version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        writer.add_connection('/imu/data', 'sensor_msgs/msg/Imu', typestore=TS)
    paths = {'BAG': tmp_path / 'bag', 'NOCAMERA': tmp_path / 'nocamera',
             'OUT': tmp_path / 'out'}
    assert_one_line_error(cl_vision(*[str(paths.get(a, a)) for a in args]), words)
