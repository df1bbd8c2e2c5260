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
`cl-vision eval` end to end: a generated dataset bag through the real node processes over DDS.

Checked on the report's numbers and on the recorded bag read back with rosbags.

Bounds: the synthetic flow sequence translates by (1.5, -0.75) px per frame, which Horn-Schunck
recovers to a mean EPE of about 0.03 px at 96x128 (asserted: < 0.5 px); SURF keypoints of a
translated frame repeat at about 0.75 (asserted: > 0.5). The report's flow EPE and disparity D1
must equal the same metrics recomputed here from the recorded outputs and ground truth.
"""
from __future__ import annotations

import importlib.util
import json
import re

from bagutil import pixels, read_bag, stamp_ns
from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.datasets import parse_synthetic, write_bag
from cl_vision_nodes.bags.storage import Bag
from cl_vision_nodes.evaluation.frames import read_frames, Streams
from cl_vision_nodes.evaluation.scorers import disparity_errors
from cl_vision_nodes.flow.metrics import flow_errors
from cliutil import cl_vision
import cv2
import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores

pytestmark = pytest.mark.ros

TS = get_typestore(Stores.ROS2_KILTED)
FRAMES = 4
HAVE_DISPARITY_NODE = importlib.util.find_spec('cl_vision_nodes.ros.disparity_node') is not None
NO_DISPARITY_NODE = 'cl_vision_nodes.ros.disparity_node does not exist yet'


def evaluate(tmp_path, source: str, *args: str):
    """make-bag SOURCE, then eval it: (completed eval, report dict, output folder)."""
    made = cl_vision('make-bag', source, '--out', str(tmp_path / 'in'))
    assert made.returncode == 0, made.stderr
    out = tmp_path / 'out'
    result = cl_vision('eval', str(tmp_path / 'in'), '--out', str(out), '--timeout', '120', *args)
    assert result.returncode == 0, result.stderr + ''.join(
        p.read_text() for p in (out / 'logs').glob('*.log'))
    return result, json.loads((out / 'report.json').read_text()), out


@pytest.fixture(scope='module')
def mono_run(tmp_path_factory):
    return evaluate(tmp_path_factory.mktemp('eval_mono'), f'synthetic:flow:{FRAMES}:96x128')


def test_every_frame_is_answered_on_every_topic(mono_run):
    result, report, _ = mono_run
    assert report['frames_sent'] == FRAMES and not report['interrupted']
    assert {t: (r['received'], r['expected']) for t, r in report['topics'].items()} == {
        layout.FLOW_OUTPUT: (FRAMES - 1, FRAMES - 1),  # the first frame has no flow
        layout.FLOW_COLOR_OUTPUT: (FRAMES - 1, FRAMES - 1),
        layout.KEYPOINTS_OUTPUT: (FRAMES, FRAMES),
        layout.KEYPOINTS_IMAGE_OUTPUT: (FRAMES, FRAMES),
    }
    for key, due in (('flow', FRAMES - 1), ('surf', FRAMES)):
        node = report['nodes'][key]
        assert (node['frames_due'], node['answered'], node['dropped']) == (due, due, 0)
        assert node['exit_code'] == 0
    assert f'{FRAMES}/{FRAMES} frames' in result.stderr  # the progress line
    skipped = 'the bag has no' if HAVE_DISPARITY_NODE else 'is not installed'
    assert any(n.startswith('disparity: skipped') and skipped in n for n in report['notes'])


def test_latency_and_throughput_are_measured(mono_run):
    _, report, _ = mono_run
    for node in report['nodes'].values():
        latency = node['latency_ms']
        assert 0 < latency['p50'] <= latency['p95'] <= latency['max']
        assert 0 < latency['mean'] <= latency['max']
        assert node['throughput_fps'] == pytest.approx(1000.0 / latency['mean'])
        assert len(node['latency_per_frame_ms']) == node['answered']
        assert node['first_latency_ms'] == node['latency_per_frame_ms'][0][1]  # apart from
        steady = [ms for _, ms in node['latency_per_frame_ms'][1:]]  # the mean of the others
        assert latency['mean'] == pytest.approx(sum(steady) / len(steady))
    assert report['wall_fps'] > 0


def test_accuracy_within_bounds(mono_run):
    _, report, _ = mono_run
    flow = report['nodes']['flow']['accuracy']
    assert flow['frames_scored'] == FRAMES - 1
    assert flow['epe'] < 0.5 and flow['density'] == 1.0
    surf = report['nodes']['surf']['accuracy']
    assert surf['frames_scored'] == FRAMES - 1  # every frame against the first
    assert surf['repeatability'] > 0.5 and surf['keypoints'] > 10


def test_recorded_bag_reads_back_with_the_reported_numbers(mono_run):
    _, report, out = mono_run
    bag = read_bag(out / 'bag')  # rosbags deserialises every message: msgdefs are right
    assert bag.storage == 'mcap'
    counts = bag.counts()
    assert {t: counts[t] for t in report['topics']} == \
        {t: r['received'] for t, r in report['topics'].items()}
    assert counts[layout.LEFT_IMAGE] == FRAMES and counts[layout.GT_FLOW] == FRAMES - 1
    assert bag.types[layout.KEYPOINTS_OUTPUT] == 'sensor_msgs/msg/PointCloud2'
    truth = {stamp_ns(m): pixels(m) for _, m in bag.messages[layout.GT_FLOW]}
    epe = [flow_errors(pixels(m), truth[stamp_ns(m)]).epe
           for _, m in bag.messages[layout.FLOW_OUTPUT]]
    reported = [row['epe'] for row in report['nodes']['flow']['accuracy']['per_frame']]
    assert epe == pytest.approx(reported, abs=1e-9)
    clouds = [m for _, m in bag.messages[layout.KEYPOINTS_OUTPUT]]
    assert [c.width for c in clouds] == \
        [row['keypoints'] for row in report['nodes']['surf']['accuracy']['per_frame']]
    # Inputs are logged when published, outputs when received: after the input they answer.
    published = {stamp_ns(m): logged for logged, m in bag.messages[layout.LEFT_IMAGE]}
    for logged, msg in bag.messages[layout.FLOW_OUTPUT] + bag.messages[layout.KEYPOINTS_OUTPUT]:
        assert logged > published[stamp_ns(msg)]


def test_report_files(mono_run):
    _, report, out = mono_run
    markdown = (out / 'report.md').read_text()
    assert '| flow | 3 | 3 | 0 |' in markdown and '## Accuracy' in markdown
    pictures = re.findall(r'\]\(([\w.]+\.png)\)', markdown)
    assert {'latency.png', 'flow_vs_truth.png', 'camera_left_flow_color.png',
            'camera_left_keypoints_image.png'} <= set(pictures)
    for name in pictures:
        assert cv2.imread(str(out / name)) is not None, name
    assert set(report['pictures'].values()) == set(pictures)
    for key in ('flow', 'surf'):
        assert 'compiling OpenCL kernels' in (out / 'logs' / f'{key}.log').read_text()


@pytest.mark.skipif(not HAVE_DISPARITY_NODE, reason=NO_DISPARITY_NODE)
def test_disparity_node_end_to_end(tmp_path):
    _, report, out = evaluate(tmp_path, 'synthetic:stereo:3:96x128', '--nodes', 'disparity',
                              '--param', 'disparity.disp_max=32')
    assert {t: (r['received'], r['expected']) for t, r in report['topics'].items()} == {
        layout.DISPARITY_OUTPUT: (3, 3), layout.DISPARITY_COLOR_OUTPUT: (3, 3)}
    node = report['nodes']['disparity']
    assert node['parameters'] == {'disp_max': 32} and node['dropped'] == 0
    bag = read_bag(out / 'bag')
    truths = [pixels(m) for _, m in bag.messages[layout.GT_DISPARITY]]
    d1 = [disparity_errors(pixels(m.image), truth, m.min_disparity)['d1']
          for (_, m), truth in zip(bag.messages[layout.DISPARITY_OUTPUT], truths, strict=True)]
    assert d1 == pytest.approx([r['d1'] for r in node['accuracy']['per_frame']], abs=1e-9)
    assert node['accuracy']['d1'] < 0.45 and node['accuracy']['density'] > 0.6
    assert (out / 'disparity_vs_truth.png').exists()
    assert (out / 'camera_disparity_color.png').exists()


# --- pieces without DDS ------------------------------------------------------------------------


def test_disparity_errors_count_invalid_pixels_as_errors():
    truth = np.array([[10.0, 10.0, 100.0, np.nan, 10.0]], np.float32)
    estimate = np.array([[10.5, 13.5, 104.0, 5.0, -1.0]], np.float32)  # last: invalid (< 0)
    errors = disparity_errors(estimate, truth, min_disparity=0.0)
    # 13.5: > 3 px and > 5 % (D1 and bad2); 104: > 3 px but only 4 % (bad2 only); -1: invalid.
    assert errors == {'d1': 2 / 4, 'bad2': 3 / 4, 'density': 3 / 4}


def stamped(msgtype: str, stamp: int, **fields):
    header = TS.types['std_msgs/msg/Header'](
        stamp=TS.types['builtin_interfaces/msg/Time'](sec=stamp // 10**9, nanosec=stamp % 10**9),
        frame_id='f')
    return TS.serialize_cdr(TS.types[msgtype](header=header, **fields), msgtype)


def test_frames_are_grouped_by_stamp_even_when_logged_late(tmp_path):
    """
    A recorded stereo bag logs the right image of a frame after the next left image.

    The homography (no header) goes by bag time; a stamp without a left image is dropped.
    """
    image = {'height': 1, 'width': 1, 'encoding': 'mono8', 'is_bigendian': 0, 'step': 1,
             'data': np.zeros(1, np.uint8)}
    ms = 10**6
    with Writer(tmp_path / 'bag', version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {t: writer.add_connection(t, layout.INPUT_TYPES[t], typestore=TS)
                 for t in (layout.LEFT_IMAGE, layout.RIGHT_IMAGE, layout.GT_HOMOGRAPHY)}
        plan = [(layout.LEFT_IMAGE, 100, 100), (layout.RIGHT_IMAGE, 50, 105),  # orphan stamp 50
                (layout.LEFT_IMAGE, 200, 200), (layout.RIGHT_IMAGE, 100, 205),
                (layout.LEFT_IMAGE, 300, 300), (layout.RIGHT_IMAGE, 200, 301),
                (layout.RIGHT_IMAGE, 300, 302)]
        for topic, stamp, logged in plan:
            data = stamped(layout.IMAGE_TYPE, stamp * ms, **image)
            writer.write(conns[topic], logged * ms, data)
        homography = TS.types[layout.HOMOGRAPHY_TYPE](
            layout=TS.types['std_msgs/msg/MultiArrayLayout'](dim=[], data_offset=0),
            data=np.eye(3).ravel())
        writer.write(conns[layout.GT_HOMOGRAPHY], 200 * ms,
                     TS.serialize_cdr(homography, layout.HOMOGRAPHY_TYPE))
    streams = Streams(layout.LEFT_IMAGE, layout.RIGHT_IMAGE, truth=(layout.GT_HOMOGRAPHY,))
    frames = list(read_frames(Bag(tmp_path / 'bag'), streams))
    assert [(f.index, f.stamp_ns // ms, sorted(f.messages)) for f in frames] == [
        (0, 100, [layout.LEFT_IMAGE, layout.RIGHT_IMAGE]),
        (1, 200, [layout.GT_HOMOGRAPHY, layout.LEFT_IMAGE, layout.RIGHT_IMAGE]),
        (2, 300, [layout.LEFT_IMAGE, layout.RIGHT_IMAGE])]


# --- bad input ---------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def small_bag(tmp_path_factory):
    path = tmp_path_factory.mktemp('small') / 'bag'
    write_bag(parse_synthetic('synthetic:flow:2:32x32', seed=0), path, 'mcap', 10.0)
    return path


def other_bag(path):
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        writer.add_connection('/cam/image', layout.IMAGE_TYPE, typestore=TS)
    return path


@pytest.mark.parametrize('args, words', [
    (['eval', 'OTHER', '--out', 'OUT'], 'no usable image topic'),
    (['eval', 'MISSING', '--out', 'OUT'], 'no such bag'),
    (['eval', 'BAG', '--out', 'OUT', '--nodes', 'flow,cubes'], 'unknown node cubes'),
    (['eval', 'BAG', '--out', 'OUT', '--param', 'flow.nope=1'], "unknown parameter 'nope'"),
    (['eval', 'BAG', '--out', 'OUT', '--param', 'surf.hessian_threshold=-5'], 'hessian_threshold'),
    (['eval', 'BAG', '--out', 'OUT', '--param', 'method=lk'], '--param expects NODE.NAME=VALUE'),
    (['eval', 'BAG', '--out', 'OUT', '--timeout', '0'],
     "argument --timeout: must be > 0, got '0'"),
    (['eval', 'BAG', '--out', 'EXISTING'], 'exists already, not overwriting'),
])
def test_bad_input_one_line_exit_2(tmp_path, small_bag, args, words):
    (tmp_path / 'existing' / 'bag').mkdir(parents=True)
    paths = {'BAG': small_bag, 'OTHER': other_bag(tmp_path / 'other'),
             'MISSING': tmp_path / 'missing', 'OUT': tmp_path / 'out',
             'EXISTING': tmp_path / 'existing'}
    result = cl_vision(*[str(paths.get(a, a)) for a in args])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


@pytest.mark.skipif(not HAVE_DISPARITY_NODE, reason=NO_DISPARITY_NODE)
def test_stereo_node_on_a_mono_bag_is_refused(tmp_path, small_bag):
    result = cl_vision('eval', str(small_bag), '--out', str(tmp_path / 'out'),
                       '--nodes', 'disparity')
    assert result.returncode == 2
    assert 'disparity needs a stereo pair with camera_info; ' \
        f"the bag's camera is mono ({layout.LEFT_IMAGE})" in result.stderr.strip()
