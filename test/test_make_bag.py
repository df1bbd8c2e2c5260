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
`cl-vision make-bag`: every data set layout of ../shared/data and the generators become bags.

Data sets and the synthetic generators become bags in the bag_layout topics, which read back with
rosbags with exact ground truth.
"""
from __future__ import annotations

from bagutil import pixels, read_bag, ReadBag, stamp_ns
from cl_vision_nodes.bags import layout
from cl_vision_nodes.dataio import motorcycle
from cl_vision_nodes.dataio.formats import (read_flo, read_homography, read_image,
                                            read_kitti_disparity, read_kitti_flow,
                                            read_scaled_disparity_png, write_kitti_disparity,
                                            write_kitti_flow)
from cl_vision_nodes.dataio.synthetic import flow_sequence, Motion
from cliutil import cl_vision
import cv2
import numpy as np
import pytest

STEREO = {layout.LEFT_IMAGE, layout.RIGHT_IMAGE, layout.LEFT_INFO, layout.RIGHT_INFO}
MONO = {layout.LEFT_IMAGE, layout.LEFT_INFO}


def make_bag(tmp_path, source, *args):
    out = tmp_path / 'bag'
    result = cl_vision('make-bag', str(source), '--out', str(out), *args)
    assert result.returncode == 0, result.stderr
    return read_bag(out), result.stdout


def assert_same_truth(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])


def assert_consistent_frames(bag: ReadBag, rate: float = 10.0) -> None:
    """
    Check the frames' stamps, headers and camera_info.

    Stamps step by 1/rate from START_NS; every message's header equals its bag time; left
    camera_info fits its image.
    """
    times = bag.stamps(layout.LEFT_IMAGE)
    assert times == [layout.START_NS + round(k * 1e9 / rate) for k in range(len(times))]
    for topic, msgs in bag.messages.items():
        assert bag.types[topic] == layout.INPUT_TYPES[topic]
        for timestamp, msg in msgs:
            assert set(bag.stamps(topic)) <= set(times)
            if topic != layout.GT_HOMOGRAPHY:
                assert stamp_ns(msg) == timestamp
    for (_, image), (_, info) in zip(bag.messages[layout.LEFT_IMAGE],
                                     bag.messages[layout.LEFT_INFO], strict=True):
        assert image.encoding == 'mono8' and image.header.frame_id == layout.LEFT_FRAME
        assert (info.width, info.height) == (image.width, image.height)
        assert info.k[0] == info.p[0] > 0 and info.p[3] == 0.0


def right_baseline(bag: ReadBag) -> float:
    _, info = bag.messages[layout.RIGHT_INFO][0]
    assert info.header.frame_id == layout.RIGHT_FRAME
    return -info.p[3] / info.p[0]


# --- shared data -------------------------------------------------------------------------------


def test_kitti_pair_with_noc_disparity(shared_data, tmp_path):
    root = shared_data('stereo', 'kitti2015_000001')
    bag, _ = make_bag(tmp_path, root)
    assert bag.storage == 'mcap'
    assert bag.counts() == {**dict.fromkeys(STEREO, 2), layout.GT_DISPARITY: 1}
    assert_consistent_frames(bag)
    (t, truth), = bag.messages[layout.GT_DISPARITY]
    assert t == bag.stamps(layout.LEFT_IMAGE)[0]  # frame _10 has the ground truth
    assert_same_truth(pixels(truth), read_kitti_disparity(root / 'disp_noc_0_000001_10.png'))
    np.testing.assert_array_equal(pixels(bag.messages[layout.RIGHT_IMAGE][1][1]),
                                  read_image(root / 'image_3_000001_11.png'))
    assert bag.messages[layout.LEFT_INFO][0][1].p[0] == pytest.approx(layout.KITTI_FX)
    assert right_baseline(bag) == pytest.approx(layout.KITTI_BASELINE_M)


def test_middlebury_cones_masked_ground_truth(shared_data, tmp_path):
    root = shared_data('stereo', 'middlebury_cones')
    bag, _ = make_bag(tmp_path, root, '--storage', 'sqlite3')
    assert bag.storage == 'sqlite3'
    assert bag.counts() == {**dict.fromkeys(STEREO, 1), layout.GT_DISPARITY: 1}
    assert_consistent_frames(bag)
    expected = read_scaled_disparity_png(root / 'cones_gt.png', 1.0)
    expected[read_image(root / 'cones_mask.png') <= 127] = np.nan
    assert_same_truth(pixels(bag.messages[layout.GT_DISPARITY][0][1]), expected)
    assert bag.messages[layout.LEFT_INFO][0][1].p[0] == 450.0  # fx = width when unknown
    assert right_baseline(bag) == pytest.approx(layout.DEFAULT_BASELINE_M)


def test_libelas_pairs_without_ground_truth(shared_data, tmp_path):
    root = shared_data('stereo', 'libelas')
    bag, _ = make_bag(tmp_path, root)
    assert bag.counts() == dict.fromkeys(STEREO, 2)
    sizes = [(m.width, m.height) for _, m in bag.messages[layout.RIGHT_IMAGE]]
    assert sizes == [(900, 750), (1344, 391)]  # cones, urban1: one frame per pair, by name


@pytest.mark.parametrize('sequence', ['Venus', 'RubberWhale'])
def test_middlebury_flow_truth_on_the_second_frame(shared_data, tmp_path, sequence):
    root = shared_data('flow', 'middlebury', sequence)
    bag, _ = make_bag(tmp_path, root, '--rate', '4')
    assert bag.counts() == {**dict.fromkeys(MONO, 2), layout.GT_FLOW: 1}
    assert_consistent_frames(bag, rate=4.0)
    (t, truth), = bag.messages[layout.GT_FLOW]
    assert t == bag.stamps(layout.LEFT_IMAGE)[1]  # flow10.flo: frame10 -> frame11
    assert_same_truth(pixels(truth), read_flo(root / 'flow10.flo'))
    np.testing.assert_array_equal(pixels(bag.messages[layout.LEFT_IMAGE][0][1]),
                                  read_image(root / 'frame10.png'))


def test_yosemite_single_flo_between_two_frames(shared_data, tmp_path):
    root = shared_data('flow', 'yosemite')
    bag, _ = make_bag(tmp_path, root)
    assert bag.counts() == {**dict.fromkeys(MONO, 2), layout.GT_FLOW: 1}
    np.testing.assert_array_equal(pixels(bag.messages[layout.LEFT_IMAGE][0][1]),
                                  read_image(root / 'yos9.png'))  # 9 before 10: numeric order
    assert_same_truth(pixels(bag.messages[layout.GT_FLOW][0][1]),
                      read_flo(root / 'correct_yos.flo'))


def test_oxford_sequence_homographies_from_the_first_frame(shared_data, tmp_path):
    root = shared_data('features', 'graf')
    bag, _ = make_bag(tmp_path, root)
    assert bag.counts() == {**dict.fromkeys(MONO, 3), layout.GT_HOMOGRAPHY: 3}
    assert_consistent_frames(bag)
    assert bag.stamps(layout.GT_HOMOGRAPHY) == bag.stamps(layout.LEFT_IMAGE)
    matrices = [m.data.reshape(3, 3) for _, m in bag.messages[layout.GT_HOMOGRAPHY]]
    np.testing.assert_array_equal(matrices[0], np.eye(3))
    for k in (2, 3):
        np.testing.assert_array_equal(matrices[k - 1], read_homography(root / f'H1to{k}p'))
    assert [d.label for d in bag.messages[layout.GT_HOMOGRAPHY][0][1].layout.dim] == \
        ['rows', 'cols']


def test_official_kitti_folders_with_flow(tmp_path):
    """The KITTI release layout (image_2/000000_10.png, ...) and its flow_noc ground truth."""
    root = tmp_path / 'kitti'
    rng = np.random.default_rng(0)
    disparity = rng.uniform(1, 20, (24, 40)).astype(np.float32)
    disparity[:4] = np.nan
    flow = rng.uniform(-5, 5, (24, 40, 2)).astype(np.float32)
    for folder in ('image_2', 'image_3', 'disp_occ_0', 'flow_noc'):
        (root / folder).mkdir(parents=True)
    for scene in ('000000', '000001'):
        for index in ('10', '11'):
            for folder in ('image_2', 'image_3'):
                cv2.imwrite(str(root / folder / f'{scene}_{index}.png'),
                            rng.integers(0, 255, (24, 40, 3), dtype=np.uint8))
        write_kitti_disparity(root / 'disp_occ_0' / f'{scene}_10.png', disparity)
        write_kitti_flow(root / 'flow_noc' / f'{scene}_10.png', flow)
    bag, _ = make_bag(tmp_path, root)
    assert bag.counts() == {**dict.fromkeys(STEREO, 4), layout.GT_DISPARITY: 2, layout.GT_FLOW: 2}
    times = bag.stamps(layout.LEFT_IMAGE)
    assert bag.stamps(layout.GT_DISPARITY) == [times[0], times[2]]  # frames _10
    assert bag.stamps(layout.GT_FLOW) == [times[1], times[3]]  # flow _10 -> _11 on frame _11
    assert_same_truth(pixels(bag.messages[layout.GT_DISPARITY][1][1]),
                      read_kitti_disparity(root / 'disp_occ_0' / '000001_10.png'))
    assert_same_truth(pixels(bag.messages[layout.GT_FLOW][0][1]),
                      read_kitti_flow(root / 'flow_noc' / '000000_10.png'))


# --- synthetic ---------------------------------------------------------------------------------


def test_synthetic_flow_sequence_is_exact_and_deterministic(tmp_path):
    bag, stdout = make_bag(tmp_path, 'synthetic:flow:3:40x56', '--seed', '5', '--rate', '20')
    assert 'synthetic flow, 3 frames at 20 Hz' in stdout
    assert bag.counts() == {**dict.fromkeys(MONO, 3), layout.GT_FLOW: 2,
                            layout.GT_HOMOGRAPHY: 3}
    assert_consistent_frames(bag, rate=20.0)
    sequence = flow_sequence(3, 40, 56, motion='translation', seed=5)
    for k, (_, image) in enumerate(bag.messages[layout.LEFT_IMAGE]):
        np.testing.assert_array_equal(pixels(image), sequence.frames[k])
    for k, (_, truth) in enumerate(bag.messages[layout.GT_FLOW]):
        expected = np.where(sequence.valid[k][..., None], sequence.flows[k], np.nan)
        assert_same_truth(pixels(truth), expected.astype(np.float32))
    dx, dy = Motion('translation').shift
    for k, (_, h) in enumerate(bag.messages[layout.GT_HOMOGRAPHY]):
        np.testing.assert_allclose(h.data.reshape(3, 3), [[1, 0, k * dx], [0, 1, k * dy],
                                                          [0, 0, 1]])
    again, _ = make_bag(tmp_path / 'again', 'synthetic:flow:3:40x56', '--seed', '5')
    np.testing.assert_array_equal(pixels(again.messages[layout.LEFT_IMAGE][2][1]),
                                  sequence.frames[2])


def test_synthetic_stereo_pans_over_one_scene(tmp_path):
    bag, _ = make_bag(tmp_path, 'synthetic:stereo:3:48x64')
    assert bag.counts() == {**dict.fromkeys(STEREO, 3), layout.GT_DISPARITY: 3,
                            layout.GT_FLOW: 2, layout.GT_HOMOGRAPHY: 3}
    assert_consistent_frames(bag)
    lefts = [pixels(m) for _, m in bag.messages[layout.LEFT_IMAGE]]
    rights = [pixels(m) for _, m in bag.messages[layout.RIGHT_IMAGE]]
    truths = [pixels(m) for _, m in bag.messages[layout.GT_DISPARITY]]
    # The rig pans right by 2 px per frame: the scene moves left by 2 px, exactly.
    np.testing.assert_array_equal(lefts[1][:, :-2], lefts[0][:, 2:])
    np.testing.assert_array_equal(rights[2][:, :-4], rights[0][:, 4:])
    both = np.isfinite(truths[1][:, :-2])
    assert (np.isfinite(truths[0][:, 2:]) >= both).all()  # a window further right sees less
    np.testing.assert_array_equal(truths[1][:, :-2][both], truths[0][:, 2:][both])
    flow = pixels(bag.messages[layout.GT_FLOW][0][1])
    assert np.isnan(flow[:, :2]).all() and (flow[:, 2:] == [-2.0, 0.0]).all()
    # Ground truth is known where the left pixel is visible in the right view.
    ys, xs = np.nonzero(np.isfinite(truths[0]))
    assert len(xs) > 0.5 * truths[0].size
    assert (xs - truths[0][ys, xs] >= 0).all()
    map_x = (xs - truths[0][ys, xs]).astype(np.float32)[None]
    matched = cv2.remap(rights[0], map_x, ys.astype(np.float32)[None], cv2.INTER_LINEAR)[0]
    assert np.mean(np.abs(matched.astype(int) - lefts[0][ys, xs])) < 2.0  # grey levels
    assert right_baseline(bag) == pytest.approx(layout.DEFAULT_BASELINE_M)


def test_motorcycle_drive_with_its_rig_and_truth(tmp_path):
    bag, stdout = make_bag(tmp_path, 'motorcycle:3:60x80')
    assert 'Middlebury Motorcycle drive, 3 frames at 10 Hz' in stdout
    assert bag.counts() == {**dict.fromkeys(STEREO, 3), layout.GT_DISPARITY: 3,
                            layout.GT_FLOW: 2}  # no homography: a 3-D scene has none
    assert_consistent_frames(bag)
    drive = motorcycle.sequence(3, 60, 80)
    for k, frame in enumerate(drive.frames):
        np.testing.assert_array_equal(pixels(bag.messages[layout.LEFT_IMAGE][k][1]), frame.left)
        np.testing.assert_array_equal(pixels(bag.messages[layout.RIGHT_IMAGE][k][1]),
                                      frame.right)
        assert_same_truth(pixels(bag.messages[layout.GT_DISPARITY][k][1]), frame.disparity)
    for k, (_, truth) in enumerate(bag.messages[layout.GT_FLOW]):
        assert_same_truth(pixels(truth), drive.frames[k + 1].flow)
    assert bag.stamps(layout.GT_FLOW) == bag.stamps(layout.LEFT_IMAGE)[1:]
    assert bag.messages[layout.LEFT_INFO][0][1].p[0] == pytest.approx(drive.focal_px)
    assert right_baseline(bag) == pytest.approx(motorcycle.BASELINE_M)


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize('source, extra, words', [
    ('NOTHING', [], 'unknown data set layout'),
    ('MISSING', [], 'no such folder'),
    ('synthetic:cubes:3:8x8', [], 'expected synthetic:{flow,stereo}:FRAMES:HxW'),
    ('synthetic:flow:1:32x32', [], 'needs at least 2 frames'),
    ('synthetic:flow:2:32x32', ['--rate', '0'], "argument --rate: must be > 0, got '0'"),
    ('synthetic:flow:2:32x32', ['EXISTS'], 'exists already, not overwriting'),
    ('motorcycle:8', [], 'expected motorcycle or motorcycle:FRAMES:HxW'),
    ('motorcycle:30:240x320', [], 'the motorcycle sequence has 2..20 frames'),
    ('motorcycle:2:480x640', [], 'the motorcycle sequence is 16x16 to 400x533 pixels'),
])
def test_bad_input_one_line_exit_2(tmp_path, source, extra, words):
    (tmp_path / 'NOTHING').mkdir()
    (tmp_path / 'NOTHING' / 'readme.txt').write_text('not a data set')
    out = tmp_path / 'bag'
    if extra == ['EXISTS']:
        out.mkdir()
        extra = []
    source = str(tmp_path / source) if source.isupper() else source
    result = cl_vision('make-bag', source, '--out', str(out), *extra)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


def test_a_broken_file_leaves_no_half_written_bag(tmp_path):
    root = tmp_path / 'pairs'
    root.mkdir()
    cv2.imwrite(str(root / 'a_left.png'), np.zeros((16, 16), np.uint8))
    (root / 'a_right.png').write_bytes(b'not a png')
    result = cl_vision('make-bag', str(root), '--out', str(tmp_path / 'bag'))
    assert result.returncode == 2 and 'a_right.png: not an image' in result.stderr
    assert not (tmp_path / 'bag').exists()
