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
Depth and point clouds on the device (kernels/stereo/reproject.cl).

Against OpenCV's reprojectImageTo3D with the Q matrix of the same calibration, PointCloud2 layouts
as stereo_image_proc's point_cloud_node writes them, and rgb packing bit-exact per encoding.
"""
from cl_vision_nodes.camera.calibration import CalibrationError
from cl_vision_nodes.dataio.formats import read_kitti_disparity
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import _demosaic, array_to_raw, encoding_info, raw_to_array
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout, unpack_rgb
from cl_vision_nodes.stereo.reproject import Reprojector
import cv2
from imageutil import random_image
import numpy as np
import pytest

pytestmark = pytest.mark.kernels

# A KITTI-like rectified pair (KITTI 2015 ships no calibration with the data set here): the
# raw-data focal length and principal point, the baseline of its gray cameras, and a right
# principal point 3.5 px to the left, so the principal-point term of the depth is exercised.
F, CX, CY, BASELINE, DELTA_CX = 721.5377, 609.5593, 172.854, 0.5372, 3.5
KITTI = 'stereo', 'kitti2015_000001'
RTOL = 1e-4
LAYOUTS = [CloudLayout(color, padding) for color in (False, True) for padding in (False, True)]
COLOR_ENCODINGS = ['mono8', 'mono16', 'bgr8', 'rgb8', 'bgra8', 'rgba8', 'bayer_rggb8',
                   'bayer_bggr8', 'bayer_gbrg8', 'bayer_grbg8']


def layout_id(layout: CloudLayout) -> str:
    return f'color={layout.use_color}-avoid_padding={layout.avoid_padding}'


def kitti_geometry(delta_cx: float = DELTA_CX, fy: float = F) -> StereoGeometry:
    left = [F, 0, CX, 0, 0, fy, CY, 0, 0, 0, 1, 0]
    right = [F, 0, CX - delta_cx, -F * BASELINE, 0, fy, CY, 0, 0, 0, 1, 0]
    return StereoGeometry.from_projections(left, right)


@pytest.fixture(scope='module')
def reprojector(runtime):
    return Reprojector(runtime)


@pytest.fixture(scope='module')
def kitti_disparity(shared_data):
    """KITTI 000001's non-occluded ground truth (23 % valid), invalid = -1 as ElasMatcher."""
    truth = read_kitti_disparity(shared_data(*KITTI, 'disp_noc_0_000001_10.png'))
    return np.where(np.isnan(truth), np.float32(-1), truth)


def opencv_points(disparity: np.ndarray, geometry: StereoGeometry, min_disparity: float):
    """
    Reproject with cv2.reprojectImageTo3D (double arithmetic); also where a point exists.

    A point exists at a valid disparity in front of the camera.
    """
    points = cv2.reprojectImageTo3D(disparity, geometry.q_matrix())
    return points, (disparity >= min_disparity) & (disparity - geometry.delta_cx > 0)


def assert_points_close(got: np.ndarray, expected: np.ndarray) -> None:
    """x, y, z within RTOL of the point's distance (x or y near 0 cannot be relative)."""
    scale = np.linalg.norm(expected, axis=-1)
    for axis, name in enumerate('xyz'):
        error = np.abs(got[name] - expected[..., axis]) / scale
        assert error.max() < RTOL, (name, error.max())


def packed(r, g, b) -> np.ndarray:
    """Pack rgb as stereo_image_proc does: float32 bits 0x00RRGGBB."""
    r, g, b = (np.asarray(c, np.uint32) for c in (r, g, b))
    return ((r << 16) | (g << 8) | b).view(np.float32)


def expected_rgb(raw) -> np.ndarray:
    a = raw_to_array(raw)
    info = encoding_info(raw.encoding)
    if info.name == 'mono8':
        return packed(a, a, a)
    if info.name == 'mono16':
        g = (a.astype(np.uint32) + 128) // 257
        return packed(g, g, g)
    if info.kind == 'bayer':
        return packed(*_demosaic(a, info.order))
    return packed(*(a[..., info.order.index(ch)] for ch in 'RGB'))


# --- geometry ----------------------------------------------------------------------------------

def test_geometry_from_projection_matrices():
    g = kitti_geometry(fy=700.0)
    assert (g.fx, g.fy, g.cx, g.cy, g.cx_right) == (F, 700.0, CX, CY, CX - DELTA_CX)
    assert g.baseline == pytest.approx(BASELINE, rel=1e-12)
    assert g.delta_cx == pytest.approx(DELTA_CX)
    half = g.scaled(0.5)
    assert (half.fx, half.fy, half.cx, half.cy, half.baseline) == \
        (F / 2, 350.0, CX / 2, CY / 2, g.baseline)
    # Q maps (u, v, d) to X/W = (u - cx) Z / fx, Y/W = (v - cy) Z / fy, Z/W = fx T / (d - dcx)
    u, v, d = 100.0, 300.0, 40.0
    x, y, z, w = g.q_matrix() @ [u, v, d, 1.0]
    depth = F * g.baseline / (d - DELTA_CX)
    np.testing.assert_allclose([x / w, y / w, z / w],
                               [(u - CX) * depth / F, (v - CY) * depth / 700.0, depth])


def test_q_matrix_is_opencv_stereo_rectify_q_up_to_scale():
    """
    Q from P1, P2 is OpenCV stereoRectify's Q up to image_geometry's factor fy * Tx.

    stereoRectify (principal points kept apart) gives P1, P2 and Q.
    """
    k_left = np.array([[700.0, 0, 320], [0, 700, 240], [0, 0, 1]])
    k_right = np.array([[700.0, 0, 331], [0, 700, 236], [0, 0, 1]])
    _, _, p1, p2, q, _, _ = cv2.stereoRectify(k_left, np.zeros(5), k_right, np.zeros(5),
                                              (640, 480), np.eye(3), np.array([[-0.12], [0], [0]]),
                                              flags=0, alpha=-1)
    ours = StereoGeometry.from_projections(p1, p2)
    assert ours.delta_cx != 0
    np.testing.assert_allclose(ours.q_matrix() / ours.q_matrix()[2, 3], q / q[2, 3],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('change, words', [
    ({'left': (0, 2, np.nan)}, 'left projection matrix P is not finite'),
    ({'right': (1, 3, np.inf)}, 'right projection matrix P is not finite'),
    ({'left': (0, 0, 0.0)}, 'fx = 0'),
    ({'right': (0, 0, -5.0)}, 'expected positive focal lengths'),
    ({'left': (1, 1, 0.0)}, 'fy = 0'),
    ({'right': (0, 3, 0.0)}, 'Tx = 0: no baseline'),
    ({'right': (0, 3, -0.0)}, 'Tx = 0: no baseline'),
    ({'right': (0, 3, 100.0)}, 'are left and right swapped'),
])
def test_bad_projection_matrices_are_named(change, words):
    p = {side: np.array([[F, 0, CX, 0], [0, F, CY, 0], [0, 0, 1, 0]])
         for side in ('left', 'right')}
    p['right'][0, 3] = -F * BASELINE
    for side, (row, col, value) in change.items():
        p[side][row, col] = value
    with pytest.raises(CalibrationError, match=words.replace('(', r'\(')):
        StereoGeometry.from_projections(p['left'], p['right'])


def test_a_projection_matrix_needs_12_values():
    with pytest.raises(CalibrationError, match='has 9 values; expected 3x4'):
        StereoGeometry.from_projections(np.eye(3), np.zeros((3, 4)))


# --- depth and points against OpenCV -------------------------------------------------------------

@pytest.mark.parametrize('delta_cx, fy', [(0.0, F), (DELTA_CX, F), (DELTA_CX, 700.0)])
def test_kitti_depth_and_points_equal_opencv(reprojector, kitti_disparity, delta_cx, fy):
    geometry = kitti_geometry(delta_cx, fy)
    device_map = reprojector.upload(kitti_disparity, min_disparity=0.0)
    expected, valid = opencv_points(kitti_disparity, geometry, 0.0)
    assert valid.mean() > 0.2

    depth = reprojector.depth(device_map, geometry)
    assert depth.shape == kitti_disparity.shape and depth.dtype == np.float32
    np.testing.assert_allclose(depth[valid], expected[valid][:, 2], rtol=RTOL)
    assert np.isnan(depth[~valid]).all()

    cloud = reprojector.points(device_map, geometry, CloudLayout(use_color=False))
    points = cloud.points()
    assert points.shape == kitti_disparity.shape and not cloud.is_dense
    assert_points_close(points[valid], expected[valid])
    for name in 'xyz':
        assert np.isnan(points[name][~valid]).all()


def test_invalid_disparities_and_the_point_at_infinity(reprojector):
    """
    Invalid disparities have no depth; d == cx_l - cx_r is the point at infinity.

    Below min_disparity, NaN or inf: no depth (NaN); d == cx_l - cx_r: depth +inf (REP 117's 'too
    far') and no point; d < cx_l - cx_r: neither.
    """
    geometry = kitti_geometry(2.0)
    disparity = np.array([[-1.0, 0.5, np.nan, 2.0, 1.5, 1.0, 10.0, np.inf]], np.float32)
    device_map = reprojector.upload(disparity, min_disparity=1.0)
    depth = reprojector.depth(device_map, geometry)
    expected = np.array([np.nan, np.nan, np.nan, np.inf, np.nan, np.nan,
                         F * geometry.baseline / 8.0, np.nan], np.float32)
    np.testing.assert_allclose(depth[0], expected, rtol=1e-6)
    z = reprojector.points(device_map, geometry, CloudLayout(False)).points()['z'][0]
    assert np.isfinite(z).tolist() == [False] * 6 + [True, False]
    dense = reprojector.points(device_map, geometry, CloudLayout(False), dense=True)
    assert dense.width == 1 and dense.points()['z'][0, 0] == z[6]


def test_subsampled_map_is_the_half_scale_geometry(reprojector, kitti_disparity):
    """
    ELAS subsampling: pixel (i, j) holds the input disparity of pixel (2i, 2j).

    That is the geometry scaled by 0.5 applied to the halved disparities (OpenCV), and bit for bit
    the full-size cloud at those pixels, colours included.
    """
    geometry = kitti_geometry()
    rows, cols = kitti_disparity.shape[0] // 2, kitti_disparity.shape[1] // 2
    half = np.ascontiguousarray(kitti_disparity[:2 * rows:2, :2 * cols:2])
    expected, valid = opencv_points(half * np.float32(0.5), geometry.scaled(0.5), 0.0)
    device_map = reprojector.upload(half, 0.0, subsampled=True)
    depth = reprojector.depth(device_map, geometry)
    np.testing.assert_allclose(depth[valid], expected[valid][:, 2], rtol=RTOL)
    assert np.isnan(depth[~valid]).all()

    color = random_image('bgr8', *kitti_disparity.shape, np.random.default_rng(5))
    points = reprojector.points(device_map, geometry, color=color).points()
    assert points.shape == (rows, cols)
    assert_points_close(points[valid], expected[valid])
    full = reprojector.points(reprojector.upload(kitti_disparity, 0.0), geometry,
                              color=color).points()
    for name in ('x', 'y', 'z', 'rgb'):
        np.testing.assert_array_equal(points[name].view(np.uint32),
                                      full[name][:2 * rows:2, :2 * cols:2].view(np.uint32))


# --- PointCloud2 layouts -------------------------------------------------------------------------

@pytest.mark.parametrize('layout', LAYOUTS, ids=layout_id)
def test_layouts_are_stereo_image_procs(layout):
    """
    The layouts are stereo_image_proc's, padded or not.

    setPointCloud2FieldsByString(2, "xyz", "rgb") pads xyz and rgb to 16 bytes each;
    avoid_point_cloud_padding packs the float32 fields one after the other.
    """
    step, rgb = {(False, False): (16, None), (True, False): (32, 16),
                 (False, True): (12, None), (True, True): (16, 12)}[
        layout.use_color, layout.avoid_padding]
    assert layout.point_step == step and layout.rgb_offset == rgb
    expected = [('x', 0), ('y', 4), ('z', 8)] + ([('rgb', rgb)] if rgb else [])
    assert [(f.name, f.offset) for f in layout.fields] == expected
    assert all(f.datatype == 7 and f.count == 1 for f in layout.fields)  # FLOAT32
    assert layout.dtype.itemsize == step


@pytest.mark.parametrize('layout', LAYOUTS, ids=layout_id)
@pytest.mark.parametrize('height, width', [(1, 1), (23, 37), (8, 64), (65, 3)])
def test_organised_and_dense_clouds(reprojector, layout, height, width):
    """
    Organised and dense clouds at sizes that are not whole blocks of 64.

    The dense cloud is the organised one's valid points in image order, padding bytes are zero, the
    bytes fill a PointCloud2 as they are.
    """
    rng = np.random.default_rng(height * 1000 + width)
    disparity = rng.uniform(-3, 40, (height, width)).astype(np.float32)
    geometry = kitti_geometry()
    color = random_image('rgb8', height, width, rng)
    device_map = reprojector.upload(disparity, 0.0)
    organised = reprojector.points(device_map, geometry, layout, color=color)
    dense = reprojector.points(device_map, geometry, layout, dense=True, color=color)
    valid = (disparity >= 0) & (disparity > DELTA_CX)

    assert (organised.height, organised.width, organised.is_dense) == (height, width, False)
    assert organised.data.dtype == np.uint8
    assert organised.data.size == height * organised.row_step == height * width * layout.point_step
    points = organised.points()
    assert np.isnan(points['z'][~valid]).all() and np.isfinite(points['z'][valid]).all()
    if layout.use_color:  # every pixel has its colour, as in stereo_image_proc
        assert np.array_equal(points['rgb'].view(np.uint32), expected_rgb(color).view(np.uint32))
    words = organised.data.view(np.uint32).reshape(height * width, -1)
    used = {f.offset // 4 for f in layout.fields}
    assert not words[:, [w for w in range(words.shape[1]) if w not in used]].any()

    assert (dense.height, dense.width, dense.is_dense) == (1, int(valid.sum()), True)
    assert dense.row_step == dense.width * layout.point_step
    np.testing.assert_array_equal(dense.data.reshape(-1, layout.point_step),
                                  organised.data.reshape(-1, layout.point_step)[valid.reshape(-1)])


def test_dense_cloud_of_a_map_without_points_is_empty(reprojector):
    device_map = reprojector.upload(np.full((5, 70), -1, np.float32), 0.0)
    cloud = reprojector.points(device_map, kitti_geometry(), CloudLayout(False), dense=True)
    assert (cloud.height, cloud.width, cloud.data.size) == (1, 0, 0)
    assert cloud.points().shape == (1, 0)


def test_buffers_are_reused_from_frame_to_frame(reprojector):
    disparity = np.random.default_rng(2).uniform(0, 30, (20, 30)).astype(np.float32)
    color = random_image('mono8', 20, 30, np.random.default_rng(3))
    seen = []
    for _ in range(2):
        device_map = reprojector.upload(disparity, 0.0)
        reprojector.depth(device_map, kitti_geometry())
        reprojector.points(device_map, kitti_geometry(), dense=True, color=color)
        seen.append(reprojector.buffers.handles())
    assert seen[0] == seen[1]


# --- colours -------------------------------------------------------------------------------------

@pytest.mark.parametrize('encoding', COLOR_ENCODINGS)
def test_rgb_packing_is_bit_exact(reprojector, encoding):
    """
    Each encoding's rgb packing is bit-exact, on padded rows and in both byte orders.

    Mono grey replicated (mono16 as round(v / 257)), colour channels reordered, Bayer demosaiced as
    the gray decoder does it.
    """
    rng = np.random.default_rng(11)
    geometry = kitti_geometry()
    for height, width in ((2, 2), (17, 31)):
        device_map = reprojector.upload(np.full((height, width), 20, np.float32), 0.0)
        for big in (False, True):
            raw = random_image(encoding, height, width, rng, big, pad=3)
            for layout in (CloudLayout(True, False), CloudLayout(True, True)):
                rgb = reprojector.points(device_map, geometry, layout, color=raw).points()['rgb']
                np.testing.assert_array_equal(rgb.view(np.uint32),
                                              expected_rgb(raw).view(np.uint32),
                                              f'{encoding} {height}x{width} big={big}')


def test_unpack_rgb_inverts_the_packing():
    rgb = np.random.default_rng(4).integers(0, 256, (10, 3), dtype=np.uint8)
    np.testing.assert_array_equal(unpack_rgb(packed(rgb[:, 0], rgb[:, 1], rgb[:, 2])), rgb)


@pytest.mark.parametrize('encoding, size, words', [
    ('yuv422', (4, 6), 'yuv422 has no colour for a point cloud'),
    ('32FC1', (4, 6), '32FC1 has no colour'),
    ('bgr8', (4, 7), 'colour image is 7x4; the 6x4 disparity map needs 6x4'),
])
def test_colour_images_that_cannot_colour_the_cloud(reprojector, encoding, size, words):
    raw = random_image(encoding, *size, np.random.default_rng(1))
    device_map = reprojector.upload(np.zeros((4, 6), np.float32), 0.0)
    with pytest.raises(ImageFormatError, match=words):
        reprojector.points(device_map, kitti_geometry(), color=raw)


def test_use_color_needs_the_left_image(reprojector):
    device_map = reprojector.upload(np.zeros((4, 6), np.float32), 0.0)
    with pytest.raises(ImageFormatError, match='use_color needs the left image'):
        reprojector.points(device_map, kitti_geometry(), CloudLayout(use_color=True))


def test_subsampled_map_takes_the_colours_of_even_pixels(reprojector):
    rng = np.random.default_rng(6)
    bgr = rng.integers(0, 256, (9, 11, 3), dtype=np.uint8)  # odd sizes: the last row/column
    device_map = reprojector.upload(np.full((4, 5), 10, np.float32), 0.0, subsampled=True)
    rgb = reprojector.points(device_map, kitti_geometry(),
                             color=array_to_raw(bgr, 'bgr8')).points()['rgb']
    even = bgr[:8:2, :10:2]
    np.testing.assert_array_equal(rgb.view(np.uint32),
                                  packed(even[..., 2], even[..., 1], even[..., 0]).view(np.uint32))


def test_a_host_disparity_must_be_an_image(reprojector):
    with pytest.raises(ImageFormatError, match='non-empty HxW'):
        reprojector.upload(np.zeros(5, np.float32), 0.0)
