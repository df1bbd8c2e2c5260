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

"""`cl-vision disparity`: output formats, presets, colour picture, bad input."""
from cl_vision_nodes.dataio.formats import read_kitti_disparity, read_pfm, write_png
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.metrics import bad_pixel_errors
from cliutil import assert_one_line_error, cl_vision
import numpy as np
import pytest


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp('disparity_cli')
    sample = stereo_pair(96, 128, seed=3, max_disparity=12.0)
    write_png(folder / 'left.png', sample.left)
    write_png(folder / 'right.png', sample.right)
    write_png(folder / 'small.png', sample.right[:50])
    return folder, sample


@pytest.mark.parametrize('preset', ['robotics', 'middlebury'])
def test_pfm_png_npy_agree_and_match_ground_truth(folder, preset):
    folder, sample = folder
    outs = {}
    for suffix in ('pfm', 'png', 'npy'):
        out = folder / f'{preset}.{suffix}'
        result = cl_vision('disparity', str(folder / 'left.png'), str(folder / 'right.png'),
                           '--preset', preset, '--out', str(out), '--color',
                           str(folder / f'{preset}_color.png'), '--param', 'disp_max=32')
        assert result.returncode == 0, result.stderr
        outs[suffix] = out
    pfm = read_pfm(outs['pfm'])
    npy = np.load(outs['npy'])
    png = read_kitti_disparity(outs['png'])
    np.testing.assert_array_equal(pfm, npy)
    finite = np.isfinite(pfm)
    assert np.isinf(pfm[~finite]).all()
    positive = finite & (pfm > 0)  # KITTI PNGs cannot hold a valid 0: 0 means invalid there
    assert np.array_equal(positive, np.isfinite(png))
    np.testing.assert_allclose(png[positive], pfm[positive], atol=1 / 256)
    errors = bad_pixel_errors(np.where(finite, pfm, np.nan),
                              np.where(sample.valid, sample.disparity, np.nan), 2.0)
    assert errors.est < 0.1 and errors.density > 0.5


@pytest.mark.parametrize('args, words', [
    (['missing.png', 'right.png', '--out', 'd.pfm'], 'missing.png'),
    (['left.png', 'small.png', '--out', 'd.pfm'], 'is 128x96 but'),
    (['left.png', 'right.png', '--out', 'd.txt'], 'expected a .pfm, .png, .npy'),
    (['left.png', 'right.png', '--out', 'd.pfm', '--param', 'disp_min=300'], 'disp_min'),
    (['left.png', 'right.png', '--out', 'd.pfm', '--preset', 'kitti'], 'invalid choice'),
])
def test_bad_input_one_line_exit_2(folder, args, words):
    folder, _ = folder
    args = [str(folder / a) if a.endswith(('.png', '.pfm', '.txt')) else a for a in args]
    assert_one_line_error(cl_vision('disparity', *args), words)


# --- depth and points from the calibration (--camera-info) ------------------------------------

FX, CX, CY, BASELINE = 100.0, 63.5, 47.5, 0.25


def write_calibration(path, p, width=128, height=96, d=(0, 0, 0, 0, 0)):
    """Write a calibration YAML in camera_calibration_parsers' layout."""
    import yaml

    def matrix(rows, cols, data):
        return {'rows': rows, 'cols': cols, 'data': [float(v) for v in data]}
    path.write_text(yaml.safe_dump({
        'image_width': width, 'image_height': height, 'camera_name': path.stem,
        'camera_matrix': matrix(3, 3, [FX, 0, CX, 0, FX, CY, 0, 0, 1]),
        'distortion_model': 'plumb_bob', 'distortion_coefficients': matrix(1, 5, d),
        'rectification_matrix': matrix(3, 3, np.eye(3).ravel()),
        'projection_matrix': matrix(3, 4, p)}, sort_keys=False))
    return str(path)


@pytest.fixture(scope='module')
def calibrated(folder):
    folder, sample = folder
    left = write_calibration(folder / 'left.yaml', [FX, 0, CX, 0, 0, FX, CY, 0, 0, 0, 1, 0])
    right = write_calibration(folder / 'right.yaml',
                              [FX, 0, CX, -FX * BASELINE, 0, FX, CY, 0, 0, 0, 1, 0])
    return folder, sample, left, right


def run_with_calibration(calibrated, name, *outputs):
    folder, _, left, right = calibrated
    result = cl_vision('disparity', str(folder / 'left.png'), str(folder / 'right.png'),
                       '--out', str(folder / f'{name}_disparity.npy'),
                       '--camera-info', left, right, '--param', 'disp_max=32', *outputs)
    assert result.returncode == 0, result.stderr
    return np.load(folder / f'{name}_disparity.npy')


def test_depth_outputs_read_back(calibrated):
    from cl_vision_nodes.dataio.formats import read_depth_png
    folder = calibrated[0]
    disparity = run_with_calibration(calibrated, 'depth', '--depth', str(folder / 'depth.npy'))
    for suffix in ('pfm', 'png'):
        run_with_calibration(calibrated, f'depth_{suffix}', '--depth',
                             str(folder / f'depth.{suffix}'))
    depth = np.load(folder / 'depth.npy')
    assert depth.dtype == np.float32 and depth.shape == disparity.shape
    with np.errstate(divide='ignore'):
        expected = FX * BASELINE / disparity.astype(np.float64)  # cx_left == cx_right
    finite = np.isfinite(disparity) & (disparity > 0)
    np.testing.assert_allclose(depth[finite], expected[finite], rtol=1e-5)
    assert np.isnan(depth[~np.isfinite(disparity)]).all()
    assert np.isposinf(depth[disparity == 0]).all()  # at infinity (REP 117)
    np.testing.assert_array_equal(read_pfm(folder / 'depth.pfm'), depth)
    png = read_depth_png(folder / 'depth.png')  # millimetres, 0 = no depth or beyond 65.535 m
    representable = np.isfinite(depth) & (depth <= 65.535)
    assert np.array_equal(np.isfinite(png), representable)
    np.testing.assert_allclose(png[representable], depth[representable], atol=0.0005)


@pytest.mark.parametrize('ply', ['binary', 'ascii'])
def test_point_outputs_read_back(calibrated, ply):
    from cl_vision_nodes.dataio.formats import read_ply
    folder, sample = calibrated[:2]
    ascii_option = ['--ply-ascii'] if ply == 'ascii' else []
    run_with_calibration(calibrated, 'points', '--points', str(folder / f'{ply}.ply'),
                         *ascii_option)
    disparity = run_with_calibration(calibrated, 'points_npy', '--points',
                                     str(folder / 'points.npy'))
    organised = np.load(folder / 'points.npy')
    assert organised.shape == disparity.shape
    assert organised.dtype.names == ('x', 'y', 'z', 'red', 'green', 'blue')
    valid = np.isfinite(disparity) & (disparity > 0)
    assert np.array_equal(np.isfinite(organised['z']), valid)
    v, u = np.nonzero(valid)
    z = FX * BASELINE / disparity[valid].astype(np.float64)
    np.testing.assert_allclose(organised['z'][valid], z, rtol=1e-5)
    np.testing.assert_allclose(organised['x'][valid], (u - CX) * z / FX, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(organised['y'][valid], (v - CY) * z / FX, rtol=1e-5, atol=1e-6)
    for channel in ('red', 'green', 'blue'):  # a gray PNG: its grey level in every channel
        assert np.array_equal(organised[channel], sample.left)

    xyz, rgb = read_ply(folder / f'{ply}.ply')  # the valid points, in image order
    expected = organised[valid]
    np.testing.assert_array_equal(xyz, np.stack([expected[n] for n in 'xyz'], axis=1))
    np.testing.assert_array_equal(rgb, np.stack([expected[n] for n in ('red', 'green', 'blue')],
                                                axis=1))


def test_dense_points_without_colour(calibrated):
    folder = calibrated[0]
    disparity = run_with_calibration(calibrated, 'dense', '--points', str(folder / 'dense.npy'),
                                     '--dense-points', '--no-point-color')
    dense = np.load(folder / 'dense.npy')
    assert dense.dtype.names == ('x', 'y', 'z')
    assert dense.shape == (int((np.isfinite(disparity) & (disparity > 0)).sum()),)
    assert np.isfinite(dense['z']).all()


def test_subsampled_depth_is_half_size(calibrated):
    folder = calibrated[0]
    disparity = run_with_calibration(calibrated, 'half', '--depth', str(folder / 'half.npy'),
                                     '--param', 'subsampling=true')
    depth = np.load(folder / 'half.npy')
    assert depth.shape == disparity.shape == (48, 64)
    finite = np.isfinite(disparity) & (disparity > 0)
    np.testing.assert_allclose(depth[finite], FX * BASELINE / disparity[finite], rtol=1e-5)


@pytest.mark.parametrize('args, words', [
    (['--depth', 'd.npy'], '--depth, --points and --rectify need the calibration of the pair'),
    (['--out', 'd.npy', '--rectify'], '--rectify need the calibration of the pair'),
    (['--camera-info', 'left.yaml', 'right.yaml', '--depth', 'd.tif'],
     'd.tif: expected a .npy, .pfm, .png file'),
    (['--camera-info', 'left.yaml', 'right.yaml', '--points', 'p.pcd'],
     'expected a .ply, .npy file'),
    (['--camera-info', 'left.yaml', 'right.yaml'], 'nothing to write'),
    (['--camera-info', 'left.yaml', 'nothing.yaml', '--depth', 'd.npy'], 'nothing.yaml: no such'),
    (['--camera-info', 'left.yaml', 'small.yaml', '--depth', 'd.npy'],
     'small.yaml is a calibration of 64x48 images but'),
    (['--camera-info', 'left.yaml', 'left.yaml', '--depth', 'd.npy'], 'Tx = 0: no baseline'),
    (['--camera-info', 'right.yaml', 'left.yaml', '--points', 'p.ply'], 'Tx = 0: no baseline'),
    (['--camera-info', 'left.yaml', 'swapped.yaml', '--points', 'p.ply'],
     'are left and right swapped'),
    (['--camera-info', 'left.yaml', 'broken.yaml', '--depth', 'd.npy'], 'broken.yaml: not'),
])
def test_calibration_bad_input_one_line_exit_2(calibrated, args, words):
    folder = calibrated[0]
    write_calibration(folder / 'small.yaml', [FX, 0, CX, -25, 0, FX, CY, 0, 0, 0, 1, 0], 64, 48)
    write_calibration(folder / 'swapped.yaml', [FX, 0, CX, 25, 0, FX, CY, 0, 0, 0, 1, 0])
    (folder / 'broken.yaml').write_text('image_width: [1, 2\n')
    args = [str(folder / a) if a.endswith(('.yaml', '.npy', '.ply', '.tif', '.pcd')) else a
            for a in args]
    assert_one_line_error(cl_vision('disparity', str(folder / 'left.png'),
                                    str(folder / 'right.png'), *args), words)


def test_rectify_equals_rectifying_each_image_first(calibrated):
    """
    --rectify on a raw pair equals `cl-vision rectify` of each image, then their disparity.

    The same calibration side, interpolation and geometry.
    """
    folder = calibrated[0]
    distortion = (-0.12, 0.03, 0.001, -0.002, 0.0)
    left = write_calibration(folder / 'raw_left.yaml', [FX, 0, CX, 0, 0, FX, CY, 0, 0, 0, 1, 0],
                             d=distortion)
    right = write_calibration(folder / 'raw_right.yaml',
                              [FX, 0, CX, -FX * BASELINE, 0, FX, CY, 0, 0, 0, 1, 0],
                              d=distortion)
    for side, calibration in (('left', left), ('right', right)):
        result = cl_vision('rectify', str(folder / f'{side}.png'), '--camera-info', calibration,
                           '--out', str(folder / f'rect_{side}.png'))
        assert result.returncode == 0, result.stderr
    common = ('--camera-info', left, right, '--param', 'disp_max=32')
    one_step = cl_vision('disparity', str(folder / 'left.png'), str(folder / 'right.png'),
                         '--rectify', '--out', str(folder / 'one_step.npy'),
                         '--depth', str(folder / 'one_step_depth.npy'), *common)
    two_steps = cl_vision('disparity', str(folder / 'rect_left.png'),
                          str(folder / 'rect_right.png'), '--out', str(folder / 'two.npy'),
                          '--depth', str(folder / 'two_depth.npy'), *common)
    assert one_step.returncode == 0 and two_steps.returncode == 0, \
        one_step.stderr + two_steps.stderr
    raw = cl_vision('disparity', str(folder / 'left.png'), str(folder / 'right.png'),
                    '--out', str(folder / 'raw.npy'), *common)
    assert raw.returncode == 0, raw.stderr
    np.testing.assert_array_equal(np.load(folder / 'one_step.npy'), np.load(folder / 'two.npy'))
    np.testing.assert_array_equal(np.load(folder / 'one_step_depth.npy'),
                                  np.load(folder / 'two_depth.npy'))
    assert not np.array_equal(np.load(folder / 'one_step.npy'), np.load(folder / 'raw.npy'))


@pytest.mark.parametrize('binary', [True, False])
def test_ply_of_no_points_and_a_foreign_ply(tmp_path, binary):
    from cl_vision_nodes.dataio.formats import read_ply, write_ply
    from cl_vision_nodes.errors import DataFormatError
    write_ply(tmp_path / 'empty.ply', np.empty((0, 3), np.float32), binary=binary)
    xyz, rgb = read_ply(tmp_path / 'empty.ply')
    assert xyz.shape == (0, 3) and rgb is None
    (tmp_path / 'mesh.ply').write_bytes(b'ply\nformat ascii 1.0\nelement vertex 1\n'
                                        b'property double x\nend_header\n1.0\n')
    with pytest.raises(DataFormatError, match='mesh.ply: '):
        read_ply(tmp_path / 'mesh.ply')
