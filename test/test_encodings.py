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

"""Host image codec (pure NumPy): layout, zero-copy reads, errors, the gray decoder reference."""
from __future__ import annotations

import array

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import (ALIASES, array_to_raw, encoding_info, EncodingInfo,
                                               ENCODINGS, gray_to_mono8_reference, opencl_defines,
                                               raw_to_array, RawImage, to_gray_reference, validate)
import cv2
import numpy as np
import pytest

RNG = np.random.default_rng(7)


def sample(info: EncodingInfo, height: int = 5, width: int = 7) -> np.ndarray:
    shape = (height, width) if info.channels == 1 else (height, width, info.channels)
    if info.dtype.kind == 'f':
        return RNG.normal(0, 100, shape).astype(info.dtype)
    return RNG.integers(0, np.iinfo(info.dtype).max, shape, endpoint=True).astype(info.dtype)


def padded(a: np.ndarray, encoding: str, pad: int,
           is_bigendian: bool = False) -> tuple[RawImage, np.ndarray]:
    """Return ``a`` as a RawImage whose rows carry ``pad`` garbage bytes, and the buffer."""
    info = encoding_info(encoding)
    wire = a.astype(a.dtype.newbyteorder('>' if is_bigendian else '<'))
    rows = wire.reshape(a.shape[0], -1).view(np.uint8).reshape(a.shape[0], -1)
    garbage = RNG.integers(0, 256, (a.shape[0], pad), dtype=np.uint8)
    buf = np.ascontiguousarray(np.concatenate([rows, garbage], axis=1)).reshape(-1)
    step = a.shape[1] * info.bytes_per_pixel + pad
    return RawImage(encoding, a.shape[0], a.shape[1], step, is_bigendian, buf), buf


def test_table_ids_are_unique_and_defines_name_them() -> None:
    ids = [e.id for e in ENCODINGS.values()]
    assert len(set(ids)) == len(ids) and min(ids) >= 1
    defines = opencl_defines()
    assert defines['ENC_MONO8'] == 1 and defines['ENC_32FC2'] == 8
    assert defines['ENC_YUV422_YUY2'] == 14
    assert len(defines) == len(ENCODINGS)
    for e in ENCODINGS.values():
        assert e.bytes_per_pixel == e.channels * e.dtype.itemsize


@pytest.mark.parametrize('encoding', [*ENCODINGS, *ALIASES])
def test_round_trip_every_encoding(encoding: str) -> None:
    info = encoding_info(encoding)
    a = sample(info)
    raw = array_to_raw(a, encoding)
    assert raw.encoding == info.name
    assert raw.step == a.shape[1] * info.bytes_per_pixel
    assert isinstance(raw.data, array.array) and raw.data.typecode == 'B'
    assert len(raw.data) == raw.step * raw.height
    back = raw_to_array(raw)
    assert back.dtype == info.dtype and back.shape == a.shape
    np.testing.assert_array_equal(back, a)


def test_packs_into_given_array() -> None:
    a = sample(ENCODINGS['mono16'])
    out = array.array('B')
    raw = array_to_raw(a, 'mono16', out=out)
    assert raw.data is out and out.tobytes() == a.astype('<u2').tobytes()
    with pytest.raises(ValueError):
        array_to_raw(a, 'mono16', out=out)


def test_single_channel_accepts_hxwx1() -> None:
    a = sample(ENCODINGS['mono8'])
    np.testing.assert_array_equal(raw_to_array(array_to_raw(a[:, :, None], 'mono8')), a)


def test_non_contiguous_input_is_packed() -> None:
    a = sample(ENCODINGS['bgr8'], 6, 10)[::2, ::3]
    np.testing.assert_array_equal(raw_to_array(array_to_raw(a, 'bgr8')), a)


@pytest.mark.parametrize('pad', [1, 5, 8])
@pytest.mark.parametrize('encoding', list(ENCODINGS))
def test_padded_rows_are_read_in_place(encoding: str, pad: int) -> None:
    a = sample(ENCODINGS[encoding])
    raw, buf = padded(a, encoding, pad)
    out = raw_to_array(raw)
    np.testing.assert_array_equal(out, a)
    assert np.shares_memory(out, buf)


@pytest.mark.parametrize('data_type', [bytes, bytearray, lambda b: array.array('B', b)])
def test_reads_every_buffer_type(data_type) -> None:
    a = sample(ENCODINGS['rgb8'])
    raw, buf = padded(a, 'rgb8', 3)
    out = raw_to_array(RawImage(raw.encoding, raw.height, raw.width, raw.step, False,
                                data_type(buf.tobytes())))
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize('encoding', ['mono16', '32FC1', '32FC2'])
def test_big_endian_is_read_and_written(encoding: str) -> None:
    info = ENCODINGS[encoding]
    a = sample(info)
    raw, _ = padded(a, encoding, 4, is_bigendian=True)
    out = raw_to_array(raw)
    assert out.dtype == info.dtype and out.dtype.isnative
    np.testing.assert_array_equal(out, a)
    written = array_to_raw(a, encoding, is_bigendian=True)
    assert written.is_bigendian
    assert written.data.tobytes() == a.astype(info.dtype.newbyteorder('>')).tobytes()
    np.testing.assert_array_equal(raw_to_array(written), a)


def _raw(encoding: str = 'bgr8', height: int = 4, width: int = 5, step: int | None = None,
         size: int | None = None) -> RawImage:
    step = width * 3 if step is None else step
    return RawImage(encoding, height, width, step, False,
                    bytes(step * height if size is None else size))


@pytest.mark.parametrize('raw, message', [
    (_raw(encoding='bgr16'), 'unsupported image encoding'),
    (_raw(width=0), 'width and height'),
    (_raw(height=0), 'width and height'),
    (_raw(step=14), 'step is 14'),
    (_raw(size=59), 'data has 59 bytes'),
    (RawImage('bayer_rggb8', 1, 8, 8, False, bytes(8)), 'Bayer'),
    (RawImage('bayer_grbg8', 8, 1, 1, False, bytes(8)), 'Bayer'),
    (RawImage('mono8', 2, 2, 2, False, np.zeros((4, 4), np.uint8)[:, :1]), 'C-contiguous'),
])
def test_malformed_images_raise(raw: RawImage, message: str) -> None:
    with pytest.raises(ImageFormatError, match=message):
        validate(raw)
    with pytest.raises(ImageFormatError):
        raw_to_array(raw)


def test_odd_width_yuv_is_valid() -> None:
    raw = RawImage('yuv422', 2, 3, 6, False, bytes(range(12)))
    np.testing.assert_array_equal(to_gray_reference(raw), [[1, 3, 5], [7, 9, 11]])


@pytest.mark.parametrize('array_, encoding, message', [
    (np.zeros((4, 5), np.uint8), 'bgr8', 'HxWx3'),
    (np.zeros((4, 5, 4), np.uint8), 'bgr8', 'HxWx3'),
    (np.zeros((4, 5, 3), np.uint8), 'mono8', 'HxW array'),
    (np.zeros((4, 5), np.uint16), 'mono8', 'uint8'),
    (np.zeros((4, 5), np.float64), '32FC1', 'float32'),
    (np.zeros((0, 5), np.uint8), 'mono8', 'width and height'),
    (np.zeros((1, 5), np.uint8), 'bayer_bggr8', 'Bayer'),
    (np.zeros((4, 5), np.uint8), 'jpeg', 'unsupported'),
])
def test_bad_arrays_raise(array_: np.ndarray, encoding: str, message: str) -> None:
    with pytest.raises(ImageFormatError, match=message):
        array_to_raw(array_, encoding)


def test_field_has_no_gray() -> None:
    with pytest.raises(ImageFormatError, match='two-channel field'):
        to_gray_reference(array_to_raw(np.zeros((2, 2, 2), np.float32), '32FC2'))


def test_gray_of_mono_and_float() -> None:
    m8 = sample(ENCODINGS['mono8'])
    np.testing.assert_array_equal(to_gray_reference(array_to_raw(m8, 'mono8')),
                                  m8.astype(np.float32))
    m16 = np.array([[0, 257, 65535, 12345]], np.uint16)
    g16 = to_gray_reference(array_to_raw(m16, 'mono16'))
    assert g16.dtype == np.float32
    np.testing.assert_array_equal(g16, m16.astype(np.float32) * np.float32(1 / 257))
    np.testing.assert_allclose(g16, m16 / 257, rtol=1e-6)
    f = sample(ENCODINGS['32FC1'])
    np.testing.assert_array_equal(to_gray_reference(array_to_raw(f, '32FC1')), f)


_CV_GRAY = {'bgr8': cv2.COLOR_BGR2GRAY, 'rgb8': cv2.COLOR_RGB2GRAY,
            'bgra8': cv2.COLOR_BGRA2GRAY, 'rgba8': cv2.COLOR_RGBA2GRAY}


def test_color_gray_is_bit_identical_to_opencv_on_all_green_red_pairs() -> None:
    g, r = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8))
    for b in (0, 1, 127, 128, 254, 255):
        bgr = np.dstack([np.full_like(g, b), g, r])
        np.testing.assert_array_equal(to_gray_reference(array_to_raw(bgr, 'bgr8')),
                                      cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY).astype(np.float32))


@pytest.mark.parametrize('encoding', list(_CV_GRAY))
def test_color_gray_matches_opencv(encoding: str) -> None:
    a = sample(ENCODINGS[encoding], 37, 53)
    gray = to_gray_reference(array_to_raw(a, encoding))
    assert gray.dtype == np.float32 and gray.shape == a.shape[:2]
    np.testing.assert_array_equal(gray, cv2.cvtColor(a, _CV_GRAY[encoding]).astype(np.float32))


@pytest.mark.parametrize('encoding, code', [('yuv422', cv2.COLOR_YUV2GRAY_UYVY),
                                            ('yuv422_yuy2', cv2.COLOR_YUV2GRAY_YUY2)])
def test_yuv_gray_matches_opencv(encoding: str, code: int) -> None:
    a = sample(ENCODINGS[encoding], 9, 12)
    raw, _ = padded(a, encoding, 6)
    np.testing.assert_array_equal(to_gray_reference(raw), cv2.cvtColor(a, code).astype(np.float32))


def _slow_bayer_gray(mosaic: np.ndarray, pattern: str) -> np.ndarray:
    """Per-pixel transcription of the demosaic rules, independent of the vectorised one."""
    h, w = mosaic.shape

    def v(y: int, x: int) -> int:
        y = -y if y < 0 else (2 * h - 2 - y if y >= h else y)
        x = -x if x < 0 else (2 * w - 2 - x if x >= w else x)
        return int(mosaic[y, x])

    out = np.zeros((h, w), np.float32)
    for y in range(h):
        for x in range(w):
            colour = pattern[2 * (y % 2) + x % 2]
            four = (v(y - 1, x) + v(y + 1, x) + v(y, x - 1) + v(y, x + 1) + 2) >> 2
            diag = (v(y - 1, x - 1) + v(y - 1, x + 1) + v(y + 1, x - 1) + v(y + 1, x + 1) + 2) >> 2
            across = (v(y, x - 1) + v(y, x + 1) + 1) >> 1
            updown = (v(y - 1, x) + v(y + 1, x) + 1) >> 1
            if colour == 'R':
                r, g, b = v(y, x), four, diag
            elif colour == 'B':
                r, g, b = diag, four, v(y, x)
            elif 'R' in pattern[2 * (y % 2):2 * (y % 2) + 2]:
                r, g, b = across, v(y, x), updown
            else:
                r, g, b = updown, v(y, x), across
            out[y, x] = (b * 3735 + g * 19235 + r * 9798 + 16384) >> 15
    return out


@pytest.mark.parametrize('shape', [(6, 7), (8, 8), (2, 2), (3, 5)])
@pytest.mark.parametrize('encoding, pattern', [('bayer_rggb8', 'RGGB'), ('bayer_bggr8', 'BGGR'),
                                               ('bayer_gbrg8', 'GBRG'), ('bayer_grbg8', 'GRBG')])
def test_bayer_gray_matches_per_pixel_rules(encoding: str, pattern: str,
                                            shape: tuple[int, int]) -> None:
    mosaic = RNG.integers(0, 256, shape, dtype=np.uint8)
    raw, _ = padded(mosaic, encoding, 3)
    np.testing.assert_array_equal(to_gray_reference(raw), _slow_bayer_gray(mosaic, pattern))


def test_bayer_gray_of_flat_grey_is_flat() -> None:
    for encoding in ('bayer_rggb8', 'bayer_gbrg8'):
        flat = array_to_raw(np.full((6, 7), 200, np.uint8), encoding)
        np.testing.assert_array_equal(to_gray_reference(flat), np.float32(200))


def test_mono8_output_rounds_half_to_even_and_saturates() -> None:
    gray = np.array([0.5, 1.5, 2.5, 254.5, -3.0, 300.0, np.nan, np.inf, -np.inf], np.float32)
    out = gray_to_mono8_reference(gray, 1.0)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [0, 2, 2, 254, 0, 255, 0, 255, 0])
    np.testing.assert_array_equal(gray_to_mono8_reference(np.float32([100.0]), 0.5), [50])
