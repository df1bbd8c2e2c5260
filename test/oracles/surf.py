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
NumPy references of the SURF kernels, for the kernel tests (test/test_surf_kernels.py).

Each states its stage from OpenCV's surf.cpp (opencv_contrib, xfeatures2d) and this package's
documented deviations, and imports nothing from the device code it checks: the filter sizes,
sample tables and Gaussian weights are restated here.

- ``hessian_layer``: after ``calcLayerDetAndTrace``: integer box sums, each lobe weighted by
  sign / area in float64 and rounded to float32 like OpenCV's double accumulation, then
  ``det = Dxx Dyy - 0.81 Dxy^2`` in float32. The kernel's factored integer form rounds to the
  same float32 values, so the tests compare bit for bit.
- ``orientation``: OpenCV's (``SURFInvoker``), in its float32 arithmetic operation by operation
  (the kernel's too, as it has no fma), so the angles are bit for bit where division and the
  other basic operations are correctly rounded.
- ``descriptors``: OpenCV's window and layout with this package's cell sampling (the exact mean
  of the image over an axis-aligned square per cell, see surf/describe.py), computed in float64
  from the image pixels (overlap areas), not from the integral image as the kernel does.
  Exact at multiples of 90 degrees, where the kernel's float32 sincos is not (see the tests).
"""
from __future__ import annotations

import numpy as np

HAAR_SIZE0, HAAR_SIZE_INC = 9, 6
"""OpenCV's SURF_HAAR_SIZE0 / SURF_HAAR_SIZE_INC: layer filters of (9 + 6 layer) 2^octave."""
ORI_RADIUS, ORI_SIGMA = 6, 2.5
"""Orientation samples: integer (i, j), i^2 + j^2 <= 6^2, Gaussian of sigma 2.5 (units of s)."""
ORI_SEARCH_INC, ORI_WIN = 5, 60
"""The orientation window: 60 degrees, slid in 5-degree steps."""
PATCH_SZ, DESC_SIGMA = 20, 3.3
"""Descriptor: 20x20 differences of a 21x21 cell patch, Gaussian of sigma 3.3 cells."""
FLT_EPSILON = float(np.finfo(np.float32).eps)

# OpenCV's 9x9 patterns: (x1, y1, x2, y2, weight) per lobe.
DXX = ((0, 2, 3, 7, 1), (3, 2, 6, 7, -2), (6, 2, 9, 7, 1))
DYY = ((2, 0, 7, 3, 1), (2, 3, 7, 6, -2), (2, 6, 7, 9, 1))
DXY = ((1, 1, 4, 4, 1), (5, 1, 8, 4, -1), (1, 5, 4, 8, -1), (5, 5, 8, 8, 1))

F32 = np.float32


def integral(image: np.ndarray) -> np.ndarray:
    """Return the (H+1)x(W+1) uint32 integral of an 8-bit image, zero first row and column."""
    out = np.zeros((image.shape[0] + 1, image.shape[1] + 1), np.uint32)
    out[1:, 1:] = image.astype(np.uint64).cumsum(0).cumsum(1)
    return out


def filter_size(octave: int, layer: int) -> int:
    """Side of the Hessian filters of a layer: (9 + 6 layer) 2^octave."""
    return (HAAR_SIZE0 + HAAR_SIZE_INC * layer) << octave


def _edge(size: int, k: int) -> int:
    """Return cvRound(float(size) / 9 * k), OpenCV's resizeHaarPattern (no ties occur)."""
    return int(np.rint(F32(size) / F32(9) * F32(k)))


def _pattern(sums: np.ndarray, tops: np.ndarray, lefts: np.ndarray, size: int,
             lobes: tuple[tuple[int, int, int, int, int], ...]) -> np.ndarray:
    total = np.zeros(tops.shape, np.float64)
    for x1, y1, x2, y2, weight in lobes:
        ex1, ey1, ex2, ey2 = (_edge(size, k) for k in (x1, y1, x2, y2))
        area = F32(ex2 - ex1) * F32(ey2 - ey1)
        w = np.float64(F32(weight) / area)
        total += _box(sums, tops + ey1, lefts + ex1, tops + ey2, lefts + ex2) * w
    return total.astype(np.float32)


def _box(sums: np.ndarray, top: np.ndarray | int, left: np.ndarray | int,
         bottom: np.ndarray | int, right: np.ndarray | int) -> np.ndarray:
    """Sum of the pixels in rows [top, bottom) and columns [left, right), as int64."""
    return (sums[bottom, right].astype(np.int64) - sums[top, right] - sums[bottom, left]
            + sums[top, left])


def hessian_layer(sums: np.ndarray, octave: int, layer: int) -> np.ndarray:
    """
    Hessian determinant of one layer on its (H >> octave) x (W >> octave) grid.

    0 where the filter does not fit; sample (i, j) has its filter's top-left corner at
    2^octave (i - m, j - m), m = (size // 2) >> octave.
    """
    height, width = sums.shape[0] - 1, sums.shape[1] - 1
    step = 1 << octave
    size = filter_size(octave, layer)
    det = np.zeros((height >> octave, width >> octave), np.float32)
    if size > height or size > width:
        return det
    rows = 1 + (height - size) // step
    cols = 1 + (width - size) // step
    tops, lefts = np.meshgrid(np.arange(rows) * step, np.arange(cols) * step, indexing='ij')
    dxx = _pattern(sums, tops, lefts, size, DXX)
    dyy = _pattern(sums, tops, lefts, size, DYY)
    dxy = _pattern(sums, tops, lefts, size, DXY)
    margin = (size // 2) >> octave
    det[margin:margin + rows, margin:margin + cols] = dxx * dyy - F32(0.81) * dxy * dxy
    return det


def gaussian_taps(size: int, sigma: float) -> np.ndarray:
    """
    Gaussian taps: exp(-x^2 / 2 sigma^2) about the middle, summed to 1 in float64, as float32.

    That is ``cv2.getGaussianKernel(size, sigma, CV_32F)`` for odd sizes; for even ones its
    bit-exact version sets the two middle taps as if at offset 0 (opencv issue 15856), which
    the kernel's descriptor weights do not follow.
    """
    x = np.arange(size) - (size - 1) / 2
    taps = np.exp(-x * x / (2 * sigma * sigma))
    return (taps / taps.sum()).astype(np.float32)


def fast_atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """
    Angle of (x, y) in degrees, [0, 360], as OpenCV's ``fastAtan2`` computes it in float32.

    A 7th-order polynomial of min(|x|, |y|) / max(|x|, |y|), OpenCV's scalar form (no fma).
    """
    y, x = np.asarray(y, np.float32), np.asarray(x, np.float32)
    deg = F32(180 / np.pi)
    p1, p3 = F32(0.9997878412794807) * deg, F32(-0.3258083974640975) * deg
    p5, p7 = F32(0.1555786518463281) * deg, F32(-0.04432655554792128) * deg
    eps = F32(np.finfo(np.float64).eps)
    ax, ay = np.abs(x), np.abs(y)
    steep = ax < ay
    c = np.where(steep, ax, ay) / (np.where(steep, ay, ax) + eps)
    c2 = c * c
    a = (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c
    a = np.where(steep, F32(90) - a, a)
    a = np.where(x < 0, F32(180) - a, a)
    return np.where(y < 0, F32(360) - a, a).astype(np.float32)


def _orientation_samples() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Orientation samples in OpenCV's order (i outer, j inner).

    i, j (float32) and the float32 weight G[i] G[j], G = 13 Gaussian taps of sigma 2.5.
    """
    taps = gaussian_taps(2 * ORI_RADIUS + 1, ORI_SIGMA)
    i, j = (a.ravel() for a in np.mgrid[-ORI_RADIUS:ORI_RADIUS + 1, -ORI_RADIUS:ORI_RADIUS + 1])
    disc = i * i + j * j <= ORI_RADIUS ** 2
    i, j = i[disc], j[disc]
    return i.astype(np.float32), j.astype(np.float32), taps[i + ORI_RADIUS] * taps[j + ORI_RADIUS]


def orientation(sums: np.ndarray, x: np.ndarray, y: np.ndarray, size: np.ndarray,
                upright: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """
    Angles (float32 degrees, NaN where invalid) and validity of keypoints on ``sums``.

    Per keypoint, s = 1.2 size / 9 and Haar wavelets of side g = 2 round(2 s): invalid if g
    exceeds the integral image. Sample k at (x + i s - (g - 1) / 2, y + j s - (g - 1) / 2),
    rounded, is used where its wavelet lies inside; its response is (right - left, top - bottom)
    half-box sums / (g^2 / 2) times its weight, its angle fastAtan2 of it rounded to a degree.
    For each direction 0, 5, ... 355 the responses whose angle is less than 30 degrees away are
    summed in sample order; the first largest sum (x^2 + y^2 > 0) gives the angle
    fastAtan2(-y, x). Invalid without any sample inside. Upright: 270 where valid.
    """
    height, width = sums.shape[0] - 1, sums.shape[1] - 1
    si, sj, weight = _orientation_samples()
    angles = np.full(len(x), np.nan, np.float32)
    valid = np.zeros(len(x), bool)
    for k in range(len(x)):
        s = F32(size[k]) * F32(1.2) / F32(9)
        grad = 2 * int(np.rint(F32(2) * s))
        if grad > height + 1 or grad > width + 1:
            continue
        if upright:
            angles[k], valid[k] = 270, True
            continue
        half = F32(grad - 1) / F32(2)
        left = np.rint(F32(x[k]) + si * s - half).astype(np.int64)
        top = np.rint(F32(y[k]) + sj * s - half).astype(np.int64)
        inside = (left >= 0) & (left < width + 1 - grad) & (top >= 0) & (top < height + 1 - grad)
        if not inside.any():
            continue
        left, top, w = left[inside], top[inside], weight[inside]
        mid = grad // 2
        norm = F32(1) / (F32(mid) * F32(grad))
        vx = (_box(sums, top, left + mid, top + grad, left + grad)
              - _box(sums, top, left, top + grad, left + mid)).astype(np.float32) * norm * w
        vy = (_box(sums, top, left, top + mid, left + grad)
              - _box(sums, top + mid, left, top + grad, left + grad)).astype(np.float32) * norm * w
        sample_deg = np.rint(fast_atan2(vy, vx)).astype(np.int64)
        best, best_x, best_y = F32(0), F32(0), F32(0)
        for direction in range(0, 360, ORI_SEARCH_INC):
            d = np.abs(sample_deg - direction)
            near = (d < ORI_WIN // 2) | (d > 360 - ORI_WIN // 2)
            # float32 sums in sample order (np.sum would add pairwise)
            sum_x = np.cumsum(np.where(near, vx, F32(0)), dtype=np.float32)[-1]
            sum_y = np.cumsum(np.where(near, vy, F32(0)), dtype=np.float32)[-1]
            length = sum_x * sum_x + sum_y * sum_y
            if length > best:
                best, best_x, best_y = length, sum_x, sum_y
        angles[k], valid[k] = fast_atan2(-best_y, best_x), True
    return angles, valid


def _overlaps(start: np.ndarray, side: float, count: int) -> np.ndarray:
    """Return len(start) x count: the length of [start, start + side] in pixel [c, c + 1]."""
    c = np.arange(count)
    return np.clip(np.minimum(c + 1, start[:, None] + side) - np.maximum(c, start[:, None]),
                   0, None)


def _cell_means(image: np.ndarray, cx: np.ndarray, cy: np.ndarray, side: float) -> np.ndarray:
    """
    Mean of the image over the side x side squares centred on (cx, cy).

    The image is constant on each pixel, (c, r) covering [c, c + 1] x [r, r + 1], so pixel
    coordinate p sits at p + 0.5. A square crossing the border is moved inside the image (a
    side over the image's shrinks to it).
    """
    height, width = image.shape
    side_x, side_y = min(side, width), min(side, height)
    left = np.clip(cx + 0.5 - side_x / 2, 0, width - side_x)
    top = np.clip(cy + 0.5 - side_y / 2, 0, height - side_y)
    wx = _overlaps(left, side_x, width)
    wy = _overlaps(top, side_y, height)
    return np.einsum('kr,rc,kc->k', wy, image.astype(np.float64), wx) / (side_x * side_y)


def _cos_sin(degrees: float) -> tuple[float, float]:
    """
    Cosine and sine of an angle in degrees, exact at multiples of 90.

    At upright keypoints' 270, cells moved inside the image at a border then coincide exactly.
    """
    quarters, rest = divmod(float(degrees), 90.0)
    cos_a, sin_a = np.cos(np.radians(rest)), np.sin(np.radians(rest))
    for _ in range(int(quarters) % 4):
        cos_a, sin_a = -sin_a, cos_a
    return cos_a, sin_a


def _patch_differences(image: np.ndarray, x: np.ndarray, y: np.ndarray, size: np.ndarray,
                       angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Weighted differences dx, dy (N x 20 x 20 float64) of keypoints with ``angle`` in degrees.

    OpenCV's window: int(21 s) pixels, s = 1.2 size / 9 (float32), as a 21 x 21 patch of cells
    of side r = int(21 s) / 21 whose centres are (x, y) + (c - 10) r (cos a, sin a) +
    (l - 10) r (-sin a, cos a) for column c and row l; here each cell is the mean of the image
    over the r x r square about its centre (``_cell_means``). Over 2 x 2 cells
    dx = right - left and dy = bottom - top, each summed over both rows (columns), times the
    Gaussian G[l] G[c] (20 taps of sigma 3.3).
    """
    taps = gaussian_taps(PATCH_SZ, DESC_SIGMA).astype(np.float64)
    weights = np.outer(taps, taps)
    offsets = np.arange(PATCH_SZ + 1) - PATCH_SZ // 2
    column, row = np.meshgrid(offsets, offsets)
    dx = np.zeros((len(x), PATCH_SZ, PATCH_SZ))
    dy = np.zeros_like(dx)
    for k in range(len(x)):
        s = F32(size[k]) * F32(1.2) / F32(9)
        side = int(F32(PATCH_SZ + 1) * s) / (PATCH_SZ + 1)
        cos_a, sin_a = _cos_sin(angle[k])
        u, v = column * side, row * side
        cx = x[k] + u * cos_a - v * sin_a
        cy = y[k] + u * sin_a + v * cos_a
        p = _cell_means(image, cx.ravel(), cy.ravel(), side).reshape(cx.shape)
        dx[k] = (p[:-1, 1:] - p[:-1, :-1] + p[1:, 1:] - p[1:, :-1]) * weights
        dy[k] = (p[1:, :-1] - p[:-1, :-1] + p[1:, 1:] - p[:-1, 1:]) * weights
    return dx, dy


def _subregion_sums(dx: np.ndarray, dy: np.ndarray, extended: bool) -> np.ndarray:
    """
    Unnormalised descriptors, N x 64 (N x 128 if ``extended``), from the differences.

    Per 4 x 4 subregion of 5 x 5 differences, row-major: sum dx, sum dy, sum |dx|, sum |dy|;
    extended: sum dx and sum |dx| where dy >= 0, the same where dy < 0, sum dy and sum |dy|
    where dx >= 0, the same where dx < 0.
    """
    if extended:
        parts = (np.where(dy >= 0, dx, 0), np.where(dy >= 0, abs(dx), 0),
                 np.where(dy < 0, dx, 0), np.where(dy < 0, abs(dx), 0),
                 np.where(dx >= 0, dy, 0), np.where(dx >= 0, abs(dy), 0),
                 np.where(dx < 0, dy, 0), np.where(dx < 0, abs(dy), 0))
    else:
        parts = (dx, dy, abs(dx), abs(dy))
    n = len(dx)
    blocks = [part.reshape(n, 4, 5, 4, 5).sum(axis=(2, 4)) for part in parts]
    return np.stack(blocks, axis=-1).reshape(n, -1)


def descriptors(image: np.ndarray, x: np.ndarray, y: np.ndarray, size: np.ndarray,
                angle: np.ndarray, extended: bool = False) -> np.ndarray:
    """
    Descriptors, N x 64 (N x 128 if ``extended``) float64, of keypoints with ``angle`` (deg).

    The subregion sums of the differences, scaled by 1 / (L2 norm + FLT_EPSILON) as OpenCV
    scales them.
    """
    vectors = _subregion_sums(*_patch_differences(image, x, y, size, angle), extended)
    return vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + FLT_EPSILON)
