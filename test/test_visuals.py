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
The visual topics drawn on the device against their host references.

Flow colour wheel (flow_to_color), disparity jet (disparity_to_color) and keypoint overlay
(draw_keypoints), on sizes that are not multiples of any work-group.
"""
from __future__ import annotations

from cl_vision_nodes.dataio.synthetic import stereo_pair, texture
from cl_vision_nodes.elas.colormap import color_range, disparity_to_color, DisparityColorizer, JET
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import ImageFormatError, ParameterError
from cl_vision_nodes.flow.colorwheel import flow_to_color, FlowColorizer
from cl_vision_nodes.surf.draw import (draw_keypoints, KeypointPainter, NEGATIVE_LAPLACIAN,
                                       POSITIVE_LAPLACIAN)
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.keypoints import Keypoints, KP_FIELDS, RECORD_FIELDS
import cv2
import numpy as np
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

SIZES = [(23, 37), (479, 641)]
"""(height, width): a few work-groups and a VGA-like frame, neither a multiple of a group."""


def device(runtime, array: np.ndarray) -> cl.Buffer:
    """Return a device copy of ``array``."""
    return cl.Buffer(runtime.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.ascontiguousarray(array))


def grey_levels_apart(got: np.ndarray, expected: np.ndarray) -> int:
    """Return the largest per-channel difference of two bgr8 pictures of the same shape."""
    assert got.shape == expected.shape and got.dtype == np.uint8
    return int(np.abs(got.astype(np.int16) - expected.astype(np.int16)).max())


# ---- flow colour wheel ------------------------------------------------------------------------

@pytest.fixture(scope='module')
def colorizer(runtime) -> FlowColorizer:
    return FlowColorizer(runtime)


def random_flow(height: int, width: int, seed: int) -> np.ndarray:
    """Flow of a few px in every direction, with NaN and inf (unknown) in u or v."""
    rng = np.random.default_rng(seed)
    flow = rng.normal(0.0, 3.0, (height, width, 2)).astype(np.float32)
    flow[rng.random((height, width)) < 0.1, 0] = np.nan
    flow[rng.random((height, width)) < 0.05, 1] = np.nan
    flow[rng.random((height, width)) < 0.01, 1] = np.inf
    return flow


@pytest.mark.parametrize('height, width', SIZES)
@pytest.mark.parametrize('max_flow', [0.0, -1.0, float('nan'), 2.5, 40.0])
def test_flow_wheel_is_flow_to_color(runtime, colorizer, height, width, max_flow):
    """Within one grey level (float32 against float64), fixed and frame scale (<= 0, NaN)."""
    flow = random_flow(height, width, seed=height + int(np.nan_to_num(max_flow)))
    got = colorizer.draw(device(runtime, flow), height, width, max_flow)
    assert grey_levels_apart(got, flow_to_color(flow, max_flow)) <= 1
    assert (got[~np.isfinite(flow).all(axis=2)] == 0).all()


def test_flow_wheel_scale_is_the_frame_maximum(runtime, colorizer):
    """
    The largest finite magnitude, reduced on the device, scales the frame.

    The picture is that of flow_to_color with that maximum given; a larger outlier elsewhere is
    unknown (NaN v) and must not count.
    """
    flow = random_flow(31, 45, seed=7)
    flow[20, 30] = (9.0, -12.0)  # magnitude 15, the largest
    flow[3, 4] = (1000.0, np.nan)
    got = colorizer.draw(device(runtime, flow), 31, 45, 0.0)
    assert grey_levels_apart(got, flow_to_color(flow, 15.0)) <= 1
    assert grey_levels_apart(got, flow_to_color(flow, 14.0)) > 1


@pytest.mark.parametrize('fill, expected', [(np.nan, 0), (0.0, 255)])
def test_flow_wheel_without_motion(runtime, colorizer, fill, expected):
    """All unknown: black; all zero (largest magnitude 0, scale 1): white."""
    flow = np.full((9, 70, 2), fill, np.float32)
    got = colorizer.draw(device(runtime, flow), 9, 70, 0.0)
    assert (got == expected).all()
    assert (flow_to_color(flow) == expected).all()


def test_flow_wheel_into_a_message_buffer(runtime, colorizer):
    """``out`` is filled in place: a view into a bytes buffer after a header, as a node passes."""
    flow = random_flow(23, 37, seed=3)
    message = bytearray(16 + 23 * 37 * 3)
    view = np.frombuffer(message, np.uint8)[16:]
    got = colorizer.draw(device(runtime, flow), 23, 37, 2.0, out=view)
    assert got.shape == (23, 37, 3) and np.shares_memory(got, view)
    assert bytes(message[:16]) == bytes(16)
    np.testing.assert_array_equal(np.frombuffer(message, np.uint8)[16:].reshape(23, 37, 3),
                                  colorizer.draw(device(runtime, flow), 23, 37, 2.0))


@pytest.mark.parametrize('out', [
    np.zeros(23 * 37 * 3 - 1, np.uint8), np.zeros(23 * 37 * 3, np.int16),
    np.zeros((23, 37 * 2, 3), np.uint8)[:, ::2], np.frombuffer(bytes(23 * 37 * 3), np.uint8)])
def test_bad_out_is_refused(runtime, colorizer, out):
    """Too small, not bytes, strided or read-only: an ImageFormatError naming the need."""
    flow = device(runtime, random_flow(23, 37, seed=1))
    with pytest.raises(ImageFormatError, match='writable C-contiguous uint8'):
        colorizer.draw(flow, 23, 37, 1.0, out=out)


def test_too_small_device_input_is_refused(runtime, colorizer):
    flow = device(runtime, random_flow(23, 37, seed=1))
    with pytest.raises(ImageFormatError, match='flow: the device buffer holds'):
        colorizer.draw(flow, 24, 37, 1.0)


# ---- disparity colour map ---------------------------------------------------------------------

@pytest.fixture(scope='module')
def jet(runtime) -> DisparityColorizer:
    return DisparityColorizer(runtime)


def random_disparity(height: int, width: int, seed: int, low: float = 3.0,
                     high: float = 61.7) -> np.ndarray:
    """Disparities in [low, high) with invalid pixels: -1 (the matcher's), NaN and inf."""
    rng = np.random.default_rng(seed)
    disparity = rng.uniform(low, high, (height, width)).astype(np.float32)
    disparity[rng.random((height, width)) < 0.2] = -1.0
    disparity[rng.random((height, width)) < 0.02] = np.nan
    disparity[rng.random((height, width)) < 0.01] = np.inf
    return disparity


def valid_pixels(disparity: np.ndarray, invalid_below: float) -> np.ndarray:
    return np.isfinite(disparity) & (disparity >= invalid_below)


@pytest.mark.parametrize('height, width', SIZES)
@pytest.mark.parametrize('invalid_below', [0.0, -4.5])
def test_jet_follows_the_data(runtime, jet, height, width, invalid_below):
    """
    No range: the frame's smallest..largest valid disparity, reduced on the device.

    Negative disparities above invalid_below are valid (the device orders floats of both signs).
    """
    disparity = random_disparity(height, width, seed=width, low=-4.0)
    valid = valid_pixels(disparity, invalid_below)
    low, high = float(disparity[valid].min()), float(disparity[valid].max())
    got = jet.draw(device(runtime, disparity), height, width, invalid_below, None)
    expected = disparity_to_color(np.where(valid, disparity, np.nan), low, high)
    assert grey_levels_apart(got, expected) == 0
    assert (got[~valid] == 0).all()


@pytest.mark.parametrize('height, width', SIZES)
@pytest.mark.parametrize('value_range', [(10.0, 50.0), (0.0, 255.0), (20.25, 20.25),
                                         (30.0, 12.0)])
def test_jet_over_a_fixed_range(runtime, jet, height, width, value_range):
    """
    A given range: valid disparities outside it take the nearest end colour.

    Equal or inverted ends are a degenerate range (the reference's 1e-6 px), not a division by 0.
    """
    disparity = random_disparity(height, width, seed=height)
    low, high = value_range
    valid = valid_pixels(disparity, 0.0)
    got = jet.draw(device(runtime, disparity), height, width, 0.0, value_range)
    expected = disparity_to_color(np.where(valid, np.maximum(disparity, low), np.nan), low, high)
    assert grey_levels_apart(got, expected) == 0


def test_jet_levels_fall_where_the_reference_puts_them(runtime, jet):
    """
    Ranges from 1e-7 to 300 px at every offset: the same picture, pixel for pixel.

    The device rounds 255 / (high - low) once, as the host's double division; a float division
    on the float difference is one jet step (up to 5 grey levels) off on some of these frames.
    """
    rng = np.random.default_rng(11)
    for _ in range(300):
        low = rng.uniform(0.0, 300.0)
        disparity = rng.uniform(low, low + 10.0 ** rng.uniform(-7, 2.5), (23, 37))
        disparity = disparity.astype(np.float32)
        got = jet.draw(device(runtime, disparity), 23, 37, 0.0, None)
        expected = disparity_to_color(disparity, float(disparity.min()),
                                      float(disparity.max()))
        assert grey_levels_apart(got, expected) == 0


@pytest.mark.parametrize('value', [17.5, -1.0])
def test_jet_of_one_disparity_or_none(runtime, jet, value):
    """One valid disparity: the first jet colour everywhere; none valid: all black."""
    disparity = np.full((23, 37), value, np.float32)
    got = jet.draw(device(runtime, disparity), 23, 37, 0.0, None)
    assert (got == (JET[0] if value >= 0 else 0)).all()


def test_jet_of_the_matcher_output(runtime, jet):
    """ElasMatcher.last_output drawn where it lies, invalid below disp_min, over its own range."""
    sample = stereo_pair(96, 128, seed=4, max_disparity=20.0)
    matcher = ElasMatcher(runtime, {'disp_max': 32, 'disp_min': 2})
    disparity = matcher.compute_gray(sample.left, sample.right)
    valid = valid_pixels(disparity, 2.0)
    assert valid.mean() > 0.5
    got = jet.draw(matcher.last_output, 96, 128, 2.0, None)
    expected = disparity_to_color(disparity, float(disparity[valid].min()),
                                  float(disparity[valid].max()))
    assert grey_levels_apart(got, expected) == 0


def test_jet_table_is_opencv_jet():
    levels = np.arange(256, dtype=np.uint8)[None]
    np.testing.assert_array_equal(JET, cv2.applyColorMap(levels, cv2.COLORMAP_JET)[0])


@pytest.mark.parametrize('low, high, expected', [
    (0.0, 0.0, None), (10.0, 60.0, (10.0, 60.0)), (0.0, 60.0, (0.0, 60.0)),
    (60.0, 10.0, None), (25.0, 25.0, None)])
def test_color_range_of_the_node_parameters(low, high, expected):
    """color_max <= color_min (the defaults 0, 0) follows the data, else the fixed range."""
    values = ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), {'color_min': low, 'color_max': high})
    assert color_range(values) == expected


def test_color_range_defaults_follow_the_data():
    assert color_range(ELAS_SCHEMA.defaults()) is None


@pytest.mark.parametrize('name, value', [('color_min', -1.0), ('color_max', 512.0),
                                         ('color_max', float('nan')), ('color_min', 'red')])
def test_color_range_parameters_are_validated(name, value):
    with pytest.raises(ParameterError, match=name):
        ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), {name: value})


# ---- keypoint overlay -------------------------------------------------------------------------

@pytest.fixture(scope='module')
def painter(runtime) -> KeypointPainter:
    return KeypointPainter(runtime)


def colour_of(laplacian: float) -> tuple[int, int, int]:
    return POSITIVE_LAPLACIAN if laplacian > 0 else NEGATIVE_LAPLACIAN


def gray_picture(gray: np.ndarray) -> np.ndarray:
    """Return the host reference's bgr8 picture of a float gray frame, before any keypoint."""
    return cv2.cvtColor(np.clip(gray, 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)


def records_of(rows: list[dict[str, float]], descriptor_length: int = 64) -> np.ndarray:
    """Device keypoint records (RECORD_FIELDS, then a descriptor of noise) from field values."""
    rng = np.random.default_rng(len(rows))
    records = rng.normal(size=(len(rows), KP_FIELDS + descriptor_length)).astype(np.float32)
    for record, row in zip(records, rows):
        record[:KP_FIELDS] = [row.get(name, 0.0) for name in RECORD_FIELDS]
    return records


def grid_keypoints(height: int, width: int, cell: int, seed: int) -> list[dict[str, float]]:
    """One keypoint per cell, its circle within the cell; every fifth one not valid."""
    rng = np.random.default_rng(seed)
    rows = []
    for cy in range(cell // 2, height - cell // 2, cell):
        for cx in range(cell // 2, width - cell // 2, cell):
            rows.append({'x': cx + rng.uniform(-2, 2), 'y': cy + rng.uniform(-2, 2),
                         'size': rng.uniform(1.0, cell - 8), 'angle': rng.uniform(0, 360),
                         'laplacian': float(rng.choice([-1, 0, 1])),
                         'valid': float(len(rows) % 5 != 4)})
    return rows


def assert_circles_drawn(picture: np.ndarray, keypoints: Keypoints, exact_colour: bool) -> None:
    """
    Every keypoint's circle and radius tip carry its colour (or a keypoint colour).

    Within one pixel: 64 samples around the circle of radius max(round(size / 2), 1) and the tip
    of the radius at the angle, each looked for in its 3x3 neighbourhood.
    """
    height, width = picture.shape[:2]
    colours = {POSITIVE_LAPLACIAN, NEGATIVE_LAPLACIAN}
    theta = np.linspace(0.0, 2 * np.pi, 64, endpoint=False)
    for x, y, size, angle, sign in zip(keypoints.x, keypoints.y, keypoints.size,
                                       keypoints.angle, keypoints.laplacian):
        radius = max(round(size / 2), 1)
        tip = (x + size / 2 * np.cos(np.radians(angle)), y + size / 2 * np.sin(np.radians(angle)))
        points = [(round(x) + radius * np.cos(t), round(y) + radius * np.sin(t)) for t in theta]
        wanted = {colour_of(sign)} if exact_colour else colours
        for px, py in [*points, tip]:
            px, py = round(px), round(py)
            if not (0 <= px < width and 0 <= py < height):
                continue
            around = picture[max(py - 1, 0):py + 2, max(px - 1, 0):px + 2].reshape(-1, 3)
            assert {tuple(int(c) for c in pixel) for pixel in around} & wanted, \
                f'keypoint at ({x:.1f}, {y:.1f}) size {size:.1f}: nothing drawn at ({px}, {py})'


def assert_only_near_keypoints(picture: np.ndarray, gray: np.ndarray,
                               keypoints: Keypoints) -> None:
    """Pixels farther than radius + 2 from every keypoint's centre are the gray picture."""
    height, width = gray.shape
    near = np.zeros((height, width), bool)
    for kx, ky, size in zip(keypoints.x, keypoints.y, keypoints.size):
        reach = max(round(size / 2), 1) + 2
        x0, x1 = max(int(kx - reach), 0), min(int(kx + reach) + 2, width)
        y0, y1 = max(int(ky - reach), 0), min(int(ky + reach) + 2, height)
        y, x = np.mgrid[y0:y1, x0:x1]
        near[y0:y1, x0:x1] |= np.hypot(x - kx, y - ky) <= reach
    np.testing.assert_array_equal(picture[~near], gray_picture(gray)[~near])


def test_keypoints_on_a_grid(runtime, painter):
    """
    Separate keypoints of both signs: each circle and radius in its colour, the rest gray.

    Keypoints not valid are not drawn, and the colours lie within a pixel of OpenCV's
    anti-aliased circles and lines (draw_keypoints).
    """
    height, width = 479, 641
    rng = np.random.default_rng(2)
    gray = rng.uniform(-20.0, 280.0, (height, width)).astype(np.float32)  # clipped to 0..255
    records = records_of(grid_keypoints(height, width, cell=40, seed=2))
    keypoints = Keypoints.from_records(records)
    assert 0 < len(keypoints) < len(records)
    got = painter.draw(device(runtime, gray), height, width, device(runtime, records),
                       len(records), records.shape[1])
    assert_circles_drawn(got, keypoints, exact_colour=True)
    assert_only_near_keypoints(got, gray, keypoints)
    coloured = (got != gray_picture(gray)).any(axis=2)
    reference = (draw_keypoints(gray, keypoints) != gray_picture(gray)).any(axis=2)
    assert not (coloured & ~cv2.dilate(reference.astype(np.uint8), np.ones((3, 3)))).any()


def test_keypoints_across_the_border(runtime, painter):
    """Circles reaching out of a 37x23 picture are clipped, the rest of them drawn."""
    height, width = 23, 37
    gray = np.tile(np.linspace(0.0, 255.0, width, dtype=np.float32), (height, 1))
    records = records_of([
        {'x': 0.0, 'y': 0.0, 'size': 20.0, 'angle': 45.0, 'laplacian': 1.0, 'valid': 1.0},
        {'x': 36.4, 'y': 12.0, 'size': 30.0, 'angle': 180.0, 'laplacian': -1.0, 'valid': 1.0},
        {'x': 20.0, 'y': 30.0, 'size': 16.0, 'angle': 270.0, 'laplacian': 1.0, 'valid': 1.0}],
        descriptor_length=128)
    keypoints = Keypoints.from_records(records)
    got = painter.draw(device(runtime, gray), height, width, device(runtime, records), 3,
                       records.shape[1])
    assert_circles_drawn(got, keypoints, exact_colour=False)
    assert_only_near_keypoints(got, gray, keypoints)


def test_no_keypoints_is_the_gray_picture(runtime, painter):
    gray = np.random.default_rng(1).uniform(0.0, 255.0, (23, 37)).astype(np.float32)
    records = device(runtime, records_of([{'x': 5.0, 'y': 5.0, 'size': 9.0, 'valid': 1.0}]))
    got = painter.draw(device(runtime, gray), 23, 37, records, 0, KP_FIELDS + 64)
    np.testing.assert_array_equal(got, gray_picture(gray))
    np.testing.assert_array_equal(got, draw_keypoints(gray, Keypoints.empty(64)))


def test_records_without_their_fields_are_refused(runtime, painter):
    gray = device(runtime, np.zeros((23, 37), np.float32))
    with pytest.raises(ImageFormatError, match='keypoint records of 4 floats'):
        painter.draw(gray, 23, 37, gray, 1, 4)


def test_extractor_frame_needs_a_frame(runtime):
    with pytest.raises(RuntimeError, match='before the first detect_and_describe'):
        SurfExtractor(runtime).last_device_frame


@pytest.mark.parametrize('height, width', SIZES)
def test_keypoints_of_the_extractor(runtime, painter, height, width):
    """The extractor's own frame and records, where they lie: its keypoints drawn on its gray."""
    extractor = SurfExtractor(runtime, {'extended': True, 'max_keypoints': 200})
    keypoints = extractor.detect_and_describe(texture(height, width, seed=3).astype(np.uint8))
    frame = extractor.last_device_frame
    assert (frame.height, frame.width, frame.count, frame.record_floats) == \
        (height, width, len(keypoints), KP_FIELDS + 128)
    got = painter.draw(*frame)
    gray = extractor.frame_gray()
    assert_circles_drawn(got, keypoints, exact_colour=False)
    assert_only_near_keypoints(got, gray, keypoints)
