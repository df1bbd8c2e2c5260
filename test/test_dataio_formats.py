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

"""Readers/writers of cl_vision_nodes.dataio.formats: round trips, conventions, malformed files."""

from pathlib import Path

from cl_vision_nodes.dataio import formats
from cl_vision_nodes.errors import DataFormatError, ImageFormatError
import cv2
import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[1].parent / 'shared' / 'data'


def shared(relative: str) -> Path:
    """Return a file of ../shared/data, or skip: the data is not shipped with the package."""
    path = DATA / relative
    if not path.is_file():
        pytest.skip(f'{path} is absent (../shared/data is not part of the package)')
    return path


def random_flow(height: int = 5, width: int = 7, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-20, 20, (height, width, 2)).astype(np.float32)


# --- .flo --------------------------------------------------------------------------------------


def test_flo_round_trip_with_unknown(tmp_path: Path) -> None:
    flow = random_flow()
    flow[1, 2, 0] = np.nan  # one NaN component makes the whole pixel unknown
    flow[3, 4] = np.inf
    path = tmp_path / 'f.flo'
    formats.write_flo(path, flow)
    data = path.read_bytes()
    assert len(data) == 12 + 5 * 7 * 2 * 4
    assert np.frombuffer(data, '<f4', 1)[0] == np.float32(202021.25)
    assert tuple(np.frombuffer(data, '<i4', 2, offset=4)) == (7, 5)
    assert np.frombuffer(data, '<f4', offset=12).reshape(5, 7, 2)[1, 2, 1] == np.float32(1e10)

    back = formats.read_flo(path)
    assert back.dtype == np.float32 and back.shape == (5, 7, 2)
    unknown = np.zeros((5, 7), bool)
    unknown[1, 2] = unknown[3, 4] = True
    assert np.array_equal(np.isnan(back).any(axis=2), unknown)
    assert np.isnan(back[unknown]).all()
    np.testing.assert_array_equal(back[~unknown], flow[~unknown])


def test_flo_large_values_read_as_unknown(tmp_path: Path) -> None:
    flow = np.zeros((2, 3, 2), np.float32)
    flow[0, 1, 1] = -2e9
    formats.write_flo(tmp_path / 'f.flo', flow)
    back = formats.read_flo(tmp_path / 'f.flo')
    assert np.isnan(back[0, 1]).all()
    assert np.isfinite(np.delete(back.reshape(-1, 2), 1, axis=0)).all()


def _flo_bytes(tag: float = 202021.25, width: int = 3, height: int = 2, values: int = 12) -> bytes:
    header = np.array([tag], '<f4').tobytes() + np.array([width, height], '<i4').tobytes()
    return header + np.zeros(values, '<f4').tobytes()


@pytest.mark.parametrize(
    ('content', 'message'),
    [
        (_flo_bytes(values=11), 'needs 60 bytes'),
        (_flo_bytes(values=13), 'needs 60 bytes'),
        (_flo_bytes(tag=1.0), 'not a .flo'),
        (_flo_bytes(width=-3), 'invalid .flo size'),
        (b'PIEH', 'truncated'),
    ],
    ids=['truncated', 'too-long', 'wrong-tag', 'negative-size', 'header-only'],
)
def test_flo_malformed(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / 'bad.flo'
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match=message) as info:
        formats.read_flo(path)
    assert str(path) in str(info.value) and '\n' not in str(info.value)


def test_flo_writer_rejects_wrong_shape(tmp_path: Path) -> None:
    with pytest.raises(ImageFormatError, match='HxWx2'):
        formats.write_flo(tmp_path / 'f.flo', np.zeros((4, 4, 3), np.float32))


# --- KITTI PNGs --------------------------------------------------------------------------------


def test_kitti_disparity_round_trip(tmp_path: Path) -> None:
    disparity = np.array(
        [[1.5, 0.0, np.nan, np.inf], [-3.0, 1e-4, 300.0, 42.0 + 3 / 256]], np.float32
    )
    path = tmp_path / 'd.png'
    formats.write_kitti_disparity(path, disparity)
    raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert raw.dtype == np.uint16
    np.testing.assert_array_equal(raw, [[384, 0, 0, 0], [0, 1, 65535, 42 * 256 + 3]])

    back = formats.read_kitti_disparity(path)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(back), [[0, 1, 1, 1], [1, 0, 0, 0]])
    np.testing.assert_array_equal(back[0, 0], 1.5)
    np.testing.assert_array_equal(back[1, 1:], [1 / 256, 65535 / 256, 42 + 3 / 256])


def test_kitti_flow_round_trip(tmp_path: Path) -> None:
    flow = np.round(random_flow() * 64) / 64
    flow[2, 3, 1] = np.nan
    path = tmp_path / 'f.png'
    formats.write_kitti_flow(path, flow)
    raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)  # BGR: u is channel 2
    assert raw.dtype == np.uint16 and raw.shape == (5, 7, 3)
    assert raw[0, 0, 2] == flow[0, 0, 0] * 64 + 2**15
    assert raw[0, 0, 1] == flow[0, 0, 1] * 64 + 2**15
    assert raw[2, 3, 0] == 0 and raw[0, 0, 0] == 1

    back = formats.read_kitti_flow(path)
    assert back.dtype == np.float32 and back.shape == (5, 7, 2)
    invalid = np.isnan(flow).any(axis=2)
    assert np.isnan(back[invalid]).all()
    np.testing.assert_array_equal(back[~invalid], flow[~invalid])


def test_kitti_readers_check_the_png_layout(tmp_path: Path) -> None:
    path = tmp_path / 'gray8.png'
    cv2.imwrite(str(path), np.zeros((4, 4), np.uint8))
    with pytest.raises(DataFormatError, match='uint16 1-channel'):
        formats.read_kitti_disparity(path)
    with pytest.raises(DataFormatError, match='uint16 3-channel'):
        formats.read_kitti_flow(path)


# --- PFM ---------------------------------------------------------------------------------------


def test_pfm_round_trip_gray_with_inf(tmp_path: Path) -> None:
    image = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    image[0, 1] = np.inf
    path = tmp_path / 'd.pfm'
    formats.write_pfm(path, image)
    data = path.read_bytes()
    assert data.startswith(b'Pf\n4 3\n-1.0\n')
    # rows are stored bottom-to-top
    assert np.array_equal(np.frombuffer(data[-16:], '<f4'), image[0])
    back = formats.read_pfm(path)
    assert back.dtype == np.float32 and back.flags.c_contiguous
    np.testing.assert_array_equal(back, image)


def test_pfm_round_trip_colour(tmp_path: Path) -> None:
    image = np.random.default_rng(1).normal(size=(3, 2, 3)).astype(np.float32)
    formats.write_pfm(tmp_path / 'c.pfm', image)
    assert (tmp_path / 'c.pfm').read_bytes().startswith(b'PF\n')
    np.testing.assert_array_equal(formats.read_pfm(tmp_path / 'c.pfm'), image)


def test_pfm_big_endian(tmp_path: Path) -> None:
    image = np.array([[1.0, 2.0, 3.0], [4.0, np.inf, -6.25]], np.float32)
    path = tmp_path / 'be.pfm'
    path.write_bytes(b'Pf\n3 2\n1.0\n' + np.flipud(image).astype('>f4').tobytes())
    np.testing.assert_array_equal(formats.read_pfm(path), image)


@pytest.mark.parametrize(
    ('content', 'message'),
    [
        (b'P5\n3 2\n255\n' + bytes(6), 'bad header'),
        (b'Pf\n3 2\n-1.0\n' + bytes(23), 'needs 24 data bytes'),
        (b'Pf\n3 2\n0\n' + bytes(24), 'invalid PFM header'),
        (b'Pf\n3 2\nabc\n' + bytes(24), 'bad PFM scale'),
    ],
    ids=['not-pfm', 'truncated', 'zero-scale', 'bad-scale'],
)
def test_pfm_malformed(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / 'bad.pfm'
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match=message):
        formats.read_pfm(path)


# --- scaled disparity PNG, homography, images --------------------------------------------------


def test_scaled_disparity_png(tmp_path: Path) -> None:
    path = tmp_path / 'gt.png'
    cv2.imwrite(str(path), np.array([[0, 4, 255]], np.uint8))
    back = formats.read_scaled_disparity_png(path, 4)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, [[np.nan, 1.0, 63.75]])

    cv2.imwrite(str(path), np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(DataFormatError, match='single-channel'):
        formats.read_scaled_disparity_png(path, 1)


def test_homography(tmp_path: Path) -> None:
    path = tmp_path / 'H'
    path.write_text('  1 0 2.5\n0 1e0 -3\n\t0 0 1\n')
    expected = [[1, 0, 2.5], [0, 1, -3], [0, 0, 1]]
    np.testing.assert_array_equal(formats.read_homography(path), expected)
    path.write_text('1 0 0\n0 1 0\n')
    with pytest.raises(DataFormatError, match='needs 9 numbers, file has 6'):
        formats.read_homography(path)
    path.write_bytes(b'\x89PNG\r\n')
    with pytest.raises(DataFormatError, match='not 9 ASCII numbers'):
        formats.read_homography(path)


def test_read_image_gray_and_colour(tmp_path: Path) -> None:
    bgr = np.random.default_rng(2).integers(0, 256, (6, 5, 3), dtype=np.uint8)
    path = tmp_path / 'img.png'
    cv2.imwrite(str(path), bgr)
    np.testing.assert_array_equal(formats.read_image(path, gray=False), bgr)
    np.testing.assert_array_equal(formats.read_image(path), cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))


@pytest.mark.parametrize(
    ('content', 'message'),
    [(None, 'no such file'), (b'', 'cannot decode'), (b'hello, not a PNG', 'cannot decode')],
    ids=['missing', 'empty', 'not-an-image'],
)
def test_bad_image_files(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / 'x.png'
    if content is not None:
        path.write_bytes(content)
    for reader in (formats.read_image, formats.read_kitti_disparity, formats.read_kitti_flow):
        with pytest.raises(DataFormatError, match=message):
            reader(path)


@pytest.mark.parametrize(
    'reader',
    [formats.read_flo, formats.read_pfm, formats.read_homography],
    ids=lambda reader: reader.__name__,
)
def test_missing_file(tmp_path: Path, reader) -> None:
    with pytest.raises(DataFormatError, match='no such file'):
        reader(tmp_path / 'absent')


def test_unwritable_destination(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match='cannot write'):
        formats.write_pfm(tmp_path / 'no_dir' / 'd.pfm', np.zeros((2, 2), np.float32))
    with pytest.raises(DataFormatError, match='cannot write'):
        formats.write_kitti_disparity(tmp_path / 'no_dir' / 'd.png', np.ones((2, 2)))


# --- the real files in ../shared/data ----------------------------------------------------------


def test_middlebury_flo() -> None:
    flow = formats.read_flo(shared('flow/middlebury/RubberWhale/flow10.flo'))
    assert flow.shape == (388, 584, 2) and flow.dtype == np.float32
    unknown = np.isnan(flow).any(axis=2)
    assert 0.005 < unknown.mean() < 0.05  # RubberWhale has unknown (occluded) pixels
    assert np.nanmax(np.abs(flow)) < 10


def test_yosemite_flo() -> None:
    flow = formats.read_flo(shared('flow/yosemite/correct_yos.flo'))
    assert flow.shape == (252, 316, 2)
    np.testing.assert_array_equal(flow[0, 0], [1, 0])  # sky = (1, 0) in this version


def test_kitti_disparity_file() -> None:
    disparity = formats.read_kitti_disparity(
        shared('stereo/kitti2015_000001/disp_noc_0_000001_10.png')
    )
    assert disparity.shape == (375, 1242)
    assert 0.21 < np.isfinite(disparity).mean() < 0.25
    assert 0 < np.nanmin(disparity) and np.nanmax(disparity) < 256


def test_cones_ground_truth() -> None:
    truth = shared('stereo/middlebury_cones/cones_gt.png')
    disparity = formats.read_scaled_disparity_png(truth, 1)
    assert disparity.shape == (375, 450)
    assert np.isfinite(disparity).mean() > 0.95
    assert 40 < np.nanmax(disparity) <= 64  # quarter-size Cones, scale 1


def test_graf_homography_and_image() -> None:
    homography = formats.read_homography(shared('features/graf/H1to2p'))
    assert homography.shape == (3, 3) and homography.dtype == np.float64
    assert homography[0, 0] == pytest.approx(0.87976964) and homography[2, 2] == 1
    assert formats.read_image(shared('features/graf/img1.png')).shape == (640, 800)
