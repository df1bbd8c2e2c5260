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
evaluation.quality_scorers: eval's per-frame figures without ground truth, on known answers.

The answers fed in are exact (generated scenes' truth), wrong on purpose, or the library's own
on PoCL; the backward flows, right maps and fallback flows are the scorers' own library calls.
End to end, `cl-vision eval` on a ZED-named JPEG colour stereo bag without ground truth reports
every node's figures in report.json.
Bounds: Horn-Schunck recovers the synthetic translation to about 0.03 px, so a consistent pair
disagrees by well under 0.3 px while a zero flow against the (1.5, -0.75) px motion disagrees by
its length, 1.68 px.
"""
import json
import os
from pathlib import Path

from cl_vision_nodes.bags.datasets import MessageFactory, synthetic_stereo
from cl_vision_nodes.bags.layout import StereoCamera
from cl_vision_nodes.dataio import motorcycle
from cl_vision_nodes.dataio.synthetic import flow_sequence, Motion, stereo_pair
from cl_vision_nodes.evaluation.quality_scorers import (DisparityQuality, FlowQuality,
                                                        LibraryAlgorithms, SequenceMemory,
                                                        SurfQuality)
from cl_vision_nodes.surf.extractor import SurfExtractor
from cliutil import cl_vision
import cv2
import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores

DEVICE = os.environ.get('CL_VISION_TEST_DEVICE', 'auto')
SHIFT = (1.5, -0.75)


def memory(**params) -> SequenceMemory:
    return SequenceMemory(LibraryAlgorithms(DEVICE, **params))


def noise(shape: tuple[int, int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)


@pytest.fixture(scope='module')
def translation():
    return flow_sequence(3, 96, 128, motion=Motion('translation', shift=SHIFT), seed=5)


def exact(sequence, k: int) -> np.ndarray:
    return np.where(sequence.valid[k][..., None], sequence.flows[k], np.nan).astype(np.float32)


def test_flow_forward_backward_is_near_zero_for_a_pure_translation(translation):
    scorer = FlowQuality(memory())
    scorer.memory.see(0, translation.frames[0])
    for k in (1, 2):
        scorer.score(k, translation.frames[k], exact(translation, k - 1))
    summary = scorer.summary()
    assert summary['frames_scored'] == 2 and [r['frame'] for r in summary['per_frame']] == [1, 2]
    assert summary['fb_error'] < 0.3 and summary['fb_consistent'] > 0.9
    assert summary['photometric_error'] < 0.2 * summary['unwarped_error']


def test_flow_figures_expose_a_zero_flow(translation):
    scorer = FlowQuality(memory())
    scorer.memory.see(0, translation.frames[0])
    scorer.score(1, translation.frames[1], np.zeros((96, 128, 2), np.float32))
    row = scorer.summary()['per_frame'][0]
    assert row['fb_error'] == pytest.approx(np.hypot(*SHIFT), abs=0.3)
    assert row['fb_consistent'] < 0.1
    assert row['photometric_error'] == pytest.approx(row['unwarped_error'])


def test_flow_without_the_previous_frame_is_not_scored(translation):
    scorer = FlowQuality(memory())
    scorer.score(1, translation.frames[1], exact(translation, 0))
    assert scorer.summary()['frames_scored'] == 0 and scorer.summary()['fb_error'] is None


@pytest.fixture(scope='module')
def pair():
    return stereo_pair(96, 128, seed=6, max_disparity=16.0)


def test_disparity_left_right_figures_drop_when_the_right_image_is_noise(pair):
    shared = memory(disparity_params={'disp_max': 32})
    left_map, _ = shared.library.disparity_both(pair.left, pair.right)
    good, bad = DisparityQuality(shared), DisparityQuality(memory(disparity_params={
        'disp_max': 32}))
    good.score(0, pair.left, pair.right, left_map, 0.0)
    bad.score(0, pair.left, noise(pair.right.shape, 7), left_map, 0.0)
    good_row, bad_row = good.summary()['per_frame'][0], bad.summary()['per_frame'][0]
    assert good_row['lr_consistent'] > 0.9 and good_row['lr_error'] < 0.5
    assert good_row['density'] > 0.5 and good_row['lr_photometric_error'] < 4.0
    assert bad_row['lr_consistent'] < 0.5 * good_row['lr_consistent']
    assert bad_row['lr_photometric_error'] > 5 * good_row['lr_photometric_error']
    assert bad_row['density'] == good_row['density']  # the same map


def test_disparity_is_stable_on_a_static_scene_and_unscored_where_all_moves(pair):
    truth = np.where(pair.valid, pair.disparity, np.nan).astype(np.float32)
    still = DisparityQuality(memory())
    for k in (0, 1):
        still.score(k, pair.left, pair.right, truth, 0.0)
    row = still.summary()['per_frame'][1]
    assert row['motion'] == 'library'  # no flow node: the library's flow, zero here
    assert row['temporal_change'] == 0.0 and row['static_coverage'] > 0.8
    changed = DisparityQuality(memory())
    changed.score(0, pair.left, pair.right, truth, 0.0)
    changed.score(1, pair.left, pair.right, truth + 2.0, 0.0)
    assert changed.summary()['temporal_change'] == pytest.approx(2.0)
    moving = DisparityQuality(memory())
    moving.score(0, pair.left, pair.right, truth, 0.0)
    moving.memory.node_flow(1, np.full((96, 128, 2), 3.0, np.float32))
    moving.score(1, pair.left, pair.right, truth, 0.0)
    row = moving.summary()['per_frame'][1]
    assert row['motion'] == 'node' and row['static_coverage'] == 0.0
    assert row['temporal_change'] is None


@pytest.fixture(scope='module')
def drive():
    return motorcycle.sequence(3, 120, 160)


def test_surf_matches_and_repeats_between_consecutive_frames(runtime, drive):
    extractor = SurfExtractor(runtime)
    shared = memory()
    scorer = SurfQuality(shared)
    for k, frame in enumerate(drive.frames):
        shared.node_flow(k, np.where(np.isfinite(frame.flow), frame.flow, np.nan)
                         if frame.flow is not None else np.zeros((120, 160, 2), np.float32))
        scorer.score(k, frame.left, extractor.detect_and_describe(frame.left))
    summary = scorer.summary()
    assert summary['frames_scored'] == 2
    assert [r.get('motion') for r in summary['per_frame']] == [None, 'node', 'node']
    assert summary['match_rate'] > 0.4 and summary['inlier_ratio'] > 0.8
    assert summary['flow_repeatability'] > 0.5
    # Against a frame of noise few matches survive RANSAC, and the true flow finds no repeats.
    other = SurfQuality(memory())
    other.score(0, drive.frames[0].left, extractor.detect_and_describe(drive.frames[0].left))
    other.memory.node_flow(1, drive.frames[1].flow)
    scrambled = noise((120, 160), 8)
    other.score(1, scrambled, extractor.detect_and_describe(scrambled))
    row = other.summary()['per_frame'][1]
    assert row['match_rate'] < 0.2 * summary['match_rate']
    assert row['flow_repeatability'] < 0.3 * summary['flow_repeatability']


def test_surf_falls_back_on_the_library_flow(runtime, translation):
    extractor = SurfExtractor(runtime)
    scorer = SurfQuality(memory())
    for k, frame in enumerate(translation.frames):
        scorer.score(k, frame, extractor.detect_and_describe(frame))
    rows = scorer.summary()['per_frame']
    assert [r.get('motion') for r in rows] == [None, 'library', 'library']
    assert min(r['flow_repeatability'] for r in rows[1:]) > 0.5


# --- end to end: a robot's bag without ground truth ---------------------------------------------

ZED = '/zed2/zed_node'
TS = get_typestore(Stores.ROS2_KILTED)
MESSAGES = MessageFactory(TS, StereoCamera())
START_NS, PERIOD_NS = 1_000_000_000, 100_000_000


def write_zed_bag(path: Path, frames: int) -> None:
    """Write the synthetic stereo pan as a ZED's JPEG colour pair with camera infos, no truth."""
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        for k, frame in enumerate(synthetic_stereo(frames, 96, 128, seed=9).frames):
            stamp = START_NS + k * PERIOD_NS
            for side, gray in (('left', frame.left), ('right', frame.right)):
                if k == 0:
                    writer.add_connection(f'{ZED}/{side}/camera_info',
                                          'sensor_msgs/msg/CameraInfo', typestore=TS)
                    writer.add_connection(f'{ZED}/{side}/image_rect_color/compressed',
                                          'sensor_msgs/msg/CompressedImage', typestore=TS)
                info, image = (c for c in writer.connections
                               if c.topic.startswith(f'{ZED}/{side}/'))
                writer.write(info, stamp, TS.serialize_cdr(
                    MESSAGES.camera_info(128, 96, stamp, right=side == 'right'), info.msgtype))
                colour = cv2.cvtColor(gray, cv2.COLOR_GRAY2BGR)
                data = cv2.imencode('.jpg', colour, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].ravel()
                writer.write(image, stamp + 1000, TS.serialize_cdr(
                    TS.types[image.msgtype](header=MESSAGES.header(stamp, f'{side}_frame'),
                                            format='bgr8; jpeg compressed bgr8', data=data),
                    image.msgtype))


@pytest.mark.ros
def test_eval_reports_the_quality_of_every_node_on_a_bag_without_truth(tmp_path):
    frames = 4
    write_zed_bag(tmp_path / 'bag', frames)
    out = tmp_path / 'out'
    result = cl_vision('eval', str(tmp_path / 'bag'), '--out', str(out), '--timeout', '120')
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / 'report.json').read_text())
    nodes = report['nodes']
    assert {k: (n['answered'], n['dropped']) for k, n in nodes.items()} == {
        'flow': (frames - 1, 0), 'surf': (frames, 0), 'disparity': (frames, 0)}
    flow, surf, disparity = (nodes[k]['quality'] for k in ('flow', 'surf', 'disparity'))
    # Measured on PoCL: FB 0.007 px, photometric 1.4 of 17.4 grey levels unwarped; match rate
    # 0.93, repeatability 0.99; L-R consistent 0.95, density 0.60; the pan leaves nothing static.
    assert flow['frames_scored'] == frames - 1
    assert flow['fb_error'] < 0.05 and flow['photometric_error'] < 0.2 * flow['unwarped_error']
    assert surf['frames_scored'] == frames - 1
    assert surf['match_rate'] > 0.5 and surf['flow_repeatability'] > 0.5
    assert disparity['frames_scored'] == frames
    assert disparity['lr_consistent'] > 0.8 and disparity['density'] > 0.3
    assert disparity['static_coverage'] == 0.0 and disparity['temporal_change'] is None
    assert {r.get('motion') for r in surf['per_frame'][1:]} == {'node'}
    assert (out / 'strip.png').stat().st_size > 0
    assert '## Quality without ground truth' in (out / 'report.md').read_text()
