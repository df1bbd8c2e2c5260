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
NumPy references of the kernels in ``kernels/elas/*.cl``, one function per device stage.

They exist for the kernel tests (test/test_elas_kernels.py) and follow libelas (elas.cpp,
descriptor.cpp, filter.cpp) statement by statement where the order matters: the support point
removals and the flood fill are sequential Python loops in libelas' loop order, float arithmetic
is float32 where libelas computes in float. They are meant for small images.

Conventions: images HxW uint8; descriptors HxWx16 uint8; the candidate lattice is
(lattice_h, lattice_w) int32 with -1 = no support point; points are (N, 3) int32 rows (u, v, d)
in libelas' order; disparity maps are float32 with libelas' markers (-1 no match, -10 invalid).
"""
from __future__ import annotations

from collections import deque

from cl_vision_nodes.elas.schema import ElasSettings
import numpy as np

INVALID_MATCH = np.float32(-1.0)
INVALID_FILL = np.float32(-10.0)
DESCRIPTOR_TAPS = (  # (image, dv, du) of the 16 descriptor bytes: 0 = du, 1 = dv
    (0, -2, 0), (0, -1, -2), (0, -1, 0), (0, -1, 2), (0, 0, -1), (0, 0, 0), (0, 0, 0),
    (0, 0, 1), (0, 1, -2), (0, 1, 0), (0, 1, 2), (0, 2, 0), (1, -1, 0), (1, 0, -1), (1, 0, 1),
    (1, 1, 0))


def sobel(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Compute filter::sobel3x3, saturated; the one-pixel border (never read) is 128.

    du = ([1 2 1]^T * [1 0 -1]) >> 2 + 128, dv = ([1 0 -1]^T * [1 2 1]) >> 2 + 128.
    """
    i = img.astype(np.int32)
    smooth = i[:-2] + 2 * i[1:-1] + i[2:]  # rows 1..H-2
    diff = i[:-2] - i[2:]
    du = np.full(img.shape, 128, np.uint8)
    dv = np.full(img.shape, 128, np.uint8)
    du[1:-1, 1:-1] = np.clip((smooth[:, :-2] - smooth[:, 2:]) // 4 + 128, 0, 255)
    dv[1:-1, 1:-1] = np.clip((diff[:, :-2] + 2 * diff[:, 1:-1] + diff[:, 2:]) // 4 + 128, 0, 255)
    return du, dv


def descriptor(img: np.ndarray, subsampling: bool = False) -> np.ndarray:
    """
    Compute Descriptor::createDescriptor; zero outside u in [3, W-4], v in [3, H-4].

    With subsampling, only even v >= 4.
    """
    h, w = img.shape
    du, dv = sobel(img)
    out = np.zeros((h, w, 16), np.uint8)
    rows = np.arange(4 if subsampling else 3, h - 3, 2 if subsampling else 1)
    cols = np.arange(3, w - 3)
    for k, (which, oy, ox) in enumerate(DESCRIPTOR_TAPS):
        source = dv if which else du
        out[rows[:, None], cols[None, :], k] = source[rows[:, None] + oy, cols[None, :] + ox]
    return out


def _sad(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a.astype(np.int32) - b.astype(np.int32)).sum())


def _texture(desc: np.ndarray) -> int:
    return int(np.abs(desc.astype(np.int32) - 128).sum())


def support_match(ref: np.ndarray, tgt: np.ndarray, u: int, v: int, right: bool,
                  s: ElasSettings) -> int:
    """Elas::computeMatchingDisparity (with the demotion of the best into second place)."""
    h, w = ref.shape[:2]
    if not (5 <= u <= w - 6 and 5 <= v <= h - 6) or _texture(ref[v, u]) < s.support_texture:
        return -1
    d_lo = max(s.disp_min, 0)
    d_hi = min(s.disp_max, w - u - 5 if right else u - 5)
    if d_hi - d_lo < 10:
        return -1
    blocks = [(dy, dx) for dy in (-2, 2) for dx in (-2, 2)]
    min1, min1_d, min2, min2_d = 32767, -1, 32767, -1
    for d in range(d_lo, d_hi + 1):
        uw = u + d if right else u - d
        e = sum(_sad(ref[v + dy, u + dx], tgt[v + dy, uw + dx]) for dy, dx in blocks)
        if e < min1:
            min1, min1_d, min2, min2_d = e, d, min1, min1_d
        elif e < min2:
            min2, min2_d = e, d
    ok = min1_d >= 0 and min2_d >= 0 and np.float32(min1) < np.float32(
        np.float32(s.support_threshold) * np.float32(min2))
    return min1_d if ok else -1


def support_candidates(desc_l: np.ndarray, desc_r: np.ndarray, s: ElasSettings) -> np.ndarray:
    """
    Return the D_can lattice before the removals.

    Row 0 and column 0 hold 0 (libelas' calloc).
    """
    h, w = desc_l.shape[:2]
    step = s.step
    lat_h, lat_w = -(-h // step), -(-w // step)
    dcan = np.zeros((lat_h, lat_w), np.int32)
    for vc in range(1, lat_h):
        for uc in range(1, lat_w):
            u, v = uc * step, vc * step
            d = support_match(desc_l, desc_r, u, v, False, s)
            result = -1
            if d >= 0:
                d2 = support_match(desc_r, desc_l, u - d, v, True, s)
                if d2 >= 0 and abs(d - d2) <= s.lr_threshold:
                    result = d
            dcan[vc, uc] = result
    return dcan


def remove_inconsistent(dcan: np.ndarray, s: ElasSettings) -> np.ndarray:
    """removeInconsistentSupportPoints, in place in u-major order as libelas."""
    out = dcan.copy()
    lat_h, lat_w = out.shape
    r = s.incon_window_size
    for u in range(lat_w):
        for v in range(lat_h):
            d = out[v, u]
            if d < 0:
                continue
            win = out[max(v - r, 0):v + r + 1, max(u - r, 0):u + r + 1]
            support = int(((win >= 0) & (np.abs(win - d) <= s.incon_threshold)).sum())
            if support < s.incon_min_support:
                out[v, u] = -1
    return out


def remove_redundant(dcan: np.ndarray, vertical: bool) -> np.ndarray:
    """removeRedundantSupportPoints(D_can, 5, 1, vertical), in place in u-major order."""
    out = dcan.copy()
    lat_h, lat_w = out.shape
    du, dv = (0, 1) if vertical else (1, 0)
    for u in range(lat_w):
        for v in range(lat_h):
            d = out[v, u]
            if d < 0:
                continue
            redundant = True
            for sign in (-1, 1):
                support = False
                for j in range(1, 6):
                    u2, v2 = u + sign * j * du, v + sign * j * dv
                    if not (0 <= u2 < lat_w and 0 <= v2 < lat_h):
                        break
                    if out[v2, u2] >= 0 and abs(int(d) - int(out[v2, u2])) <= 1:
                        support = True
                        break
                if not support:
                    redundant = False
                    break
            if redundant:
                out[v, u] = -1
    return out


def support_points(dcan: np.ndarray, step: int, width: int, height: int,
                   add_corners: bool) -> np.ndarray:
    """Return the support point vector (u-major lattice order), then addCornerSupportPoints."""
    points = [(uc * step, vc * step, int(dcan[vc, uc]))
              for uc in range(1, dcan.shape[1]) for vc in range(1, dcan.shape[0])
              if dcan[vc, uc] >= 0]
    if add_corners:
        border = [[0, 0, 0], [0, height - 1, 0], [width - 1, 0, 0], [width - 1, height - 1, 0]]
        for corner in border:
            best = 10_000_000
            for u, v, d in points:
                dist = (corner[0] - u) ** 2 + (corner[1] - v) ** 2
                if dist < best:
                    best, corner[2] = dist, d
        border.append([border[2][0] + border[2][2], border[2][1], border[2][2]])
        border.append([border[3][0] + border[3][2], border[3][1], border[3][2]])
        points += [tuple(corner) for corner in border]
    return np.array(points, np.int32).reshape(-1, 3)


def view_coordinates(points: np.ndarray, right_view: bool) -> np.ndarray:
    """(x, y) of the points in the view: (u, v) left, (u - d, v) right."""
    x = points[:, 0] - points[:, 2] if right_view else points[:, 0]
    return np.stack([x, points[:, 1]], axis=1)


def planes(points: np.ndarray, triangles: np.ndarray, right_view: bool) -> np.ndarray:
    """
    Compute libelas' computeDisparityPlanes for one view.

    Returns (a, b, c, prior valid) float32 per triangle.
    """
    out = np.zeros((len(triangles), 4), np.float32)
    for k, corners in enumerate(triangles):
        p = points[corners].astype(np.float64)
        solved = []
        for shift in (0.0, 1.0):  # left plane in (u, v), right plane in (u - d, v)
            a = np.stack([p[:, 0] - shift * p[:, 2], p[:, 1], np.ones(3)], axis=1)
            if round(np.linalg.det(a)) == 0:
                solved.append(np.zeros(3, np.float32))
            else:
                solved.append(np.linalg.solve(a, p[:, 2]).astype(np.float32))
        own, other = (solved[1], solved[0]) if right_view else (solved[0], solved[1])
        valid = abs(float(own[0])) < 0.7 and abs(float(other[0])) < 0.7
        out[k] = (*own, 1.0 if valid else 0.0)
    return out


def grid_lists(points: np.ndarray, right_view: bool, grid_size: int, width: int, height: int,
               disp_max: int) -> np.ndarray:
    """createGrid: (grid_h * grid_w, disp_max + 2) int32 rows [count, d_1, d_2, ...]."""
    grid_w, grid_h = -(-width // grid_size), -(-height // grid_size)
    temp1 = np.zeros((grid_h * grid_w, disp_max + 1), bool)
    for u, v, d in points:
        x = int(np.floor(np.float32(u - d) / np.float32(grid_size))) if right_view \
            else u // grid_size
        y = v // grid_size
        if 0 <= x < grid_w and 0 <= y < grid_h:
            temp1[y * grid_w + x, max(d - 1, 0):min(d + 1, disp_max) + 1] = True
    temp2 = np.zeros_like(temp1)
    n = grid_w * grid_h
    for c in range(grid_w + 1, n - grid_w - 1):  # libelas' flat pointer walk
        for off in (-grid_w - 1, -grid_w, -grid_w + 1, -1, 0, 1, grid_w - 1, grid_w, grid_w + 1):
            temp2[c] |= temp1[c + off]
    lists = np.zeros((n, disp_max + 2), np.int32)
    for c in range(n):
        ds = np.flatnonzero(temp2[c])
        lists[c, 0] = len(ds)
        lists[c, 1:1 + len(ds)] = ds
    return lists


def _slope(tu: list, tv: list, i: int, j: int) -> np.float32:
    """dv/du of the line through corners i and j; 0 if their (integer) u are equal."""
    if int(tu[i]) == int(tu[j]):
        return np.float32(0)
    return np.float32(tv[i] - tv[j]) / np.float32(tu[i] - tu[j])


def raster(points: np.ndarray, triangles: np.ndarray, keys: np.ndarray, right_view: bool,
           width: int, height: int, subsampling: bool) -> np.ndarray:
    """
    Compute the scan conversion of libelas' computeDisparity.

    Per pixel, the largest key of the triangles that visit it (the device's order of "later
    triangle wins"), -1 where none does.
    """
    f32 = np.float32
    out_w, out_h = (width // 2, height // 2) if subsampling else (width, height)
    owner = np.full((out_h, out_w), -1, np.int32)
    xy = view_coordinates(points, right_view)
    for corners, key in zip(triangles, keys):
        tu = [f32(xy[c, 0]) for c in corners]
        tv = [f32(xy[c, 1]) for c in corners]
        for j in range(3):
            for k in range(j):
                if tu[k] > tu[j]:
                    tu[j], tu[k] = tu[k], tu[j]
                    tv[j], tv[k] = tv[k], tv[j]
        au, bu, cu = int(tu[0]), int(tu[1]), int(tu[2])
        ab_a, ac_a, bc_a = _slope(tu, tv, 0, 1), _slope(tu, tv, 0, 2), _slope(tu, tv, 1, 2)
        ab_b, ac_b, bc_b = (f32(tv[0] - ab_a * tu[0]), f32(tv[0] - ac_a * tu[0]),
                            f32(tv[1] - bc_a * tu[1]))
        for lo, hi, a2, b2 in ((au, bu, ab_a, ab_b), (bu, cu, bc_a, bc_b)):
            if lo == hi:
                continue
            for u in range(max(lo, 0), min(hi, width)):
                if subsampling and u % 2:
                    continue
                v1 = int(f32(ac_a * f32(u)) + ac_b)
                v2 = int(f32(a2 * f32(u)) + b2)
                for v in range(max(min(v1, v2), 0), min(max(v1, v2), height)):
                    if subsampling and v % 2:
                        continue
                    i, j = (u // 2, v // 2) if subsampling else (u, v)
                    owner[j, i] = max(owner[j, i], key)
    return owner


def match(desc_ref: np.ndarray, desc_tgt: np.ndarray, owner: np.ndarray,
          planes_by_key: dict[int, np.ndarray], lists: np.ndarray, s: ElasSettings,
          right_view: bool) -> np.ndarray:
    """
    Run libelas' findMatch for every pixel of the owner map.

    The owner is the triangle that visited the pixel last.
    """
    h, w = desc_ref.shape[:2]
    prior = s.prior()
    radius = s.plane_radius
    grid_w = -(-w // s.grid_size)
    sign = 1 if right_view else -1
    out = np.full(owner.shape, INVALID_FILL, np.float32)
    for j, i in zip(*np.nonzero(owner >= 0)):
        u, v = (2 * i, 2 * j) if s.subsampling else (i, j)
        line = max(min(v, h - 3), 2)
        if u < 2 or u >= w - 2 or _texture(desc_ref[line, u]) < s.match_texture:
            continue
        a, b, c, valid = planes_by_key[int(owner[j, i])]
        d_plane = int(np.float32(np.float32(a * np.float32(u)) + np.float32(b * np.float32(v)))
                      + c)
        lo, hi = max(d_plane - radius, 0), min(d_plane + radius, s.disp_max)
        cell = lists[(v // s.grid_size) * grid_w + u // s.grid_size]
        best, best_d = 10000, -1
        candidates = [(int(d), 0) for d in cell[1:1 + cell[0]] if d < lo or d > hi]
        candidates += [(d, int(prior[abs(d - d_plane)]) if valid else 0)
                       for d in range(lo, hi + 1)]
        for d, bonus in candidates:
            uw = u + sign * d
            if uw < 2 or uw >= w - 2:
                continue
            val = _sad(desc_ref[line, u], desc_tgt[line, uw]) + bonus
            if val < best:
                best, best_d = val, d
        out[j, i] = np.float32(best_d) if best_d >= 0 else INVALID_MATCH
    return out


def lr_check(d1: np.ndarray, d2: np.ndarray, lr_threshold: int,
             subsampling: bool) -> tuple[np.ndarray, np.ndarray]:
    """leftRightConsistencyCheck: both maps checked against copies of each other."""
    h, w = d1.shape
    out1 = np.full_like(d1, INVALID_FILL)
    out2 = np.full_like(d2, INVALID_FILL)
    half = np.float32(2) if subsampling else np.float32(1)
    u = np.arange(w, dtype=np.float32)[None, :]
    for src, other, out, sign in ((d1, d2, out1, -1), (d2, d1, out2, 1)):
        warp = (u + np.float32(sign) * (src / half)).astype(np.float32)
        ok = (src >= 0) & (warp >= 0) & (warp < w)
        rows, cols = np.nonzero(ok)
        agree = np.abs(other[rows, warp[rows, cols].astype(np.int32)] - src[rows, cols]) \
            <= np.float32(lr_threshold)
        out[rows[agree], cols[agree]] = src[rows[agree], cols[agree]]
    return out1, out2


def remove_small_segments(d: np.ndarray, sim_threshold: float, min_size: int) -> np.ndarray:
    """removeSmallSegments: libelas' flood fill in its (u-major) order."""
    out = d.copy()
    h, w = d.shape
    done = np.zeros(d.shape, bool)
    thr = np.float32(sim_threshold)
    for u in range(w):
        for v in range(h):
            if done[v, u]:
                continue
            segment = [(v, u)]
            queue = deque(segment)
            done[v, u] = True
            while queue:
                cv, cu = queue.popleft()
                for nv, nu in ((cv, cu - 1), (cv, cu + 1), (cv - 1, cu), (cv + 1, cu)):
                    if (0 <= nv < h and 0 <= nu < w and not done[nv, nu] and d[nv, nu] >= 0
                            and abs(d[cv, cu] - d[nv, nu]) <= thr):
                        done[nv, nu] = True
                        segment.append((nv, nu))
                        queue.append((nv, nu))
            if len(segment) < min_size:
                for sv, su in segment:
                    out[sv, su] = INVALID_FILL
    return out


def _interpolate_line(line: np.ndarray, gap: int, extrapolate: bool) -> None:
    count = 0
    for u in range(len(line)):
        if line[u] >= 0:
            if 1 <= count <= gap and u - count > 0:
                d1, d2 = line[u - count - 1], line[u]
                line[u - count:u] = (d1 + d2) / np.float32(2) if abs(d1 - d2) < 3 \
                    else min(d1, d2)
            count = 0
        else:
            count += 1
    valid = np.flatnonzero(line >= 0)
    if extrapolate and len(valid):
        first, last = valid[0], valid[-1]
        line[max(first - gap, 0):first] = line[first]
        line[last:min(last + gap, len(line) - 1) + 1] = line[last]


def gap_interpolation(d: np.ndarray, gap: int, extrapolate: bool) -> np.ndarray:
    """
    Run libelas' gapInterpolation: rows, then columns.

    Each extrapolates to the borders if add_corners (the column one is libelas' 2014 addition,
    present in pyelas' copy).
    """
    out = d.copy()
    for row in out:
        _interpolate_line(row, gap, extrapolate)
    for col in out.T:
        _interpolate_line(col, gap, extrapolate)
    return out


def am_weight(taps: np.ndarray, centre: np.float32) -> np.ndarray:
    """Compute libelas' weight: its "abs" mask is the float 2^31 (0x4F000000), not 0x7FFFFFFF."""
    diff = (taps - centre).astype(np.float32)
    masked = (diff.view(np.uint32) & np.uint32(0x4F000000)).view(np.float32)
    return np.maximum(np.float32(4) - masked, np.float32(0))


def _am_window(taps: np.ndarray, first: int, centre: np.float32) -> np.float32 | None:
    """One filter window in libelas' ring-buffer lane order; None if not written."""
    n = len(taps)
    slots = np.empty(n, np.float32)
    slots[(first + np.arange(n)) % n] = taps  # val[p % n] = D[p]
    weights = am_weight(slots, centre)
    factors = (slots * weights).astype(np.float32)
    wl = weights[:4] + weights[4:] if n == 8 else weights
    fl = factors[:4] + factors[4:] if n == 8 else factors
    wsum = np.float32(np.float32(np.float32(wl[0] + wl[1]) + wl[2]) + wl[3])
    fsum = np.float32(np.float32(np.float32(fl[0] + fl[1]) + fl[2]) + fl[3])
    if not wsum > 0:
        return None
    value = np.float32(fsum / wsum)
    return value if value >= 0 else None


def adaptive_mean(d: np.ndarray, subsampling: bool) -> np.ndarray:
    """
    adaptiveMean.

    Deviation: where libelas reads its uninitialised temporary buffer (the unfiltered border rows
    and columns) the input value is used instead.
    """
    h, w = d.shape
    n, back = (4, 2) if subsampling else (8, 4)
    clean = np.where(d < 0, INVALID_FILL, d).astype(np.float32)
    tmp = clean.copy()
    for v in range(3, h - 3):
        for x in range(back, w - n + back + 1):
            value = _am_window(clean[v, x - back:x - back + n], x - back, clean[v, x])
            if value is not None:
                tmp[v, x] = value
    out = d.copy()
    for u in range(3, w - 3):
        for y in range(back, h - n + back + 1):
            value = _am_window(tmp[y - back:y - back + n, u], y - back, tmp[y, u])
            if value is not None:
                out[y, u] = value
    return out


def median(d: np.ndarray) -> np.ndarray:
    """
    Compute libelas' approximate median, at valid pixels only.

    7 taps horizontally, then vertically on that result (which is 0 outside the interior [3, W-4] x
    [3, H-4]).
    """
    h, w = d.shape
    tmp = np.zeros_like(d)
    out = d.copy()
    for v in range(3, h - 3):
        for u in range(3, w - 3):
            tmp[v, u] = np.sort(d[v, u - 3:u + 4])[3] if d[v, u] >= 0 else d[v, u]
    for v in range(3, h - 3):
        for u in range(3, w - 3):
            if d[v, u] >= 0:
                out[v, u] = np.sort(tmp[v - 3:v + 4, u])[3]
    return out
