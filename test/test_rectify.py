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
Rectification: calibrations, maps, the remap kernel, the stereo gray path and the CLI.

Calibrations (CameraInfo fields, calibration YAML), maps equal to OpenCV's, the remap kernel
bit-exact with its NumPy reference and equal to cv2.remap, the gray path of a stereo matcher, and
`cl-vision rectify`.
"""
from cl_vision_nodes.camera.calibration import (CalibrationError, CameraCalibration,
                                                read_calibration_yaml)
from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.camera.rectify_maps import rectify_maps
from cl_vision_nodes.dataio.formats import read_pfm, write_pfm, write_png
from cl_vision_nodes.errors import DataFormatError, ImageFormatError, ParameterError
from cl_vision_nodes.imaging.encodings import (array_to_raw, raw_to_array, RawImage,
                                               to_gray_reference)
from cliutil import assert_one_line_error, cl_vision
import cv2
import numpy as np
from oracles.camera import remap_reference
import pyopencl as cl
import pytest
import yaml

pytestmark = pytest.mark.kernels


def rotation(axis: str, degrees: float) -> np.ndarray:
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    i, j = {'x': (1, 2), 'y': (0, 2), 'z': (0, 1)}[axis]
    r = np.eye(3)
    r[i, i] = r[j, j] = c
    r[i, j], r[j, i] = -s, s
    return r


# Realistic calibrations as CameraInfo fields (d, k, r, p row-major).
CAMERAS = {
    # KITTI raw 2011_09_26 camera 02 (calib_cam_to_cam.txt): K_02, D_02, R_rect_02, P_rect_02
    'plumb_bob': {
        'width': 1242, 'height': 375, 'distortion_model': 'plumb_bob', 'camera_name': 'kitti_02',
        'd': [-3.691481e-01, 1.968681e-01, 1.353473e-03, 5.677587e-04, -6.770705e-02],
        'k': [9.597910e+02, 0.0, 6.960217e+02, 0.0, 9.569251e+02, 2.241806e+02, 0.0, 0.0, 1.0],
        'r': [9.999758e-01, -5.267463e-03, -4.552439e-03, 5.251945e-03, 9.999804e-01,
              -3.413835e-03, 4.570332e-03, 3.389843e-03, 9.999838e-01],
        'p': [7.215377e+02, 0.0, 6.095593e+02, 4.485728e+01, 0.0, 7.215377e+02, 1.728540e+02,
              2.163791e-01, 0.0, 0.0, 1.0, 2.745884e-03]},
    # a wide-angle RGB-D colour camera (Azure Kinect-like 8-coefficient rational model), the
    # rectified image rotated slightly as one of a stereo pair
    'rational_polynomial': {
        'width': 1280, 'height': 720, 'distortion_model': 'rational_polynomial',
        'camera_name': 'rgbd',
        'd': [0.4683, -2.6027, 3.8e-4, -1.7e-4, 1.5376, 0.3502, -2.4341, 1.4687],
        'k': [612.3, 0.0, 638.1, 0.0, 611.9, 366.4, 0.0, 0.0, 1.0],
        'r': rotation('y', 1.5).ravel().tolist(),
        'p': [600.0, 0.0, 640.0, -36.0, 0.0, 600.0, 360.0, 0.0, 0.0, 0.0, 1.0, 0.0]},
    # a fisheye tracking camera (T265-like Kannala-Brandt), rectified to a narrower pinhole
    'equidistant': {
        'width': 848, 'height': 800, 'distortion_model': 'equidistant', 'camera_name': 'fisheye1',
        'd': [-0.00783, 0.04357, -0.04168, 0.00779],
        'k': [286.18, 0.0, 424.26, 0.0, 286.39, 401.75, 0.0, 0.0, 1.0],
        'r': rotation('x', 2.0).ravel().tolist(),
        'p': [180.0, 0.0, 424.0, 0.0, 0.0, 180.0, 400.0, 0.0, 0.0, 0.0, 1.0, 0.0]},
}
MODELS = tuple(CAMERAS)
INTERPOLATIONS = {'nearest': cv2.INTER_NEAREST, 'linear': cv2.INTER_LINEAR,
                  'cubic': cv2.INTER_CUBIC}
# Our remap against cv2.remap, in grey levels (mono16 in 257ths, 32FC1 in 1/40ths). OpenCV 4
# (4.5.4, 4.6) rounds float maps to 1/32 px (INTER_BITS 5) and weights 8-bit images in 15-bit
# fixed point: on the tests' textures it is up to 2.06 levels from ours (mean 0.2), on the KITTI
# frame's sharp edges up to 5 (mean 0.12). OpenCV 5 remaps with the maps as given: within 1 level
# of ours (mean below 0.0001). Ours equals its NumPy reference exactly, checked first.
OPENCV_REMAP_LEVELS = 2.1
OPENCV_REMAP_LEVELS_AT_EDGES = 5


def calibration(model: str, scale: float = 1.0) -> CameraCalibration:
    """CAMERAS[model], or the same camera at ``scale`` of its resolution (small kernel tests)."""
    fields = dict(CAMERAS[model])
    scaling = np.diag([scale, scale, 1.0])
    fields['width'] = round(fields['width'] * scale)
    fields['height'] = round(fields['height'] * scale)
    fields['k'] = (scaling @ np.reshape(fields['k'], (3, 3))).ravel().tolist()
    fields['p'] = (scaling @ np.reshape(fields['p'], (3, 4))).ravel().tolist()
    return CameraCalibration.from_fields(**fields)


def opencv_maps(cal: CameraCalibration) -> tuple[np.ndarray, np.ndarray]:
    size = (cal.width, cal.height)
    if cal.distortion_model == 'equidistant':
        return cv2.fisheye.initUndistortRectifyMap(cal.K, cal.D, cal.R, cal.P, size,
                                                   cv2.CV_32FC1)
    return cv2.initUndistortRectifyMap(cal.K, cal.D, cal.R, cal.P, size, cv2.CV_32FC1)


def calibration_yaml(fields: dict, **changes) -> str:
    """Return the YAML camera_calibration_parsers writes for CameraInfo ``fields``."""
    def matrix(rows: int, cols: int, data) -> dict:
        return {'rows': rows, 'cols': cols, 'data': [float(v) for v in data]}
    doc = {'image_width': fields['width'], 'image_height': fields['height'],
           'camera_name': fields['camera_name'], 'camera_matrix': matrix(3, 3, fields['k']),
           'distortion_model': fields['distortion_model'],
           'distortion_coefficients': matrix(1, len(fields['d']), fields['d']),
           'rectification_matrix': matrix(3, 3, fields['r']),
           'projection_matrix': matrix(3, 4, fields['p'])}
    doc.update(changes)
    return yaml.safe_dump({k: v for k, v in doc.items() if v is not None}, sort_keys=False)


def texture(height: int, width: int, channels: int, seed: int = 7) -> np.ndarray:
    """uint8 texture with detail at every scale (interpolation differences show up)."""
    rng = np.random.default_rng(seed)
    noise = rng.random((height, width, channels), dtype=np.float32)
    image = cv2.GaussianBlur(noise, (0, 0), 1.2).reshape(height, width, channels)
    image = (image - image.min()) / (image.max() - image.min())
    return np.round(image * 255).astype(np.uint8)


def sample_image(encoding: str, height: int, width: int) -> np.ndarray:
    """Return an image of ``encoding`` with the texture's values (16-bit and float scaled)."""
    channels = {'bgr8': 3, 'rgb8': 3, 'bgra8': 4, 'rgba8': 4}.get(encoding, 1)
    image = texture(height, width, channels)
    if channels == 1:
        image = image[:, :, 0]
    if encoding == 'mono16':
        return image.astype(np.uint16) * 257 + 17
    if encoding == '32FC1':
        return image.astype(np.float32) / np.float32(40.0)  # e.g. depth in metres, 0..6.4
    return image


def interior(cal: CameraCalibration, map_x: np.ndarray, map_y: np.ndarray) -> np.ndarray:
    """Rectified pixels whose 4x4 cubic neighbourhood lies inside the raw image."""
    return ((map_x >= 2) & (map_x <= cal.width - 3) & (map_y >= 2) & (map_y <= cal.height - 3))


@pytest.fixture(scope='module')
def rectifier(runtime):
    return Rectifier(runtime)


@pytest.fixture(scope='module')
def small_calibrations():
    """Return the three cameras at sizes that are no multiple of the work-group (16x8 or 16x4)."""
    return {'plumb_bob': calibration('plumb_bob', 0.2),            # 248x75
            'rational_polynomial': calibration('rational_polynomial', 0.15),  # 192x108
            'equidistant': calibration('equidistant', 0.15)}      # 127x120


# --- maps ------------------------------------------------------------------------------------

@pytest.mark.parametrize('model', MODELS)
def test_maps_equal_opencv(model):
    cal = calibration(model)
    ours, theirs = rectify_maps(cal), opencv_maps(cal)
    for mine, reference in zip(ours, theirs):
        assert mine.dtype == np.float32 and mine.shape == (cal.height, cal.width)
        assert np.isfinite(mine).all() and np.isfinite(reference).all()
        assert np.abs(mine - reference).max() < 0.01
    # the maps really undistort: a strong model moves pixels far from where P would put them
    assert np.abs(ours[0] - np.arange(cal.width)).max() > 5


def test_fisheye_rays_behind_the_camera_map_to_infinity_as_opencv():
    fields = dict(CAMERAS['equidistant'], r=rotation('y', 100.0).ravel().tolist())
    cal = CameraCalibration.from_fields(**fields)
    ours, theirs = rectify_maps(cal), opencv_maps(cal)
    for mine, reference in zip(ours, theirs):
        assert (~np.isfinite(reference)).any()
        # the sign of an infinity follows x or y of the ray, which is rounding noise on the
        # row and column through the principal point; either sign is outside the image
        np.testing.assert_array_equal(np.isinf(mine), ~np.isfinite(reference))
        finite = np.isfinite(reference)
        assert np.abs(mine[finite] - reference[finite]).max() < 0.01


def test_no_distortion_identity_maps_give_the_image_back(rectifier):
    k = [50.0, 0.0, 31.5, 0.0, 50.0, 20.0, 0.0, 0.0, 1.0]
    cal = CameraCalibration.from_fields(64, 41, '', [], k, np.eye(3).ravel(),
                                        [50.0, 0.0, 31.5, 0.0, 0.0, 50.0, 20.0, 0.0, 0, 0, 1, 0])
    assert cal.distortion_model == 'none' and cal.D.size == 0
    map_x, map_y = rectify_maps(cal)
    np.testing.assert_allclose(map_x, np.arange(64)[None, :].repeat(41, 0), atol=1e-4)
    np.testing.assert_allclose(map_y, np.arange(41)[:, None].repeat(64, 1), atol=1e-4)
    rectifier.set_calibration(cal)
    image = texture(41, 64, 3)
    for interpolation in INTERPOLATIONS:
        out = raw_to_array(rectifier.rectify(array_to_raw(image, 'bgr8'), interpolation))
        np.testing.assert_array_equal(out, image)


# --- calibrations ----------------------------------------------------------------------------

@pytest.mark.parametrize('model', MODELS)
def test_yaml_reads_what_camera_calibration_writes(tmp_path, model):
    path = tmp_path / 'camera.yaml'
    path.write_text(calibration_yaml(CAMERAS[model]))
    cal = read_calibration_yaml(path)
    assert cal == calibration(model)
    assert cal.camera_name == CAMERAS[model]['camera_name']
    assert cal.K.shape == (3, 3) and cal.R.shape == (3, 3) and cal.P.shape == (3, 4)
    assert not cal.K.flags.writeable


def test_yaml_without_distortion_model_is_plumb_bob_and_short_d_is_padded(tmp_path):
    fields = dict(CAMERAS['plumb_bob'], d=[-0.3, 0.1, 0.0, 0.001])
    path = tmp_path / 'old.yaml'
    path.write_text(calibration_yaml(fields, distortion_model=None))
    cal = read_calibration_yaml(path)
    assert cal.distortion_model == 'plumb_bob'
    np.testing.assert_array_equal(cal.D, [-0.3, 0.1, 0.0, 0.001, 0.0])


def bad_yaml(key, value):
    return lambda: calibration_yaml(CAMERAS['plumb_bob'], **{key: value})


@pytest.mark.parametrize('text, words', [
    (lambda: 'image_width: [1, 2\n', 'not valid YAML at line'),
    (lambda: '- just\n- a list\n', 'expected a YAML mapping'),
    (lambda: 'image_width: 640\nimage_height: 480\n', 'missing camera_matrix'),
    (bad_yaml('camera_matrix', {'rows': 3, 'cols': 3, 'data': [1.0, 2.0]}),
     'camera_matrix is 3x3 but has 2 values'),
    (bad_yaml('projection_matrix', {'rows': 3, 'cols': 3, 'data': [1.0] * 9}),
     'projection_matrix is 3x3; expected 3x4'),
    (bad_yaml('camera_matrix', {'rows': 3, 'cols': 3, 'data': ['a'] * 9}),
     'camera_matrix data must be numbers'),
    (bad_yaml('camera_matrix', [1, 2, 3]), 'camera_matrix must be a mapping'),
    (bad_yaml('distortion_model', 'kannala_brandt'), 'unsupported distortion model'),
    (bad_yaml('distortion_model', 3), 'distortion_model must be a string'),
    (bad_yaml('camera_matrix', {'rows': 3, 'cols': 3, 'data': [0.0] * 9}),
     'the camera is not calibrated'),
    (bad_yaml('rectification_matrix', {'rows': 3, 'cols': 3, 'data': [0.0] * 9}),
     'is singular'),
    (bad_yaml('image_width', -5), 'expected positive integers'),
    (bad_yaml('image_height', 'tall'), 'expected positive integers'),
    (lambda: calibration_yaml(CAMERAS['plumb_bob']).replace('- 0.0\n', '- .nan\n', 1),
     'non-finite'),
    (bad_yaml('distortion_coefficients', {'rows': 1, 'cols': 8, 'data': [0.1] * 8}),
     'distortion model plumb_bob uses 5 coefficients'),
])
def test_yaml_errors_are_one_line_naming_the_file(tmp_path, text, words):
    path = tmp_path / 'bad.yaml'
    path.write_text(text())
    with pytest.raises(DataFormatError) as caught:
        read_calibration_yaml(path)
    message = str(caught.value)
    assert words in message and message.startswith(str(path)) and '\n' not in message


def test_missing_yaml_file(tmp_path):
    with pytest.raises(DataFormatError, match='no such file'):
        read_calibration_yaml(tmp_path / 'absent.yaml')


def test_fields_validation():
    fields = CAMERAS['equidistant']
    with pytest.raises(CalibrationError, match='K has 8 values'):
        CameraCalibration.from_fields(**dict(fields, k=fields['k'][:8]))
    with pytest.raises(CalibrationError, match="P has fx'=0"):
        CameraCalibration.from_fields(**dict(fields, p=[0.0] * 12))
    with pytest.raises(CalibrationError, match='equidistant uses 4 coefficients'):
        CameraCalibration.from_fields(**dict(fields, d=fields['d'] + [0.5]))
    with pytest.raises(CalibrationError, match='D has non-finite'):
        CameraCalibration.from_fields(**dict(fields, d=[np.inf, 0, 0, 0]))
    trailing_zeros = CameraCalibration.from_fields(**dict(fields, d=fields['d'] + [0.0] * 4))
    assert trailing_zeros == calibration('equidistant')


# --- the remap kernel ------------------------------------------------------------------------

@pytest.mark.parametrize('model', MODELS)
@pytest.mark.parametrize('interpolation', INTERPOLATIONS)
@pytest.mark.parametrize('encoding', ['mono8', 'bgr8', 'rgba8', 'mono16', '32FC1'])
def test_rectified_images_equal_reference_and_opencv(rectifier, small_calibrations, model,
                                                     interpolation, encoding):
    cal = small_calibrations[model]
    rectifier.set_calibration(cal)
    map_x, map_y = rectifier.maps
    image = sample_image(encoding, cal.height, cal.width)
    out = rectifier.rectify(array_to_raw(image, encoding), interpolation)
    assert (out.encoding, out.width, out.height) == (encoding, cal.width, cal.height)
    result = raw_to_array(out)
    border = np.nan if encoding == '32FC1' else 0.0  # image_geometry's border values
    np.testing.assert_array_equal(result, remap_reference(image, map_x, map_y, interpolation,
                                                          border))
    expected = cv2.remap(image, map_x, map_y, INTERPOLATIONS[interpolation],
                         borderMode=cv2.BORDER_CONSTANT, borderValue=(border,) * 4)
    if encoding == '32FC1':
        # NaN where OpenCV puts it; its cubic for float images (Intel IPP's) also spreads the
        # border into some pixels whose 4x4 taps are all inside, so there ours are a subset
        nan, expected_nan = np.isnan(result), np.isnan(expected)
        # OpenCV 4 rounds the maps to 1/32 px (OPENCV_REMAP_LEVELS): within 1/64 px of a whole
        # pixel, a linear or cubic footprint may move one pixel, over the border or back. There
        # it puts NaN otherwise than ours (1 to 4 pixels of these images; OpenCV 5 nowhere).
        judged = (np.abs(map_x - np.round(map_x)) > 1 / 64) & \
            (np.abs(map_y - np.round(map_y)) > 1 / 64) if interpolation != 'nearest' else True
        if interpolation == 'cubic':
            assert not (nan & ~expected_nan & judged).any()
        else:
            np.testing.assert_array_equal(nan & judged, expected_nan & judged)
        expected = cv2.remap(image, map_x, map_y, INTERPOLATIONS[interpolation],
                             borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    inside = interior(cal, map_x, map_y)
    assert inside.mean() > 0.5
    difference = np.abs(result.astype(np.float64) - expected.astype(np.float64))[inside]
    levels = 257.0 if encoding == 'mono16' else 1 / 40 if encoding == '32FC1' else 1.0
    assert difference.mean() / levels < 0.5
    assert difference.max() / levels <= OPENCV_REMAP_LEVELS


def test_full_size_kitti_frame_equals_opencv(rectifier, shared_data):
    """A real 1242x375 colour frame with the KITTI calibration, every interpolation."""
    image = cv2.imread(str(shared_data('stereo', 'kitti2015_000001', 'image_2_000001_10.png')))
    cal = calibration('plumb_bob')
    assert image.shape == (cal.height, cal.width, 3)
    rectifier.set_calibration(cal)
    map_x, map_y = rectifier.maps
    inside = interior(cal, map_x, map_y)
    for interpolation, flag in INTERPOLATIONS.items():
        result = raw_to_array(rectifier.rectify(array_to_raw(image, 'bgr8'), interpolation))
        expected = cv2.remap(image, map_x, map_y, flag, borderMode=cv2.BORDER_CONSTANT)
        difference = np.abs(result.astype(np.int16) - expected)
        assert difference[inside].mean() < 0.5, interpolation
        assert difference.max() <= OPENCV_REMAP_LEVELS_AT_EDGES, interpolation


def test_padded_big_endian_rows(rectifier, small_calibrations):
    cal = small_calibrations['rational_polynomial']
    rectifier.set_calibration(cal)
    image = sample_image('mono16', cal.height, cal.width)
    step = cal.width * 2 + 6
    data = np.zeros((cal.height, step), np.uint8)
    data[:, :cal.width * 2] = image.astype('>u2').view(np.uint8).reshape(cal.height, -1)
    raw = RawImage('mono16', cal.height, cal.width, step, True, data.ravel())
    out = rectifier.rectify(raw, 'cubic')
    assert not out.is_bigendian and out.step == cal.width * 2
    np.testing.assert_array_equal(raw_to_array(out),
                                  remap_reference(image, *rectifier.maps, 'cubic'))


@pytest.mark.parametrize('encoding', ['bayer_rggb8', 'yuv422'])
def test_bayer_and_yuv_are_rectified_as_their_gray(rectifier, small_calibrations, encoding):
    cal = small_calibrations['plumb_bob']
    rectifier.set_calibration(cal)
    shape = (cal.height, cal.width) + ((2,) if encoding == 'yuv422' else ())
    raw = array_to_raw(texture(cal.height, cal.width, shape[-1] if len(shape) == 3 else 1)
                       .reshape(shape), encoding)
    out = rectifier.rectify(raw, 'linear')
    assert out.encoding == 'mono8'
    gray = to_gray_reference(raw).astype(np.uint8)  # integer-valued for these encodings
    np.testing.assert_array_equal(raw_to_array(out),
                                  remap_reference(gray, *rectifier.maps, 'linear'))


@pytest.mark.parametrize('interpolation', INTERPOLATIONS)
def test_gray_path_into_a_callers_device_buffer(runtime, rectifier, small_calibrations,
                                                interpolation):
    """
    What a stereo matcher does: rectify into its own float input buffer, nothing downloaded.

    A raw image (or a decoded gray already on the device) is rectified into the matcher's own
    buffer.
    """
    cal = small_calibrations['equidistant']
    rectifier.set_calibration(cal)
    image = sample_image('bgr8', cal.height, cal.width)
    raw = array_to_raw(image, 'bgr8')
    target = cl.Buffer(runtime.context, cl.mem_flags.READ_WRITE, 4 * cal.width * cal.height)
    assert rectifier.rectify_gray(raw, target, interpolation) is target
    expected = remap_reference(to_gray_reference(raw), *rectifier.maps, interpolation)
    download = rectifier.images.download
    np.testing.assert_array_equal(download(target, (cal.height, cal.width), np.float32),
                                  expected)
    # the same from a device gray buffer: another DeviceImages' decoded frame
    decoded = rectifier.images.upload_gray(raw, 'elsewhere')
    own = rectifier.rectify_gray(decoded, interpolation=interpolation)
    np.testing.assert_array_equal(download(own, (cal.height, cal.width), np.float32), expected)
    # rounded as ELAS rounds its input, it is the 8-bit rectification of the gray image
    gray8 = to_gray_reference(raw).astype(np.uint8)
    np.testing.assert_array_equal(np.rint(expected).astype(np.uint8),
                                  remap_reference(gray8, *rectifier.maps, interpolation))
    with pytest.raises(ValueError, match='in place'):
        rectifier.rectify_gray(own, own)


def test_maps_are_uploaded_once_per_calibration_value(rectifier, small_calibrations):
    cal = small_calibrations['plumb_bob']
    rectifier.set_calibration(cal)
    handles = rectifier.buffers.handles()
    same_numbers = CameraCalibration.from_fields(
        cal.width, cal.height, cal.distortion_model, list(cal.D), cal.K.ravel().tolist(),
        cal.R.ravel().tolist(), cal.P.ravel().tolist())
    assert same_numbers is not cal and not rectifier.set_calibration(same_numbers)
    image = array_to_raw(sample_image('mono8', cal.height, cal.width), 'mono8')
    first = raw_to_array(rectifier.rectify(image))
    changed = CameraCalibration.from_fields(
        cal.width, cal.height, cal.distortion_model, list(cal.D * 0.5), cal.K.ravel().tolist(),
        cal.R.ravel().tolist(), cal.P.ravel().tolist())
    assert rectifier.set_calibration(changed)
    assert not np.array_equal(raw_to_array(rectifier.rectify(image)), first)
    after = rectifier.buffers.handles()
    assert all(after[role] == handles[role] for role in ('map_x', 'map_y'))  # same size: reused


def test_bad_images_and_settings(runtime, small_calibrations):
    fresh = Rectifier(runtime)
    cal = small_calibrations['plumb_bob']
    image = array_to_raw(sample_image('mono8', cal.height, cal.width), 'mono8')
    with pytest.raises(CalibrationError, match='no calibration yet'):
        fresh.rectify(image)
    fresh.set_calibration(cal)
    with pytest.raises(ParameterError, match="'area' is not one of nearest, linear, cubic"):
        fresh.rectify(image, 'area')
    small = array_to_raw(sample_image('mono8', cal.height - 1, cal.width), 'mono8')
    with pytest.raises(ImageFormatError, match=f'image is {cal.width}x{cal.height - 1} but'):
        fresh.rectify(small)
    flow = array_to_raw(np.zeros((cal.height, cal.width, 2), np.float32), '32FC2')
    with pytest.raises(ImageFormatError, match='two-channel field'):
        fresh.rectify(flow)


# --- the command line ------------------------------------------------------------------------

@pytest.fixture(scope='module')
def cli_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp('rectify_cli')
    fields = dict(CAMERAS['plumb_bob'])
    cal = calibration('plumb_bob', 0.2)
    fields.update(width=cal.width, height=cal.height, k=cal.K.ravel().tolist(),
                  p=cal.P.ravel().tolist())
    (folder / 'info.yaml').write_text(calibration_yaml(fields))
    (folder / 'broken.yaml').write_text(calibration_yaml(fields, projection_matrix=None))
    write_png(folder / 'color.png', sample_image('bgr8', cal.height, cal.width))
    write_png(folder / 'gray.png', sample_image('mono8', cal.height, cal.width))
    write_png(folder / 'small.png', sample_image('mono8', 20, 30))
    write_pfm(folder / 'depth.pfm', sample_image('32FC1', cal.height, cal.width))
    (folder / 'not_an_image.png').write_text('hello')
    return folder, cal


@pytest.mark.parametrize('name, interpolation', [('color.png', 'cubic'), ('gray.png', 'linear'),
                                                 ('depth.pfm', 'nearest')])
def test_cli_rectifies_an_image_file(cli_files, name, interpolation):
    folder, cal = cli_files
    suffix = '.pfm' if name.endswith('.pfm') else '.png'
    out = folder / f'rect_{name}'
    result = cl_vision('rectify', str(folder / name), '--camera-info', str(folder / 'info.yaml'),
                       '--out', str(out), '--interpolation', interpolation)
    assert result.returncode == 0, result.stderr
    assert 'kitti_02' in result.stdout and interpolation in result.stdout
    map_x, map_y = rectify_maps(cal)
    if suffix == '.pfm':
        image, written = read_pfm(folder / name), read_pfm(out)
        expected = remap_reference(image, map_x, map_y, interpolation, np.nan)
        np.testing.assert_array_equal(written, expected)
    else:
        image = cv2.imread(str(folder / name), cv2.IMREAD_UNCHANGED)
        written = cv2.imread(str(out), cv2.IMREAD_UNCHANGED)
        assert written.shape == image.shape  # gray stays gray, colour stays colour
        np.testing.assert_array_equal(written,
                                      remap_reference(image, map_x, map_y, interpolation))


@pytest.mark.parametrize('args, words', [
    (['missing.png', '--camera-info', 'info.yaml', '--out', 'o.png'], 'missing.png: no such'),
    (['not_an_image.png', '--camera-info', 'info.yaml', '--out', 'o.png'], 'not an image'),
    (['gray.png', '--camera-info', 'missing.yaml', '--out', 'o.png'], 'missing.yaml: no such'),
    (['gray.png', '--camera-info', 'broken.yaml', '--out', 'o.png'],
     'missing projection_matrix'),
    (['small.png', '--camera-info', 'info.yaml', '--out', 'o.png'], 'image is 30x20 but'),
    (['gray.png', '--camera-info', 'info.yaml', '--out', 'o.pfm'], 'written as .png or .npy'),
    (['depth.pfm', '--camera-info', 'info.yaml', '--out', 'o.png'], 'written as .pfm or .npy'),
    (['gray.png', '--camera-info', 'info.yaml', '--out', 'o.png', '--interpolation', 'area'],
     'invalid choice'),
    (['gray.png', '--camera-info', 'info.yaml', '--out', 'o.png', '--param',
      'interpolation=area'], "'area' is not one of"),
    (['gray.png', '--out', 'o.png'], 'required: --camera-info'),
])
def test_cli_bad_input_one_line_exit_2(cli_files, args, words):
    folder, _ = cli_files
    args = [str(folder / a) if a.endswith(('.png', '.pfm', '.yaml')) else a for a in args]
    assert_one_line_error(cl_vision('rectify', *args), words)
