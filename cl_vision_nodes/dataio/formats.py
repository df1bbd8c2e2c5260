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
Readers and writers of the ground-truth and result formats the package exchanges.

Every reader returns float32 arrays with a single "unknown" marker per format family, so the
evaluation code never has to remember a file's private convention:

- flow (Middlebury ``.flo``, KITTI flow PNG): HxWx2 float32 ``(u, v)`` in pixels, NaN = unknown;
- disparity from PNG (KITTI, Middlebury): HxW float32 in pixels, NaN = unknown;
- PFM: stored values as they are (the project writes invalid disparities as +inf);
- depth PNG: HxW float32 metres from 16-bit millimetres, NaN = no depth;
- PLY: the vertex list of a point cloud (x y z, optional red green blue).

A missing, unreadable or malformed file raises ``DataFormatError`` with a one-line message that
names the file and the problem, so the CLI can print it and exit with code 2. An array of the
wrong shape handed to a writer raises ``ImageFormatError``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
import re

from cl_vision_nodes.errors import DataFormatError, ImageFormatError
import cv2
import numpy as np

PathLike = str | os.PathLike[str]

FLO_TAG = 202021.25
"""First four bytes of a ``.flo`` file, as a little-endian float32 (spells 'PIEH')."""
FLO_UNKNOWN = 1e10
"""Value written for unknown flow; readers treat ``|u|`` or ``|v|`` above 1e9 as unknown."""
_FLO_UNKNOWN_THRESHOLD = 1e9
_FLO_HEADER_BYTES = 12

KITTI_DISPARITY_SCALE = 256.0
"""KITTI disparity PNGs store ``round(d * 256)``; 0 means invalid."""
DEPTH_PNG_SCALE = 1000.0
"""Units per metre of a 16-bit depth PNG (millimetres, as ROS 16UC1 depth images)."""
KITTI_FLOW_SCALE = 64.0
KITTI_FLOW_OFFSET = 2.0**15
"""KITTI flow PNGs store ``u * 64 + 2**15`` (same for v) in uint16."""

_PFM_HEADER = re.compile(rb'(P[Ff])\s+(\d+)\s+(\d+)\s+(\S+)\s')


def _read_bytes(path: PathLike) -> bytes:
    """Read a whole file, turning OS errors into a one-line ``DataFormatError``."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise DataFormatError(f'{path}: no such file') from None
    except OSError as exc:
        raise DataFormatError(f'{path}: cannot read ({exc.strerror or exc})') from None


def _write_bytes(path: PathLike, data: bytes) -> None:
    """Write a whole file; an unwritable destination is a user error, not a bug."""
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise DataFormatError(f'{path}: cannot write ({exc.strerror or exc})') from None


def _decode_image(path: PathLike, flags: int) -> np.ndarray:
    """Decode an image file with OpenCV; reads the bytes ourselves to tell 'missing' from 'bad'."""
    data = _read_bytes(path)
    image = cv2.imdecode(np.frombuffer(data, np.uint8), flags) if data else None
    if image is None:
        raise DataFormatError(f'{path}: not an image (OpenCV cannot decode it)')
    return image


def write_png(path: PathLike, image: np.ndarray) -> None:
    """Encode to PNG in memory so write failures raise instead of returning False (cv2.imwrite)."""
    ok, buffer = cv2.imencode('.png', image)
    if not ok:
        raise DataFormatError(f'{path}: OpenCV cannot encode a {image.dtype} {image.shape} PNG')
    _write_bytes(path, buffer.tobytes())


def _require_shape(array: np.ndarray, channels: int | None, what: str) -> None:
    """Writers accept HxW (channels None) or HxWxC arrays only; anything else is a caller bug."""
    expected_ndim = 2 if channels is None else 3
    if array.ndim != expected_ndim or (channels is not None and array.shape[2] != channels):
        layout = 'HxW' if channels is None else f'HxWx{channels}'
        raise ImageFormatError(f'{what} must be {layout}, got shape {array.shape}')


# --- Middlebury .flo ---------------------------------------------------------------------------


def read_flo(path: PathLike) -> np.ndarray:
    """Read a Middlebury ``.flo`` file as HxWx2 float32 ``(u, v)``; unknown values become NaN."""
    data = _read_bytes(path)
    if len(data) < _FLO_HEADER_BYTES:
        raise DataFormatError(f'{path}: truncated .flo header ({len(data)} bytes)')
    tag = np.frombuffer(data, '<f4', 1)[0]
    if tag != np.float32(FLO_TAG):
        raise DataFormatError(f'{path}: not a .flo file (tag {tag!r}, expected {FLO_TAG})')
    width, height = (int(v) for v in np.frombuffer(data, '<i4', 2, offset=4))
    if width <= 0 or height <= 0:
        raise DataFormatError(f'{path}: invalid .flo size {width}x{height}')
    expected = _FLO_HEADER_BYTES + height * width * 2 * 4
    if len(data) != expected:
        raise DataFormatError(
            f'{path}: .flo of {width}x{height} needs {expected} bytes, file has {len(data)}'
        )
    flow = np.frombuffer(data, '<f4', offset=_FLO_HEADER_BYTES).reshape(height, width, 2)
    flow = flow.astype(np.float32)
    flow[(np.abs(flow) > _FLO_UNKNOWN_THRESHOLD).any(axis=2)] = np.nan
    return flow


def write_flo(path: PathLike, flow: np.ndarray) -> None:
    """
    Write HxWx2 flow as Middlebury ``.flo``.

    A pixel with a non-finite component (NaN) is written as unknown (1e10 in both components).
    """
    flow = np.asarray(flow)
    _require_shape(flow, 2, 'flow')
    height, width = flow.shape[:2]
    values = flow.astype('<f4')
    values[~np.isfinite(values).all(axis=2)] = FLO_UNKNOWN
    header = np.array([FLO_TAG], '<f4').tobytes() + np.array([width, height], '<i4').tobytes()
    _write_bytes(path, header + values.tobytes())


# --- KITTI 16-bit PNGs -------------------------------------------------------------------------


def _decode_uint16(path: PathLike, channels: int | None) -> np.ndarray:
    """Decode a KITTI-style uint16 PNG and check its channel count."""
    image = _decode_image(path, cv2.IMREAD_UNCHANGED)
    found = None if image.ndim == 2 else image.shape[2]
    if image.dtype != np.uint16 or found != channels:
        expected = f'uint16 {channels or 1}-channel'
        raise DataFormatError(
            f'{path}: expected a {expected} PNG, got {image.dtype} {image.shape}')
    return image


def read_kitti_disparity(path: PathLike) -> np.ndarray:
    """Read a KITTI disparity PNG (uint16 = d*256) as HxW float32 pixels; 0 becomes NaN."""
    raw = _decode_uint16(path, None)
    disparity = raw.astype(np.float32) / np.float32(KITTI_DISPARITY_SCALE)
    disparity[raw == 0] = np.nan
    return disparity


def write_kitti_disparity(path: PathLike, disparity: np.ndarray) -> None:
    """
    Write HxW disparity as a KITTI PNG; NaN, inf and d <= 0 are written as 0 (invalid).

    Valid values are clipped to 1..65535 so that a tiny positive disparity stays valid.
    """
    disparity = np.asarray(disparity, np.float64)
    _require_shape(disparity, None, 'disparity')
    valid = np.isfinite(disparity) & (disparity > 0)
    scaled = np.clip(np.rint(np.where(valid, disparity, 0.0) * KITTI_DISPARITY_SCALE), 1, 65535)
    write_png(path, np.where(valid, scaled, 0).astype(np.uint16))


def read_kitti_flow(path: PathLike) -> np.ndarray:
    """Read a KITTI flow PNG as HxWx2 float32 ``(u, v)``; pixels with B == 0 become NaN."""
    raw = _decode_uint16(path, 3)  # OpenCV order: B = valid, G = v, R = u
    flow = (raw[..., [2, 1]].astype(np.float32) - np.float32(KITTI_FLOW_OFFSET)) / np.float32(
        KITTI_FLOW_SCALE
    )
    flow[raw[..., 0] == 0] = np.nan
    return flow


def write_kitti_flow(path: PathLike, flow: np.ndarray) -> None:
    """
    Write HxWx2 flow as a KITTI PNG; a pixel with a non-finite component is written invalid.

    Values are rounded to 1/64 px and clipped to the representable range of about +-512 px.
    """
    flow = np.asarray(flow, np.float64)
    _require_shape(flow, 2, 'flow')
    valid = np.isfinite(flow).all(axis=2)
    encoded = np.clip(np.rint(flow * KITTI_FLOW_SCALE + KITTI_FLOW_OFFSET), 0, 65535)
    bgr = np.zeros(flow.shape[:2] + (3,), np.uint16)
    bgr[..., 2] = np.where(valid, encoded[..., 0], 0)
    bgr[..., 1] = np.where(valid, encoded[..., 1], 0)
    bgr[..., 0] = valid
    write_png(path, bgr)


def write_depth_png(path: PathLike, depth: np.ndarray) -> None:
    """
    Write HxW depth in metres as a 16-bit PNG of millimetres (ROS 16UC1 depth, REP 118).

    0 means no depth: NaN, infinities, depth <= 0 and depth beyond 65.535 m (which 16 bits
    cannot hold; saturating would write a wrong distance). A positive depth under 0.5 mm is 1.
    """
    depth = np.asarray(depth, np.float64)
    _require_shape(depth, None, 'depth')
    millimetres = np.rint(np.where(np.isfinite(depth), depth, 0.0) * DEPTH_PNG_SCALE)
    valid = (depth > 0) & (millimetres <= 65535)
    write_png(path, np.where(valid, np.maximum(millimetres, 1), 0).astype(np.uint16))


def read_depth_png(path: PathLike) -> np.ndarray:
    """Read a 16-bit millimetre depth PNG as HxW float32 metres; 0 becomes NaN."""
    raw = _decode_uint16(path, None)
    depth = raw.astype(np.float32) / np.float32(DEPTH_PNG_SCALE)
    depth[raw == 0] = np.nan
    return depth


# --- PFM ---------------------------------------------------------------------------------------


def read_pfm(path: PathLike) -> np.ndarray:
    """
    Read a PFM file as float32 HxW ('Pf') or HxWx3 ('PF'), rows top-to-bottom.

    A negative scale means little-endian data, a positive one big-endian (both occur in the
    wild); the magnitude of the scale carries no meaning for disparity files and is ignored.
    """
    data = _read_bytes(path)
    header = _PFM_HEADER.match(data)
    if header is None:
        raise DataFormatError(f'{path}: not a PFM file (bad header)')
    kind, width, height, scale_text = header.groups()
    width, height = int(width), int(height)
    try:
        scale = float(scale_text)
    except ValueError:
        raise DataFormatError(f'{path}: bad PFM scale {scale_text!r}') from None
    if width <= 0 or height <= 0 or scale == 0:
        raise DataFormatError(f'{path}: invalid PFM header (size {width}x{height}, scale {scale})')
    channels = 3 if kind == b'PF' else 1
    count = height * width * channels
    available = len(data) - header.end()
    if available != count * 4:
        raise DataFormatError(
            f'{path}: PFM of {width}x{height}x{channels} needs {count * 4} data bytes, '
            f'file has {available}'
        )
    dtype = '<f4' if scale < 0 else '>f4'
    image = np.frombuffer(data, dtype, count, offset=header.end()).reshape(height, width, channels)
    image = np.ascontiguousarray(np.flipud(image), dtype=np.float32)
    return image[..., 0] if channels == 1 else image


def write_pfm(path: PathLike, image: np.ndarray) -> None:
    """Write HxW ('Pf') or HxWx3 ('PF') float32 as little-endian PFM, values stored as given."""
    image = np.asarray(image)
    _require_shape(image, 3 if image.ndim == 3 else None, 'PFM image')
    kind = 'PF' if image.ndim == 3 else 'Pf'
    height, width = image.shape[:2]
    header = f'{kind}\n{width} {height}\n-1.0\n'.encode('ascii')
    _write_bytes(path, header + np.flipud(image).astype('<f4').tobytes())


# --- Middlebury disparity PNG, Oxford homography, images ---------------------------------------


def read_scaled_disparity_png(path: PathLike, scale: float) -> np.ndarray:
    """
    Read a Middlebury-style disparity PNG as float32 pixels (value / scale); 0 becomes NaN.

    The scale depends on the data set: the quarter-size Cones ground truth in ../shared/data
    (``cones_gt.png``) uses scale 1, while several Middlebury 2003 releases store 4 * d.
    """
    if scale <= 0:
        raise ValueError(f'scale must be positive, got {scale}')
    raw = _decode_image(path, cv2.IMREAD_UNCHANGED)
    if raw.ndim != 2 or raw.dtype not in (np.uint8, np.uint16):
        raise DataFormatError(
            f'{path}: expected a single-channel 8/16-bit PNG, got {raw.dtype} {raw.shape}'
        )
    disparity = raw.astype(np.float32) / np.float32(scale)
    disparity[raw == 0] = np.nan
    return disparity


def read_homography(path: PathLike) -> np.ndarray:
    """Read an Oxford (VGG) homography: 9 whitespace-separated ASCII numbers, row-major 3x3."""
    data = _read_bytes(path)
    try:
        values = [float(token) for token in data.decode('ascii').split()]
    except (UnicodeDecodeError, ValueError):
        raise DataFormatError(f'{path}: homography file is not 9 ASCII numbers') from None
    if len(values) != 9:
        raise DataFormatError(f'{path}: homography needs 9 numbers, file has {len(values)}')
    return np.array(values, np.float64).reshape(3, 3)


def read_image(path: PathLike, gray: bool = True) -> np.ndarray:
    """
    Read an 8-bit image: HxW uint8 when ``gray``, else HxWx3 BGR uint8.

    Colour files are decoded as BGR and converted with ``cv2.COLOR_BGR2GRAY`` so every caller gets
    the same grey levels whatever the file's own colour model.
    """
    image = _decode_image(path, cv2.IMREAD_COLOR)
    return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if gray else image


# --- PLY point clouds --------------------------------------------------------------------------

_PLY_FORMATS = ('binary_little_endian', 'ascii')
_PLY_TYPES = ('float', 'uchar')
_PLY_XYZ = ('x', 'y', 'z')
_PLY_RGB = ('red', 'green', 'blue')


def _ply_dtype(rgb: bool) -> np.dtype:
    names = _PLY_XYZ + (_PLY_RGB if rgb else ())
    return np.dtype([(name, '<f4' if name in _PLY_XYZ else 'u1') for name in names])


def write_ply(path: PathLike, xyz: np.ndarray, rgb: np.ndarray | None = None,
              binary: bool = True) -> None:
    """
    Write N points as a PLY vertex list, binary little-endian or ASCII.

    The vertices hold ``x y z`` float32 (N x 3) and, with ``rgb`` (N x 3 uint8), ``red green blue``
    uchar.
    """
    xyz = np.asarray(xyz, np.float32)
    if xyz.ndim != 2 or xyz.shape[1] != 3:
        raise ImageFormatError(f'PLY points must be Nx3, got shape {xyz.shape}')
    if rgb is not None and np.shape(rgb) != xyz.shape:
        raise ImageFormatError(f'PLY colours must be Nx3 like the points {xyz.shape}, got '
                               f'{np.shape(rgb)}')
    vertices = np.empty(len(xyz), _ply_dtype(rgb is not None))
    for axis, name in enumerate(_PLY_XYZ):
        vertices[name] = xyz[:, axis]
    if rgb is not None:
        for channel, name in enumerate(_PLY_RGB):
            vertices[name] = np.asarray(rgb)[:, channel]
    properties = ''.join(f'property {"float" if name in _PLY_XYZ else "uchar"} {name}\n'
                         for name in vertices.dtype.names)
    header = (f'ply\nformat {"binary_little_endian" if binary else "ascii"} 1.0\n'
              f'comment cl_vision_nodes\nelement vertex {len(vertices)}\n{properties}'
              'end_header\n').encode('ascii')
    if binary:
        body = vertices.tobytes()
    else:
        text = io.StringIO()
        np.savetxt(text, vertices, fmt=['%.9g'] * 3 + ['%d'] * (len(vertices.dtype) - 3))
        body = text.getvalue().encode('ascii')
    _write_bytes(path, header + body)


def read_ply(path: PathLike) -> tuple[np.ndarray, np.ndarray | None]:
    """
    Read a PLY vertex list as written by ``write_ply``, from binary little-endian or ASCII files.

    Returns (N x 3 float32 xyz, N x 3 uint8 rgb or None).
    """
    data = _read_bytes(path)
    end = data.find(b'end_header\n')
    if not data.startswith(b'ply\n') or end < 0:
        raise DataFormatError(f'{path}: not a PLY file (no ply ... end_header header)')
    lines = data[:end].decode('ascii', 'replace').splitlines()[1:]
    body = data[end + len(b'end_header\n'):]
    fmt, count, names, types = None, None, [], []
    for line in lines:
        words = line.split()
        if words[:1] == ['format'] and len(words) == 3:
            fmt = words[1]
        elif words[:2] == ['element', 'vertex'] and len(words) == 3 and words[2].isdigit():
            count = int(words[2])
        elif words[:1] == ['property'] and len(words) == 3 and words[1] in _PLY_TYPES:
            types.append(words[1])
            names.append(words[2])
        elif words and words[0] not in ('comment', 'obj_info'):
            raise DataFormatError(f'{path}: unsupported PLY header line {line!r}')
    rgb = tuple(names) == _PLY_XYZ + _PLY_RGB
    if fmt not in _PLY_FORMATS or count is None or not (tuple(names) == _PLY_XYZ or rgb) \
            or types != ['float'] * 3 + ['uchar'] * (3 if rgb else 0):
        raise DataFormatError(f'{path}: expected a binary_little_endian or ascii PLY of '
                              'vertices with float x y z [uchar red green blue]')
    dtype = _ply_dtype(rgb)
    if fmt == 'ascii':
        table = np.loadtxt(body.decode('ascii').splitlines(), ndmin=2) if count else \
            np.empty((0, len(names)))
        if table.shape != (count, len(names)):
            raise DataFormatError(f'{path}: PLY says {count} vertices of {len(names)} values, '
                                  f'file has {table.shape}')
        xyz = table[:, :3].astype(np.float32)
        return xyz, table[:, 3:].astype(np.uint8) if rgb else None
    if len(body) != count * dtype.itemsize:
        raise DataFormatError(f'{path}: PLY of {count} vertices needs {count * dtype.itemsize} '
                              f'data bytes, file has {len(body)}')
    vertices = np.frombuffer(body, dtype)
    xyz = np.stack([vertices[name] for name in _PLY_XYZ], axis=1).astype(np.float32)
    colours = np.stack([vertices[name] for name in _PLY_RGB], axis=1) if rgb else None
    return xyz, colours
