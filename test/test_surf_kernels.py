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

"""SURF kernels (kernels/surf/*.cl) against the NumPy references and their invariants."""
import dataclasses
import math

from cl_vision_nodes.errors import ImageFormatError, ParameterError
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.surf import (Keypoints, point_dtype, SURF_SCHEMA, SurfExtractor,
                                  SurfSettings)
from cl_vision_nodes.surf.describe import Describer
from cl_vision_nodes.surf.detector import HessianDetector, layer_samples
from cl_vision_nodes.surf.integral import check_size, DeviceIntegral
from cl_vision_nodes.surf.keypoints import KP_FIELDS, RECORD_FIELDS
import cv2
import numpy as np
from oracles import surf as reference
from oracles.surf import hessian_layer, integral
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

ANGLE_ATOL = 1e-3
"""Degrees. The reference repeats the kernel's float32 operations (Haar responses, fastAtan2,
window sums in sample order), so where division is correctly rounded (PoCL) the angles are
equal bit for bit. 1e-3 degrees (about 30 ulp at 360) admits a GPU's few-ulp division in the
final fastAtan2; a 5-degree offset, another window or a lost sample move an angle far more."""
DESCRIPTOR_ATOL = 1e-5
"""Per entry of a unit descriptor. The kernel places the cells in float32 (centres within about
1e-5 px below 128 px, sincos within a few ulp) and sums cell areas in float32 from the integral
image; the float64 reference works from the pixels. A centre off by d px moves a cell mean by
at most d x (grey step) / side: the entries differ by under 3e-6 on PoCL for these images.
1e-5 leaves room for a GPU's sincos and division, and is 5x below the change of a 0.01-degree
rotation of the window (10x for a 0.01-px shift) on every keypoint here."""


def textured(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Blobs and edges at several scales plus noise: many keypoints in a small image."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = 128 + 40 * np.sin(x / 5.0) * np.cos(y / 7.0) + 30 * np.sin((x + 2 * y) / 17.0)
    for _ in range(12):
        cy, cx, r = rng.uniform(0, height), rng.uniform(0, width), rng.uniform(2, 12)
        img += rng.choice([-60, 60]) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r))
    img += rng.normal(0, 4, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


@pytest.fixture(scope='module')
def images(runtime):
    return DeviceImages(runtime)


def device_integral(runtime, images, image: np.ndarray) -> np.ndarray:
    height, width = image.shape
    gray = images.upload_gray(array_to_raw(image, 'mono8'), 'test_gray')
    integ = DeviceIntegral(runtime, runtime.buffers()).compute(gray, height, width)
    return images.download(integ, (height + 1, width + 1), np.dtype(np.uint32))


@pytest.mark.parametrize('shape', [(1, 1), (3, 5), (5, 3), (16, 128), (17, 129), (479, 641),
                                   (641, 479)])
def test_integral_is_bit_exact(runtime, images, shape):
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape, dtype=np.uint8)
    np.testing.assert_array_equal(device_integral(runtime, images, image), integral(image))


def test_integral_4096_is_exact_random_and_at_the_uint32_limit(runtime, images):
    rng = np.random.default_rng(4096)
    image = rng.integers(0, 256, (4096, 4096), dtype=np.uint8)
    np.testing.assert_array_equal(device_integral(runtime, images, image), integral(image))
    full = np.full((4096, 4096), 255, np.uint8)  # 255 * 4096^2 = 4278190080 < 2^32
    got = device_integral(runtime, images, full)
    assert int(got[-1, -1]) == 255 * 4096 * 4096
    np.testing.assert_array_equal(got[::97, ::89], integral(full)[::97, ::89])


def test_integral_rejects_images_that_would_overflow():
    check_size(4096, 4096)
    with pytest.raises(ImageFormatError, match='too large'):
        check_size(4105, 4105)  # 255 * 4105^2 > 2^32


@pytest.mark.parametrize('shape', [(97, 131), (64, 200)])
def test_hessian_matches_reference_bit_exact(runtime, images, shape):
    image = textured(*shape)
    height, width = shape
    octaves, layers = 3, 5  # 3 octave layers + 2
    gray = images.upload_gray(array_to_raw(image, 'mono8'), 'test_gray')
    buffers = runtime.buffers()
    integ = DeviceIntegral(runtime, buffers).compute(gray, height, width)
    det = HessianDetector(runtime, buffers, images).responses(integ, height, width, octaves,
                                                              layers)
    flat = images.download(det, (layer_samples(height, width, octaves, layers),),
                           np.dtype(np.float32))
    sums = integral(image)
    start = 0
    for octave in range(octaves):
        rows, cols = height >> octave, width >> octave
        for layer in range(layers):
            got = flat[start:start + rows * cols].reshape(rows, cols)
            start += rows * cols
            np.testing.assert_array_equal(got, hessian_layer(sums, octave, layer),
                                          f'octave {octave} layer {layer}')


def strict_maxima(det_layers: list[np.ndarray], threshold: float) -> set[float]:
    """Responses of strict 3x3x3 maxima above the threshold in the middle layers."""
    values = set()
    for below, mid, above in zip(det_layers[:-2], det_layers[1:-1], det_layers[2:], strict=True):
        c = mid[1:-1, 1:-1]
        ok = c > threshold
        for layer in (below, mid, above):
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    if layer is mid and dy == 0 and dx == 0:
                        continue
                    ok &= c > layer[1 + dy:layer.shape[0] - 1 + dy, 1 + dx:layer.shape[1] - 1 + dx]
        values.update(c[ok].tolist())
    return values


def test_keypoints_are_interpolated_strict_maxima_in_output_order(runtime, images):
    image = textured(160, 211, seed=3)
    kps = SurfExtractor(runtime, {'n_octaves': 1}).detect_and_describe(image)
    assert len(kps) > 20
    sums = integral(image)
    det = [hessian_layer(sums, 0, layer) for layer in range(5)]
    maxima = strict_maxima(det, 100.0)
    assert set(kps.response.tolist()) <= maxima
    assert len(kps) <= len(maxima)
    # OpenCV's order: response, then size descending (the rest breaks exact ties only)
    order = np.lexsort((-kps.size, -kps.response))
    np.testing.assert_array_equal(order, np.arange(len(kps)))
    assert np.all((kps.x >= 0) & (kps.x < 211) & (kps.y >= 0) & (kps.y < 160))
    assert set(np.unique(kps.laplacian)) <= {-1, 0, 1}
    assert np.all(kps.octave == 0) and np.all(kps.size >= 9)


@pytest.mark.parametrize('count,keep', [(1, 5), (38, 100), (300, 300), (300, 41)])
def test_rank_orders_like_opencv_with_ties(runtime, images, count, keep):
    """rank_keypoints alone: OpenCV's KeypointGreater order, ties on every key."""
    rng = np.random.default_rng(count)
    cand_f = np.zeros((count, 4), np.float32)
    cand_i = np.zeros((count, 4), np.int32)
    cand_f[:, 0] = rng.integers(0, 4, count)           # x
    cand_f[:, 1] = rng.integers(0, 4, count)           # y
    cand_f[:, 2] = rng.choice([9.0, 15.0], count)      # size
    cand_f[:, 3] = rng.integers(1, 6, count)           # response: many ties
    cand_i[:, 0] = rng.integers(0, 2, count)           # octave
    cand_i[:, 1] = rng.choice([-1, 1], count)          # laplacian
    cand_i[:, 2] = rng.permutation(count)              # unique sample index
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    buffers = [cl.Buffer(runtime.context, flags, hostbuf=a)
               for a in (cand_f, cand_i, np.array([count], np.uint32))]
    out = cl.Buffer(runtime.context, cl.mem_flags.READ_WRITE, keep * KP_FIELDS * 4)
    cl.enqueue_fill_buffer(runtime.queue, out, np.float32(-1), 0, keep * KP_FIELDS * 4)
    HessianDetector(runtime, runtime.buffers(), images).rank(*buffers, count, keep, KP_FIELDS,
                                                             out)
    got = np.empty((keep, KP_FIELDS), np.float32)
    cl.enqueue_copy(runtime.queue, got, out)
    order = np.lexsort((cand_i[:, 2], cand_f[:, 0], -cand_f[:, 1], -cand_i[:, 0],
                        -cand_f[:, 2], -cand_f[:, 3]))[:min(count, keep)]
    n = len(order)
    np.testing.assert_array_equal(got[:n, [0, 1, 2, 4]], cand_f[order][:, [0, 1, 2, 3]])
    np.testing.assert_array_equal(got[:n, [5, 6]], cand_i[order][:, [0, 1]])
    assert np.all(got[:n, 7] == 1) and np.all(got[n:] == -1)


def test_cap_keeps_the_strongest_in_the_same_order(runtime):
    image = textured(240, 320, seed=5)
    everything = SurfExtractor(runtime, {'max_keypoints': 65535}).detect_and_describe(image)
    assert len(everything) > 150
    for keep in (1, 37, 150):
        capped = SurfExtractor(runtime, {'max_keypoints': keep}).detect_and_describe(image)
        assert len(capped) == keep
        np.testing.assert_array_equal(capped.to_structured(),
                                      everything.to_structured()[:keep])


def test_results_are_deterministic_and_buffers_reused(runtime):
    image = textured(120, 173, seed=7)
    extractor = SurfExtractor(runtime)
    first = extractor.detect_and_describe(image)
    handles = extractor.buffers.handles(), extractor.images.buffers.handles()
    second = extractor.detect_and_describe(image)
    assert (extractor.buffers.handles(), extractor.images.buffers.handles()) == handles
    np.testing.assert_array_equal(first.to_structured(), second.to_structured())


def test_same_keypoints_with_64_work_items_per_group(runtime, monkeypatch):
    """Work-group sizes come from the device's limits and never change the result."""
    image = textured(150, 190, seed=19)
    params = {'max_keypoints': 60, 'n_octaves': 2}  # the histogram cut and the ranking run
    wide = SurfExtractor(runtime, params)
    monkeypatch.setattr(runtime, 'limits', dataclasses.replace(runtime.limits, max_group=64))
    narrow = SurfExtractor(runtime, params)
    assert narrow._detector.cut_group == 64 and narrow._describer.ori_group == 64
    expected = wide.detect_and_describe(image)
    assert len(expected) == 60
    np.testing.assert_array_equal(narrow.detect_and_describe(image).to_structured(),
                                  expected.to_structured())


@pytest.mark.parametrize('extended,upright', [(False, False), (True, False), (False, True),
                                              (True, True)])
def test_descriptors_are_unit_length(runtime, extended, upright):
    kps = SurfExtractor(runtime, {'extended': extended, 'upright': upright}).detect_and_describe(
        textured(101, 77, seed=11))
    assert len(kps) > 5
    assert kps.descriptor.shape == (len(kps), 128 if extended else 64)
    assert kps.descriptor.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(kps.descriptor, axis=1), 1.0, atol=1e-5)
    if upright:
        assert np.all(kps.angle == 270.0)
    else:
        assert np.all((kps.angle >= 0) & (kps.angle <= 360)) and len(np.unique(kps.angle)) > 1


def test_rotating_by_90_degrees_rotates_keypoints_and_keeps_descriptors(runtime):
    image = textured(128, 128, seed=13)
    extractor = SurfExtractor(runtime)
    a = extractor.detect_and_describe(image)
    b = extractor.detect_and_describe(np.ascontiguousarray(np.rot90(image, -1)))  # clockwise
    # (x, y) -> (127 - y, x) maps the original onto the clockwise rotation
    key_b = {(round(float(x), 2), round(float(y), 2)): i
             for i, (x, y) in enumerate(zip(b.x, b.y, strict=True))}
    found = 0
    for i in range(len(a)):
        j = key_b.get((round(127 - float(a.y[i]), 2), round(float(a.x[i]), 2)))
        if j is None or a.size[i] != b.size[j]:
            continue
        found += 1
        if abs((b.angle[j] - a.angle[i] - 90 + 180) % 360 - 180) < 1:
            np.testing.assert_allclose(b.descriptor[j], a.descriptor[i], atol=2e-3)
    assert found >= 0.5 * len(a)


def test_reference_tables_are_opencvs():
    """
    The reference's Gaussian and fastAtan2 are OpenCV's.

    So the orientation reference is OpenCV's rule, not a copy of the kernel's tables.
    """
    np.testing.assert_array_equal(reference.gaussian_taps(13, 2.5),
                                  cv2.getGaussianKernel(13, 2.5, cv2.CV_32F).ravel())
    rng = np.random.default_rng(29)
    scale = 10.0 ** rng.uniform(-4, 4, (2, 500))
    y, x = (rng.standard_normal((2, 500)) * scale).astype(np.float32)
    y[:6], x[:6] = (0, -0.0, 1, -1, 0, 3), (0, 1, 0, 0, -2, 3)
    np.testing.assert_array_equal(
        reference.fast_atan2(y, x),
        [cv2.fastAtan2(float(b), float(a)) for b, a in zip(y, x, strict=True)])


@pytest.fixture(scope='module')
def chosen_keypoints(runtime):
    """
    Return a small image and keypoints on it (x, y, size).

    The detector's 8 strongest (octaves 0 and 1), then hand-made ones at the borders and at
    the limits of the orientation's sampling.
    """
    image = textured(90, 120, seed=23)
    found = SurfExtractor(runtime, {'n_octaves': 2, 'max_keypoints': 8}).detect_and_describe(
        image)
    made = np.array([(0.3, 0.6, 20.0),      # top-left corner: samples and cells outside
                     (119.0, 87.5, 45.0),   # bottom-right corner, a wide window
                     (4.6, 44.2, 33.0),     # left border
                     (60.25, 45.75, 9.0),   # the smallest size
                     (75.5, 40.25, 12.0),   # windows inside the image at any angle
                     (50.0, 47.0, 17.0),
                     (60.0, 45.0, 150.0),   # wavelets of 80 px: 3 of the 113 samples inside
                     (60.0, 54.5, 150.0),   # ... none inside: invalid unless upright
                     (60.0, 45.0, 200.0)],  # wavelets of 106 px > 91: invalid
                    np.float32)
    x, y, size = (np.concatenate([getattr(found, name), made[:, k]])
                  for k, name in enumerate(('x', 'y', 'size')))
    return image, x, y, size


def describe_on_device(runtime, images, image: np.ndarray, x: np.ndarray, y: np.ndarray,
                       size: np.ndarray, upright: bool, extended: bool) -> np.ndarray:
    """Return the records (RECORD_FIELDS, descriptor) of ``Describer.describe`` on keypoints."""
    height, width = image.shape
    records = np.zeros((len(x), KP_FIELDS + (128 if extended else 64)), np.float32)
    for name, values in (('x', x), ('y', y), ('size', size), ('valid', 1)):
        records[:, RECORD_FIELDS.index(name)] = values
    gray = images.upload_gray(array_to_raw(image, 'mono8'), 'test_gray')
    integ = DeviceIntegral(runtime, runtime.buffers()).compute(gray, height, width)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    keypoints = cl.Buffer(runtime.context, flags, hostbuf=records)
    Describer(runtime).describe(integ, height, width, keypoints, len(x), upright, extended)
    cl.enqueue_copy(runtime.queue, records, keypoints)
    return records


def window_inside(x: np.ndarray, y: np.ndarray, size: np.ndarray, shape: tuple[int, int]):
    """
    Tell which keypoints have their descriptor window inside the image at any angle.

    The window is 21 cells of int(21 s) / 21 px: then none of its cells is moved at a border.
    """
    s = size.astype(np.float32) * np.float32(1.2) / np.float32(9)
    reach = np.floor(21 * s) / 2 * np.sqrt(2)
    return ((x - reach >= 0) & (x + reach <= shape[1] - 1) & (y - reach >= 0)
            & (y + reach <= shape[0] - 1))


def fold_halves(vectors: np.ndarray) -> np.ndarray:
    """
    Add the two halves of each split sum of extended descriptors, and renormalise.

    That leaves sum dx, sum |dx|, sum dy, sum |dy| per subregion, whatever the signs.
    """
    halves = vectors.reshape(len(vectors), 16, 2, 2, 2)
    folded = (halves[:, :, :, 0] + halves[:, :, :, 1]).reshape(len(vectors), -1)
    return folded / np.linalg.norm(folded, axis=1, keepdims=True)


@pytest.mark.parametrize('extended,upright', [(False, False), (True, False), (False, True),
                                              (True, True)])
def test_orientation_and_descriptors_match_the_reference(runtime, images, chosen_keypoints,
                                                         extended, upright):
    image, x, y, size = chosen_keypoints
    records = describe_on_device(runtime, images, image, x, y, size, upright, extended)
    field = dict(zip(RECORD_FIELDS, records[:, :KP_FIELDS].T, strict=True))
    angle, valid = reference.orientation(integral(image), x, y, size, upright)
    assert valid.sum() >= 14
    np.testing.assert_array_equal(field['valid'] == 1, valid)
    turn = (field['angle'][valid] - angle[valid] + 180) % 360 - 180
    np.testing.assert_allclose(turn, 0, atol=ANGLE_ATOL)
    # the descriptor stage, given the device's angles
    expected = reference.descriptors(image, x[valid], y[valid], size[valid],
                                     field['angle'][valid], extended)
    got = records[valid, KP_FIELDS:]
    strict = np.ones(len(got), bool)
    if extended and upright:
        # At 270 degrees the kernel's float32 sincos (cos = -4.4e-8) separates cells that
        # coincide at a border by an ulp, and the sign of a difference that is zero in exact
        # arithmetic picks the half of the split: only the split-free sums are pinned there.
        strict = window_inside(x[valid], y[valid], size[valid], image.shape)
        assert strict.sum() >= 5
        np.testing.assert_allclose(fold_halves(got), fold_halves(expected), rtol=0,
                                   atol=DESCRIPTOR_ATOL)
    np.testing.assert_allclose(got[strict], expected[strict], rtol=0, atol=DESCRIPTOR_ATOL)


@pytest.mark.parametrize('shape', [(1, 1), (8, 8), (9, 9), (12, 300), (300, 12)])
def test_tiny_images_give_no_keypoints(runtime, shape):
    kps = SurfExtractor(runtime).detect_and_describe(np.full(shape, 77, np.uint8))
    assert len(kps) == 0 and kps.descriptor.shape == (0, 64)


def test_flat_and_nan_images_give_no_keypoints(runtime):
    extractor = SurfExtractor(runtime)
    assert len(extractor.detect_and_describe(np.zeros((64, 64), np.uint8))) == 0
    assert len(extractor.detect_and_describe(np.full((64, 64), np.nan, np.float32))) == 0


def test_empty_image_is_a_clear_error(runtime):
    with pytest.raises(ImageFormatError):
        SurfExtractor(runtime).detect_and_describe(np.zeros((0, 5), np.uint8))


def test_colour_messages_are_decoded_on_the_device(runtime):
    image = textured(90, 120, seed=17)
    bgr = np.repeat(image[:, :, None], 3, axis=2)
    extractor = SurfExtractor(runtime)
    np.testing.assert_array_equal(
        extractor.detect_and_describe(array_to_raw(bgr, 'bgr8')).to_structured(),
        extractor.detect_and_describe(image).to_structured())


@pytest.mark.parametrize('change', [{'hessian_threshold': -1.0}, {'hessian_threshold': math.nan},
                                    {'n_octaves': 0}, {'n_octaves': 9}, {'n_octave_layers': 0},
                                    {'max_keypoints': 0}, {'max_keypoints': 70000},
                                    {'extended': 1}, {'bogus': 1}])
def test_absurd_parameters_are_rejected_with_a_reason(runtime, change):
    extractor = SurfExtractor(runtime)
    before = dict(extractor.values)
    with pytest.raises(ParameterError):
        extractor.configure(change)
    assert extractor.values == before


def test_defaults_are_opencv_defaults():
    settings = SurfSettings.from_values(SURF_SCHEMA.defaults())
    assert (settings.hessian_threshold, settings.n_octaves, settings.n_octave_layers,
            settings.extended, settings.upright) == (100.0, 4, 3, False, False)


def test_structured_layout_round_trips():
    dtype = point_dtype(64)
    assert dtype.itemsize == 28 + 256
    offsets = [dtype.fields[n][1] for n in ('x', 'octave', 'laplacian', 'descriptor')]
    assert offsets == [0, 20, 24, 28]
    rng = np.random.default_rng(0)
    n = 5
    kps = Keypoints(*(rng.random(n).astype(np.float32) for _ in range(5)),
                    np.arange(n, dtype=np.int32), np.array([1, -1, 0, 1, -1], np.int8),
                    rng.random((n, 64)).astype(np.float32))
    back = Keypoints.from_structured(kps.to_structured())
    for name in ('x', 'y', 'size', 'angle', 'response', 'octave', 'laplacian', 'descriptor'):
        np.testing.assert_array_equal(getattr(back, name), getattr(kps, name))
        assert getattr(back, name).dtype == getattr(kps, name).dtype
