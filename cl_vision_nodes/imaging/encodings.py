# Copyright 2026 cl_vision_nodes maintainers  # noqa: A005 (imported by its full name only)
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
Host-side image codec: sensor_msgs/Image encodings as NumPy arrays, without ROS.

Why it exists: PyPI has no ROS 2 cv_bridge, and the algorithm layer must run without rclpy, so
the package carries its own converter with cv_bridge's encodings and array shapes. A received
image is read as a zero-copy view of the message buffer (padded rows included); a published one
is packed with one memcpy into an ``array.array('B')``, the ``data`` type of rclpy messages
(ideally the message's own, see ``array_to_raw``).

It also holds the NumPy *reference* of the device gray decoder (``to_gray_reference``): the
OpenCL kernel that turns any supported encoding into float intensity is tested bit-exactly
against it, so every rounding below is part of the contract.

Encoding ids (``EncodingInfo.id``) are stable: kernels receive them as ``-DENC_<NAME>=<id>``
build defines (``opencl_defines()``) and an encoding argument. Never renumber; append new ids.

    id  name          kind   channels  dtype    bytes/px  order
     1  mono8         gray   1         uint8    1
     2  mono16        gray   1         uint16   2
     3  bgr8          color  3         uint8    3         BGR
     4  rgb8          color  3         uint8    3         RGB
     5  bgra8         color  4         uint8    4         BGRA
     6  rgba8         color  4         uint8    4         RGBA
     7  32FC1         float  1         float32  4
     8  32FC2         field  2         float32  8
     9  bayer_rggb8   bayer  1         uint8    1         RGGB
    10  bayer_bggr8   bayer  1         uint8    1         BGGR
    11  bayer_gbrg8   bayer  1         uint8    1         GBRG
    12  bayer_grbg8   bayer  1         uint8    1         GRBG
    13  yuv422        yuv    2         uint8    2         UYVY   (alias 'uyvy')
    14  yuv422_yuy2   yuv    2         uint8    2         YUYV   (alias 'yuyv')
"""
from __future__ import annotations

import array
from dataclasses import dataclass
import sys
from typing import Literal, Union

from cl_vision_nodes.errors import ImageFormatError
import numpy as np

Kind = Literal['gray', 'color', 'bayer', 'yuv', 'float', 'field']
Buffer = Union[bytes, bytearray, memoryview, array.array, np.ndarray]


@dataclass(frozen=True)
class EncodingInfo:
    """
    One supported encoding.

    ``channels`` is the size of the array's last axis (1 = no channel axis): for yuv it counts
    the 2 raw bytes of a pixel, not colour channels. ``order`` is the channel order for colour,
    the row-major 2x2 mosaic for bayer, the byte order of a pixel pair for yuv, else ''.
    """

    name: str
    id: int  # noqa: A003 (a field only; kernels know encodings by this id)
    kind: Kind
    channels: int
    dtype: np.dtype
    bytes_per_pixel: int
    order: str = ''


HOST_IS_BIG_ENDIAN = sys.byteorder == 'big'
"""Byte order of this host, the order of arrays made here."""


def _info(name: str, id_: int, kind: Kind, channels: int, dtype: str,
          order: str = '') -> EncodingInfo:
    dt = np.dtype(dtype)
    return EncodingInfo(name, id_, kind, channels, dt, channels * dt.itemsize, order)


ENCODINGS: dict[str, EncodingInfo] = {e.name: e for e in (
    _info('mono8', 1, 'gray', 1, 'uint8'),
    _info('mono16', 2, 'gray', 1, 'uint16'),
    _info('bgr8', 3, 'color', 3, 'uint8', 'BGR'),
    _info('rgb8', 4, 'color', 3, 'uint8', 'RGB'),
    _info('bgra8', 5, 'color', 4, 'uint8', 'BGRA'),
    _info('rgba8', 6, 'color', 4, 'uint8', 'RGBA'),
    _info('32FC1', 7, 'float', 1, 'float32'),
    _info('32FC2', 8, 'field', 2, 'float32'),
    _info('bayer_rggb8', 9, 'bayer', 1, 'uint8', 'RGGB'),
    _info('bayer_bggr8', 10, 'bayer', 1, 'uint8', 'BGGR'),
    _info('bayer_gbrg8', 11, 'bayer', 1, 'uint8', 'GBRG'),
    _info('bayer_grbg8', 12, 'bayer', 1, 'uint8', 'GRBG'),
    _info('yuv422', 13, 'yuv', 2, 'uint8', 'UYVY'),
    _info('yuv422_yuy2', 14, 'yuv', 2, 'uint8', 'YUYV'),
)}

ALIASES: dict[str, str] = {'uyvy': 'yuv422', 'yuyv': 'yuv422_yuy2'}


def encoding_info(encoding: str) -> EncodingInfo:
    """Look up an encoding by its ROS name or alias; raise ImageFormatError if unsupported."""
    info = ENCODINGS.get(ALIASES.get(encoding, encoding))
    if info is None:
        raise ImageFormatError(
            f'unsupported image encoding {encoding!r}; expected one of '
            f'{", ".join([*ENCODINGS, *ALIASES])}')
    return info


def opencl_defines() -> dict[str, int]:
    """``ENC_<NAME>: id`` build defines, so kernels switch on names rather than numbers."""
    return {f'ENC_{e.name.upper()}': e.id for e in ENCODINGS.values()}


@dataclass(frozen=True)
class RawImage:
    """The fields of sensor_msgs/Image without ROS: ``step`` bytes per row, rows may be padded."""

    encoding: str
    height: int
    width: int
    step: int
    is_bigendian: bool
    data: Buffer


def as_bytes(data: Buffer) -> np.ndarray:
    """Return the buffer as a flat uint8 array, sharing memory (needs a C-contiguous buffer)."""
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            raise ImageFormatError('image data array is not C-contiguous; expected a flat buffer')
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def _check_size(info: EncodingInfo, height: int, width: int) -> None:
    if height < 1 or width < 1:
        raise ImageFormatError(
            f'{info.name} image is {width}x{height}; expected width and height of at least 1')
    if info.kind == 'bayer' and (height < 2 or width < 2):
        raise ImageFormatError(
            f'{info.name} image is {width}x{height}; a Bayer mosaic needs at least 2x2 pixels')


def validate(raw: RawImage) -> EncodingInfo:
    """Check that ``raw`` can be read as its encoding; return the encoding's description."""
    info = encoding_info(raw.encoding)
    _check_size(info, raw.height, raw.width)
    row = raw.width * info.bytes_per_pixel
    if raw.step < row:
        raise ImageFormatError(
            f'{info.name} image step is {raw.step} bytes; '
            f'expected at least width*{info.bytes_per_pixel} = {row}')
    size = as_bytes(raw.data).size
    if size < raw.step * raw.height:
        raise ImageFormatError(
            f'{info.name} image data has {size} bytes; '
            f'expected step*height = {raw.step * raw.height}')
    return info


def validate_intensity(raw: RawImage) -> EncodingInfo:
    """``validate``, and refuse encodings without an intensity (32FC2 flow fields)."""
    info = validate(raw)
    if info.kind == 'field':
        raise ImageFormatError(
            f'{info.name} is a two-channel field (e.g. optical flow), not an intensity image')
    return info


def _wire_dtype(info: EncodingInfo, is_bigendian: bool) -> np.dtype:
    if info.dtype.itemsize == 1:
        return info.dtype
    return info.dtype.newbyteorder('>' if is_bigendian else '<')


def raw_to_array(raw: RawImage) -> np.ndarray:
    """
    Return the image as an HxW or HxWxC array.

    HxW for one channel and Bayer mosaics, HxWxC for colour, 32FC2 and YUV bytes.

    Zero copy: the result is a strided view of ``raw.data`` (padded rows skipped by the row
    stride), writable when the buffer is. The one copy is a multi-byte encoding whose byte order
    differs from the host's: it is returned converted to native order.
    """
    info = validate(raw)
    dtype = _wire_dtype(info, raw.is_bigendian)
    shape: tuple[int, ...] = (raw.height, raw.width)
    strides: tuple[int, ...] = (raw.step, info.bytes_per_pixel)
    if info.channels > 1:
        shape += (info.channels,)
        strides += (info.dtype.itemsize,)
    view = np.ndarray(shape, dtype=dtype, buffer=as_bytes(raw.data), strides=strides)
    return view if dtype.isnative else view.astype(dtype.newbyteorder('='))


def check_array(array_: np.ndarray, encoding: str) -> tuple[EncodingInfo, np.ndarray]:
    """
    Check an array against ``encoding``; return the encoding and the array as HxW / HxWxC.

    The dtype must be the encoding's (any byte order, no silent rescaling); a single-channel
    encoding also takes HxWx1, returned as HxW.
    """
    info = encoding_info(encoding)
    a = np.asarray(array_)
    if info.channels == 1 and a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if (a.ndim != (2 if info.channels == 1 else 3)
            or (info.channels > 1 and a.shape[2] != info.channels)):
        expected = 'HxW' if info.channels == 1 else f'HxWx{info.channels}'
        raise ImageFormatError(f'{info.name} needs a {expected} array; got shape {a.shape}')
    if a.dtype.newbyteorder('=') != info.dtype:
        raise ImageFormatError(f'{info.name} needs a {info.dtype} array; got {a.dtype}')
    _check_size(info, a.shape[0], a.shape[1])
    return info, a


def array_to_raw(array_: np.ndarray, encoding: str, is_bigendian: bool = False,
                 out: array.array | None = None) -> RawImage:
    """
    Pack an array (see ``check_array``) as ``encoding`` with unpadded rows.

    ``data`` is an ``array.array('B')`` filled by ``frombytes`` of a uint8 view: one memcpy.
    ``out`` is an empty array.array('B') to fill instead of a new one; pass a message's own
    ``data``: rclpy stores an assigned array.array without conversion only when field checks are
    on, and otherwise copies it (~0.9 ms for 640x480 bgr8 on Kilted, against 0.03 ms in place).
    """
    info, a = check_array(array_, encoding)
    data = array.array('B') if out is None else out
    if data.typecode != 'B' or len(data):
        raise ValueError("out must be an empty array.array('B')")
    data.frombytes(np.ascontiguousarray(a, dtype=_wire_dtype(info, is_bigendian)).view(np.uint8))
    height, width = a.shape[:2]
    return RawImage(info.name, height, width, width * info.bytes_per_pixel, is_bigendian, data)


def gray_to_raw(gray: np.ndarray) -> RawImage:
    """
    Wrap a host gray image as a message.

    uint8 as mono8, anything else as 32FC1 (0..255 scale).
    """
    if gray.ndim != 2:
        raise ImageFormatError(f'expected a HxW gray image, got shape {gray.shape}')
    if gray.dtype == np.uint8:
        return array_to_raw(gray, 'mono8')
    return array_to_raw(np.ascontiguousarray(gray, np.float32), '32FC1')


# OpenCV's fixed-point 8-bit RGB2Gray (BY15/GY15/RY15, gray_shift 15): bit-identical to
# cv2.cvtColor(COLOR_BGR2GRAY) over all 2^24 colours. The older 14-bit weights (1868, 9617, 4899)
# differ from it by one level on 0.26% of colours, so they would not match OpenCV.
_B_WEIGHT, _G_WEIGHT, _R_WEIGHT, _GRAY_SHIFT = 3735, 19235, 9798, 15


def _rgb_to_gray(r: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    r, g, b = (c.astype(np.int32) for c in (r, g, b))
    rounding = 1 << (_GRAY_SHIFT - 1)
    gray = (b * _B_WEIGHT + g * _G_WEIGHT + r * _R_WEIGHT + rounding) >> _GRAY_SHIFT
    return gray.astype(np.float32)


def _demosaic(mosaic: np.ndarray, pattern: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Bilinear demosaic in integer arithmetic, reflect-101 borders; returns int32 (R, G, B).

    Reflect-101 mirrors -1 -> 1 and W -> W-2, so a mirrored neighbour has the Bayer colour the
    real one would have had and the same rules apply at the border.
    """
    p = np.pad(mosaic.astype(np.int32), 1, mode='reflect')  # numpy 'reflect' is reflect-101
    c = p[1:-1, 1:-1]
    n, s, w, e = p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]
    cross = (n + s + w + e + 2) >> 2
    diag = (p[:-2, :-2] + p[:-2, 2:] + p[2:, :-2] + p[2:, 2:] + 2) >> 2
    horiz = (w + e + 1) >> 1
    vert = (n + s + 1) >> 1
    height, width = mosaic.shape
    colour = np.array(list(pattern)).reshape(2, 2)[np.arange(height)[:, None] % 2,
                                                   np.arange(width)[None, :] % 2]
    row_has_r = np.array(['R' in pattern[:2], 'R' in pattern[2:]])[np.arange(height) % 2][:, None]
    is_r, is_b = colour == 'R', colour == 'B'
    is_g = ~(is_r | is_b)
    r = np.where(is_r, c, np.where(is_b, diag, np.where(row_has_r, horiz, vert)))
    g = np.where(is_g, c, cross)
    b = np.where(is_b, c, np.where(is_r, diag, np.where(row_has_r, vert, horiz)))
    return r, g, b


def to_gray_reference(raw: RawImage) -> np.ndarray:
    """
    Decode as the device gray decoder does: float32 HxW intensity on the 0..255 scale.

    This is its NumPy reference.

    mono16 is scaled by float32(1/257) (a multiply, as the kernel does); colour and demosaiced
    Bayer use OpenCV's fixed-point weights; yuv takes the pixel's Y byte; 32FC1 passes through,
    with NaN and infinities (a depth camera's holes) read as 0.
    """
    a = raw_to_array(raw)
    info = encoding_info(raw.encoding)
    if info.kind == 'gray':
        scale = np.float32(1.0 / 257.0) if info.dtype.itemsize == 2 else np.float32(1.0)
        return a.astype(np.float32) * scale
    if info.kind == 'color':
        r, g, b = (a[..., info.order.index(ch)] for ch in 'RGB')
        return _rgb_to_gray(r, g, b)
    if info.kind == 'bayer':
        return _rgb_to_gray(*_demosaic(a, info.order))
    if info.kind == 'yuv':
        return a[..., info.order.index('Y')].astype(np.float32)
    if info.kind == 'float':
        gray = a.astype(np.float32)
        return np.where(np.isfinite(gray), gray, np.float32(0))
    raise ImageFormatError(f'{info.name} is a two-channel field, not an intensity image; '
                           'expected an image encoding')


def gray_to_mono8_reference(gray: np.ndarray, gain: float) -> np.ndarray:
    """
    Return what the device writes for mono8 output: saturate(rint(gray * gain)) in float32.

    rint rounds half to even (OpenCL ``_rte``); NaN saturates to 0 as ``convert_uchar_sat_rte``.
    """
    scaled = np.rint(np.asarray(gray, dtype=np.float32) * np.float32(gain))
    finite = np.nan_to_num(scaled, nan=0.0, posinf=255.0, neginf=0.0)
    return np.clip(finite, 0, 255).astype(np.uint8)
