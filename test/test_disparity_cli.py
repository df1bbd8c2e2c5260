"""`cl-vision disparity`: output formats, presets, colour picture, bad input."""
import numpy as np
import pytest

from cl_vision_nodes.dataio.formats import read_kitti_disparity, read_pfm, write_png
from cl_vision_nodes.dataio.synthetic import stereo_pair
from test_cli import assert_one_line_error, cl_vision


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp('disparity_cli')
    sample = stereo_pair(96, 128, seed=3, max_disparity=12.0)
    write_png(folder / 'left.png', sample.left)
    write_png(folder / 'right.png', sample.right)
    write_png(folder / 'small.png', sample.right[:50])
    return folder, sample


def bad_fraction(disparity, sample):
    good = np.isfinite(disparity) & sample.valid
    return np.mean(np.abs(disparity[good] - sample.disparity[good]) > 2), good.mean()


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
    bad, density = bad_fraction(np.where(finite, pfm, np.nan), sample)
    assert bad < 0.1 and density > 0.5


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
