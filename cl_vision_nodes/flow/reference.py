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
NumPy references of the kernels in ``kernels/flow/*.cl``, one function per kernel.

They exist for the kernel tests (test/test_flow_kernels.py): written for clarity, vectorised
only as far as keeps them short, float64 unless the kernel's integer arithmetic must be
reproduced exactly (block matching). Images are HxW, flow fields HxWx2, all 0..255 intensities.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

BINOMIAL = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0
DERIVATIVE = np.array([1.0, -8.0, 0.0, 8.0, -1.0]) / 12.0  # taps at offsets -2..2
LK_DAMPING = 0.1


def mirror(index: np.ndarray, n: int) -> np.ndarray:
    """Reflect-101 border for offsets up to one length, then clamped (kernel ``mirror``)."""
    index = np.abs(index)
    return np.clip((n - 1) - np.abs((n - 1) - index), 0, n - 1)


def pyr_down(img: np.ndarray) -> np.ndarray:
    """cv2.pyrDown: 5x5 binomial blur (reflect-101), every second pixel."""
    h, w = img.shape
    ys = 2 * np.arange((h + 1) // 2)[:, None] + np.arange(-2, 3)[None, :]
    xs = 2 * np.arange((w + 1) // 2)[:, None] + np.arange(-2, 3)[None, :]
    vertical = np.einsum('k,ykx->yx', BINOMIAL, img.astype(np.float64)[mirror(ys, h)])
    return np.einsum('k,yxk->yx', BINOMIAL, vertical[:, mirror(xs, w)])


def _odd_extend(img: np.ndarray, pad: int) -> np.ndarray:
    """Pad by odd reflection I(-k) = 2 I(0) - I(k) on both axes."""
    return np.pad(img.astype(np.float64), pad, mode='reflect', reflect_type='odd')


def gradient(img: np.ndarray) -> np.ndarray:
    """5-point central derivatives (d/dx, d/dy) of the odd-extended image, HxWx2."""
    h, w = img.shape
    padded = _odd_extend(img, 2)
    gx = sum(t * padded[2:2 + h, 2 + k:2 + k + w] for k, t in zip(range(-2, 3), DERIVATIVE))
    gy = sum(t * padded[2 + k:2 + k + h, 2:2 + w] for k, t in zip(range(-2, 3), DERIVATIVE))
    return np.stack([gx, gy], axis=-1)


def bilinear(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear samples of HxW or HxWxC ``img`` at (x, y), taps clamped to the image."""
    h, w = img.shape[:2]
    fx, fy = np.floor(x), np.floor(y)
    tx, ty = x - fx, y - fy
    x0, x1 = np.clip(fx, 0, w - 1).astype(int), np.clip(fx + 1, 0, w - 1).astype(int)
    y0, y1 = np.clip(fy, 0, h - 1).astype(int), np.clip(fy + 1, 0, h - 1).astype(int)
    if img.ndim == 3:
        tx, ty = tx[..., None], ty[..., None]
    top = img[y0, x0] * (1 - tx) + img[y0, x1] * tx
    bottom = img[y1, x0] * (1 - tx) + img[y1, x1] * tx
    return top * (1 - ty) + bottom * ty


def flow_upsample(coarse: np.ndarray, shape: tuple[int, int], factor: int = 2) -> np.ndarray:
    """Return factor x the bilinear sample of the coarse flow at (x/factor, y/factor)."""
    y, x = np.mgrid[:shape[0], :shape[1]].astype(np.float64)
    return factor * bilinear(coarse.astype(np.float64), x / factor, y / factor)


def window_filter(img: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Separable filter (rows, then columns) with replicated borders, any channel count."""
    radius = len(taps) // 2
    h, w = img.shape[:2]
    img = img.astype(np.float64)
    xs = np.clip(np.arange(w)[:, None] + np.arange(-radius, radius + 1), 0, w - 1)
    ys = np.clip(np.arange(h)[:, None] + np.arange(-radius, radius + 1), 0, h - 1)
    rows = np.tensordot(img[:, xs], taps, axes=([2], [0]))
    return np.tensordot(rows[ys], taps, axes=([1], [0]))


def lk_tensor(grad: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Windowed (Sxx, Sxy, Syy) and the smaller eigenvalue, HxWx4."""
    gx, gy = grad[..., 0].astype(np.float64), grad[..., 1].astype(np.float64)
    s = window_filter(np.stack([gx * gx, gx * gy, gy * gy], axis=-1), taps)
    half_trace, half_diff = 0.5 * (s[..., 0] + s[..., 2]), 0.5 * (s[..., 0] - s[..., 2])
    smallest = half_trace - np.sqrt(half_diff ** 2 + s[..., 1] ** 2)
    return np.concatenate([s, smallest[..., None]], axis=-1)


def lk_step(i0: np.ndarray, g0: np.ndarray, i1: np.ndarray, flow: np.ndarray,
            tensor: np.ndarray, taps: np.ndarray, min_eig: float, final: bool) -> np.ndarray:
    """
    One Gauss-Newton step over the whole image (a step of kernel lk_level).

    flow' = (S + d I)^-1 (window sum of q + d flow).
    """
    h, w = i0.shape
    y, x = np.mgrid[:h, :w].astype(np.float64)
    px, py = x + flow[..., 0], y + flow[..., 1]
    inside = (px >= 0) & (px <= w - 1) & (py >= 0) & (py <= h - 1)
    e = np.where(inside, bilinear(i1.astype(np.float64), px, py) - i0, 0.0)
    g = g0.astype(np.float64)
    q = g * (np.sum(g * flow, axis=-1) - e)[..., None]
    b = window_filter(q, taps) + LK_DAMPING * flow
    sxx, sxy, syy = tensor[..., 0] + LK_DAMPING, tensor[..., 1], tensor[..., 2] + LK_DAMPING
    det = sxx * syy - sxy * sxy
    out = np.stack([(syy * b[..., 0] - sxy * b[..., 1]) / det,
                    (sxx * b[..., 1] - sxy * b[..., 0]) / det], axis=-1)
    if final:
        out[~(tensor[..., 3] >= min_eig)] = np.nan
    return out


def lk_level(i0: np.ndarray, i1: np.ndarray, coarse: np.ndarray | None, taps: np.ndarray,
             iterations: int, min_eig: float, final: bool, tile: tuple[int, int],
             offset: int) -> np.ndarray:
    """
    Kernel lk_level: start flow, frame 0's gradient tensor, then per tile ``iterations`` steps.

    The start flow is ``coarse`` prolonged, or 0; the tensor is that of frame 0's 5-point gradient.
    Per (width, height) ``tile`` (origins k * tile - offset) the steps update the tile's pixels and
    see every other pixel at the start flow; with ``final``, NaN where the smaller eigenvalue is
    below ``min_eig``.
    """
    h, w = i0.shape
    start = np.zeros((h, w, 2)) if coarse is None else flow_upsample(coarse, (h, w))
    g0 = gradient(i0)
    tensor = lk_tensor(g0, taps)
    out = start.copy()
    y, x = np.mgrid[:h, :w]
    for oy in range(-offset, h, tile[1]):
        for ox in range(-offset, w, tile[0]):
            region = (x >= ox) & (x < ox + tile[0]) & (y >= oy) & (y < oy + tile[1])
            flow = start.copy()
            for _ in range(iterations):
                flow[region] = lk_step(i0, g0, i1, flow, tensor, taps, min_eig, False)[region]
            out[region] = flow[region]
    if final:
        out[~(tensor[..., 3] >= min_eig)] = np.nan
    return out


def cubic_weights(t: np.ndarray) -> np.ndarray:
    """Keys (a = -0.5) weights of taps -1, 0, 1, 2 at fraction t, stacked on a last axis."""
    return np.stack([((-0.5 * t + 1.0) * t - 0.5) * t, (1.5 * t - 2.5) * t * t + 1.0,
                     ((-1.5 * t + 2.0) * t + 0.5) * t, (0.5 * t - 0.5) * t * t], axis=-1)


def bicubic(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Keys bicubic samples of HxW or HxWxC ``img``, taps clamped to the image."""
    h, w = img.shape[:2]
    fx, fy = np.floor(x), np.floor(y)
    wx, wy = cubic_weights(x - fx), cubic_weights(y - fy)
    out = np.zeros(x.shape + img.shape[2:])
    for j in range(4):
        row = np.clip(fy.astype(int) - 1 + j, 0, h - 1)
        for k in range(4):
            col = np.clip(fx.astype(int) - 1 + k, 0, w - 1)
            weight = wy[..., j] * wx[..., k]
            out = out + (weight[..., None] if img.ndim == 3 else weight) * img[row, col]
    return out


def hs_warp(i0: np.ndarray, g0: np.ndarray, i1: np.ndarray, g1: np.ndarray,
            flow: np.ndarray) -> np.ndarray:
    """(Ix, Iy, It, 1) of the linearised data term, 0 where x + flow leaves frame 1."""
    h, w = i0.shape
    y, x = np.mgrid[:h, :w].astype(np.float64)
    px, py = x + flow[..., 0], y + flow[..., 1]
    inside = (px >= 0) & (px <= w - 1) & (py >= 0) & (py <= h - 1)
    value = bicubic(i1.astype(np.float64), px, py)
    grad = 0.5 * (bicubic(g1.astype(np.float64), px, py) + g0)
    terms = np.concatenate([grad, (value - i0)[..., None], np.ones((h, w, 1))], axis=-1)
    terms[~inside] = 0.0
    return terms


def _charbonnier_weight(d: np.ndarray, inv_eps2: float) -> np.ndarray:
    return 1.0 / np.sqrt(1.0 + d * d * inv_eps2)


def _sor_solution(terms: np.ndarray, flow: np.ndarray, dflow: np.ndarray, total: np.ndarray,
                  alpha2: float, omega: float, inv_eps_d2: float,
                  inv_eps_s2: float) -> tuple[np.ndarray, np.ndarray]:
    """
    Every pixel's over-relaxed point update, and whether it is defined (det > 0).

    The update is given its neighbours' u + du in ``total``.
    """
    h, w = flow.shape[:2]
    own = flow + dflow
    weight_sum = np.zeros((h, w, 2))
    pull = np.zeros((h, w, 2))
    padded = np.pad(total, ((1, 1), (1, 1), (0, 0)), mode='edge')
    for dy, dx in ((0, -1), (0, 1), (-1, 0), (1, 0)):
        other = padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
        exists = np.ones((h, w), bool)
        if dx:
            exists[:, 0 if dx < 0 else w - 1] = False
        else:
            exists[0 if dy < 0 else h - 1, :] = False
        e = _charbonnier_weight(other - own, inv_eps_s2) * exists[..., None]
        weight_sum += e
        pull += e * (other - flow)
    ix, iy, it, valid = (terms[..., k] for k in range(4))
    residual = it + ix * dflow[..., 0] + iy * dflow[..., 1]
    wd = valid * _charbonnier_weight(residual, inv_eps_d2)
    a11 = wd * ix * ix + alpha2 * weight_sum[..., 0]
    a12 = wd * ix * iy
    a22 = wd * iy * iy + alpha2 * weight_sum[..., 1]
    b1 = alpha2 * pull[..., 0] - wd * ix * it
    b2 = alpha2 * pull[..., 1] - wd * iy * it
    det = a11 * a22 - a12 * a12
    with np.errstate(divide='ignore', invalid='ignore'):
        solved = np.stack([a22 * b1 - a12 * b2, a11 * b2 - a12 * b1], axis=-1) / det[..., None]
    return dflow + omega * (solved - dflow), det > 0


def hs_sor(terms: np.ndarray, flow: np.ndarray, dflow: np.ndarray, offset: int, sweeps: int,
           alpha2: float, omega: float, inv_eps_d2: float, inv_eps_s2: float,
           tile: int) -> np.ndarray:
    """
    One hs_sor launch: per tile (origin k * tile - offset), ``sweeps`` red-black sweeps.

    They see the other tiles' u + du as they were at the launch start.
    """
    h, w = flow.shape[:2]
    start = flow + dflow
    out = dflow.copy()
    y, x = np.mgrid[:h, :w]
    for oy in range(-offset, h, tile):
        for ox in range(-offset, w, tile):
            region = (y >= oy) & (y < oy + tile) & (x >= ox) & (x < ox + tile)
            d, total = dflow.copy(), start.copy()
            for _ in range(sweeps):
                for parity in (0, 1):
                    update, defined = _sor_solution(terms, flow, d, total, alpha2, omega,
                                                    inv_eps_d2, inv_eps_s2)
                    chosen = region & ((x + y) % 2 == parity) & defined
                    d[chosen] = update[chosen]
                    total[chosen] = flow[chosen] + d[chosen]
            out[region] = d[region]
    return out


def hs_update(flow: np.ndarray, dflow: np.ndarray, median: bool) -> np.ndarray:
    """Add du to u, then optionally take the 5x5 median per component with replicated borders."""
    total = flow.astype(np.float64) + dflow
    if not median:
        return total
    h, w = total.shape[:2]
    padded = np.pad(total, ((2, 2), (2, 2), (0, 0)), mode='edge')
    windows = np.stack([padded[j:j + h, k:k + w] for j in range(5) for k in range(5)])
    return np.median(windows, axis=0)


def bm_search(i0: np.ndarray, i1: np.ndarray, block: int, radius: int,
              subpixel: bool) -> np.ndarray:
    """Kernel bm_search: per-block best displacement, exact integer costs and tie-break."""
    h, w = i0.shape
    q0 = np.clip(np.rint(i0), 0, 255).astype(np.int64)
    q1 = np.clip(np.rint(i1), 0, 255).astype(np.int64)
    flow = np.zeros((h, w, 2), np.float64)
    for y0 in range(0, h, block):
        for x0 in range(0, w, block):
            ref = q0[y0:y0 + block, x0:x0 + block]
            bh, bw = ref.shape

            def cost(dx: int, dy: int) -> int | None:
                ys, xs = np.arange(y0, y0 + bh) + dy, np.arange(x0, x0 + bw) + dx
                inside = ((ys >= 0) & (ys < h))[:, None] & ((xs >= 0) & (xs < w))[None, :]
                count = int(inside.sum())
                if 2 * count < bh * bw:
                    return None
                target = q1[np.clip(ys, 0, h - 1)][:, np.clip(xs, 0, w - 1)]
                sad = int(np.abs(ref - target)[inside].sum())
                return (sad << 10) // count

            keys = []
            for dy in range(-radius, radius + 1):
                for dx in range(-radius, radius + 1):
                    c = cost(dx, dy)
                    if c is not None:
                        keys.append((c, dx * dx + dy * dy, dy, dx))
            best, _, dy, dx = min(keys)
            vector = [float(dx), float(dy)]
            if subpixel:
                for axis, (ax, ay) in enumerate(((1, 0), (0, 1))):
                    costs = [cost(dx + sign * ax, dy + sign * ay)
                             if max(abs(dx + sign * ax), abs(dy + sign * ay)) <= radius else None
                             for sign in (-1, 1)]
                    left, right = costs
                    if left is None or right is None:
                        continue
                    curvature = float(left - 2 * best + right)
                    if curvature > 0:
                        vector[axis] += float(np.clip((left - right) / (2.0 * curvature),
                                                      -0.5, 0.5))
            flow[y0:y0 + bh, x0:x0 + bw] = vector
    return flow


# --- Dense inverse search (kernels/flow/dense_inverse_search.cl) ------------------------------

DIS_DET_MIN = 1e-3
DIS_SWEEPS = 5
DIS_OMEGA = 1.6
DIS_ZETA2 = 0.01
DIS_EPS2 = 1e-6


def dis_origins(n: int, patch: int, stride: int) -> np.ndarray:
    """Patch origins along an axis of ``n`` pixels: k * stride, the last one at n - patch."""
    count = -(-(n - patch) // stride) + 1
    return np.minimum(np.arange(count) * stride, n - patch)


def _dis_cost(i0: np.ndarray, g0: np.ndarray, i1: np.ndarray, ox: int, oy: int, patch: int,
              f: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean-normalised SSD of a patch against frame 1 at + f, and its descent sums b."""
    h, w = i0.shape
    px = np.clip(ox + f[0], -patch, w)
    py = np.clip(oy + f[1], -patch, h)
    y, x = np.mgrid[:patch, :patch].astype(np.float64)
    diff = bilinear(i1, px + x, py + y) - i0[oy:oy + patch, ox:ox + patch]
    grad = g0[oy:oy + patch, ox:ox + patch]
    n = patch * patch
    total = diff.sum()
    b = (diff[..., None] * grad).sum(axis=(0, 1)) - total * grad.sum(axis=(0, 1)) / n
    return float((diff * diff).sum() - total * total / n), b


def dis_search(i0: np.ndarray, g0: np.ndarray, i1: np.ndarray, dense: np.ndarray,
               sparse: np.ndarray | None, patch: int, stride: int,
               iterations: int) -> np.ndarray:
    """
    Kernel dis_search: one pass over the patch grid, (hs, ws, 2) patch flows.

    Starts from ``dense`` at the patch centres (``sparse`` None) or from the best of each
    patch's and its 4 neighbours' flows in ``sparse``; then at most ``iterations``
    inverse-compositional steps, stopping once the cost stops falling.
    """
    i0, g0, i1 = (a.astype(np.float64) for a in (i0, g0, i1))
    h, w = i0.shape
    oys, oxs = dis_origins(h, patch, stride), dis_origins(w, patch, stride)
    out = np.zeros((len(oys), len(oxs), 2))
    for ky, oy in enumerate(oys):
        for kx, ox in enumerate(oxs):
            grad = g0[oy:oy + patch, ox:ox + patch].reshape(-1, 2)
            mean = grad.mean(axis=0)
            centred = grad - mean
            hxx, hxy, hyy = ((centred[:, 0] ** 2).sum(), (centred[:, 0] * centred[:, 1]).sum(),
                             (centred[:, 1] ** 2).sum())
            det = max(hxx * hyy - hxy * hxy, DIS_DET_MIN)
            if sparse is None:
                start = dense[oy + patch // 2, ox + patch // 2].astype(np.float64)
            else:
                start = sparse[ky, kx].astype(np.float64)
                best = _dis_cost(i0, g0, i1, ox, oy, patch, start)[0]
                for ny, nx in ((ky, kx - 1), (ky, kx + 1), (ky - 1, kx), (ky + 1, kx)):
                    if 0 <= ny < len(oys) and 0 <= nx < len(oxs):
                        cost = _dis_cost(i0, g0, i1, ox, oy, patch, sparse[ny, nx])[0]
                        if cost < best:
                            best, start = cost, sparse[ny, nx].astype(np.float64)
            f, previous, last = start.copy(), start.copy(), np.inf
            for _ in range(iterations):
                cost, b = _dis_cost(i0, g0, i1, ox, oy, patch, f)
                if not cost < last:
                    f = previous
                    break
                last, previous = cost, f.copy()
                f = f - np.array([hyy * b[0] - hxy * b[1], hxx * b[1] - hxy * b[0]]) / det
            out[ky, kx] = start if np.sum((f - start) ** 2) > patch * patch else f
    return out


def dis_densify(i0: np.ndarray, i1: np.ndarray, sparse: np.ndarray, patch: int,
                stride: int) -> np.ndarray:
    """Kernel dis_densify: per pixel the covering patches' flows, weighted by 1/max(1, |error|)."""
    i0, i1 = i0.astype(np.float64), i1.astype(np.float64)
    h, w = i0.shape
    num, den = np.zeros((h, w, 2)), np.zeros((h, w))
    y, x = np.mgrid[:patch, :patch].astype(np.float64)
    for ky, oy in enumerate(dis_origins(h, patch, stride)):
        for kx, ox in enumerate(dis_origins(w, patch, stride)):
            f = sparse[ky, kx].astype(np.float64)
            error = bilinear(i1, ox + x + f[0], oy + y + f[1]) - i0[oy:oy + patch, ox:ox + patch]
            weight = 1.0 / np.maximum(1.0, np.abs(error))
            num[oy:oy + patch, ox:ox + patch] += weight[..., None] * f
            den[oy:oy + patch, ox:ox + patch] += weight
    return num / den[..., None]


def _central(img: np.ndarray, axis: int) -> np.ndarray:
    """(f[+1] - f[-1]) / 2 along ``axis`` (0: y, 1: x) with replicated borders."""
    n = img.shape[axis]
    ahead = np.take(img, np.minimum(np.arange(n) + 1, n - 1), axis=axis)
    behind = np.take(img, np.maximum(np.arange(n) - 1, 0), axis=axis)
    return 0.5 * (ahead - behind)


def dis_vr_terms(i0: np.ndarray, i1: np.ndarray,
                 flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Kernels dis_vr_warp and dis_vr_terms.

    t1 = (Ix, Iy, Iz, Ixz), t2 = (Iyz, Ixx, Ixy, Iyy) of the average of frame 0 and frame 1
    warped by ``flow`` and of their difference Iz.
    """
    h, w = i0.shape
    y, x = np.mgrid[:h, :w].astype(np.float64)
    warped = bilinear(i1.astype(np.float64), x + flow[..., 0], y + flow[..., 1])
    average, iz = 0.5 * (i0 + warped), warped - i0
    ix, iy = _central(average, 1), _central(average, 0)
    t1 = np.stack([ix, iy, iz, _central(iz, 1)], axis=-1)
    t2 = np.stack([_central(iz, 0), _central(ix, 1), _central(ix, 0), _central(iy, 0)], axis=-1)
    return t1, t2


def _dis_system(t1: np.ndarray, t2: np.ndarray, dflow: np.ndarray, g2: float,
                d2: float) -> tuple[np.ndarray, ...]:
    """Data-term coefficients a11, a12, a22, b1, b2 at the lagged dflow (OpenCV's)."""
    ix, iy, iz, ixz = (t1[..., k] for k in range(4))
    iyz, ixx, ixy, iyy = (t2[..., k] for k in range(4))
    du, dv = dflow[..., 0], dflow[..., 1]
    norm = ix * ix + iy * iy + DIS_ZETA2
    residual = iz + ix * du + iy * dv
    wd = d2 / np.sqrt(residual * residual / norm + DIS_EPS2) / norm
    nx, ny = ixx * ixx + ixy * ixy + DIS_ZETA2, iyy * iyy + ixy * ixy + DIS_ZETA2
    rx, ry = ixz + ixx * du + ixy * dv, iyz + ixy * du + iyy * dv
    wg = g2 / np.sqrt(rx * rx / nx + ry * ry / ny + DIS_EPS2)
    a11 = wd * ix * ix + DIS_ZETA2 + wg * (ixx * ixx / nx + ixy * ixy / ny)
    a12 = wd * ix * iy + wg * (ixx * ixy / nx + ixy * iyy / ny)
    a22 = wd * iy * iy + DIS_ZETA2 + wg * (ixy * ixy / nx + iyy * iyy / ny)
    b1 = -wd * iz * ix - wg * (ixx * ixz / nx + ixy * iyz / ny)
    b2 = -wd * iz * iy - wg * (ixy * ixz / nx + iyy * iyz / ny)
    return a11, a12, a22, b1, b2


def _dis_region_solver(t1: np.ndarray, t2: np.ndarray, flow: np.ndarray, dflow: np.ndarray,
                       a2: float, g2: float, d2: float) -> Callable[[np.ndarray], np.ndarray]:
    """
    Systems with weights lagged at ``dflow``: return the DIS_SWEEPS sweeps of one region.

    The returned function takes a region's mask and gives dflow with the region solved, the
    rest held at ``dflow`` (float64 inputs).
    """
    h, w = flow.shape[:2]
    a11, a12, a22, b1, b2 = _dis_system(t1, t2, dflow, g2, d2)
    total = flow + dflow
    fwd_x = np.zeros_like(total)
    fwd_x[:, :-1] = total[:, 1:] - total[:, :-1]
    fwd_y = np.zeros_like(total)
    fwd_y[:-1] = total[1:] - total[:-1]
    smooth = a2 / np.sqrt((fwd_x ** 2).sum(axis=-1) + (fwd_y ** 2).sum(axis=-1) + DIS_EPS2)
    # edge weights to the left, right, upper and lower neighbour, 0 where there is none
    edges = np.zeros((h, w, 4))
    edges[:, 1:, 0] = smooth[:, :-1]
    edges[:, :-1, 1] = smooth[:, :-1]
    edges[1:, :, 2] = smooth[:-1, :]
    edges[:-1, :, 3] = smooth[:-1, :]
    shifts = ((0, -1), (0, 1), (-1, 0), (1, 0))

    def neighbours(field: np.ndarray) -> list[np.ndarray]:
        padded = np.pad(field, ((1, 1), (1, 1), (0, 0)), mode='edge')
        return [padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy, dx in shifts]

    pull = sum(edges[..., k, None] * (n - flow) for k, n in enumerate(neighbours(flow)))
    rhs = np.stack([b1, b2], axis=-1) + pull
    total_weight = edges.sum(axis=-1)
    inv11, inv22 = 1.0 / (a11 + total_weight), 1.0 / (a22 + total_weight)
    y, x = np.mgrid[:h, :w]

    def solve(region: np.ndarray) -> np.ndarray:
        d = dflow.copy()
        for _ in range(DIS_SWEEPS):
            for parity in (0, 1):
                sigma = rhs + sum(edges[..., k, None] * n for k, n in enumerate(neighbours(d)))
                du = (1 - DIS_OMEGA) * d[..., 0] + DIS_OMEGA * (
                    sigma[..., 0] - a12 * d[..., 1]) * inv11
                dv = (1 - DIS_OMEGA) * d[..., 1] + DIS_OMEGA * (sigma[..., 1] - a12 * du) * inv22
                chosen = region & ((x + y) % 2 == parity)
                d[chosen] = np.stack([du, dv], axis=-1)[chosen]
        return d

    return solve


def _square(h: int, w: int, oy: int, ox: int, side: int) -> np.ndarray:
    """Mask of the side x side square at (ox, oy), clipped to the image."""
    y, x = np.mgrid[:h, :w]
    return (y >= oy) & (y < oy + side) & (x >= ox) & (x < ox + side)


def dis_vr_solve(t1: np.ndarray, t2: np.ndarray, flow: np.ndarray, dflow: np.ndarray,
                 offset: int, tile: int, a2: float, g2: float, d2: float) -> np.ndarray:
    """
    Kernel dis_vr_solve_rows: one fixed-point iteration, the new dflow.

    Weights lagged at the launch start; per tile (origins k * tile - offset) DIS_SWEEPS
    red-black SOR sweeps, the other tiles' dflow held at the launch start.
    """
    h, w = flow.shape[:2]
    dflow = dflow.astype(np.float64)
    solve = _dis_region_solver(t1, t2, flow.astype(np.float64), dflow, a2, g2, d2)
    out = dflow.copy()
    for oy in range(-offset, h, tile):
        for ox in range(-offset, w, tile):
            region = _square(h, w, oy, ox, tile)
            out[region] = solve(region)[region]
    return out


def dis_vr_solve_level(t1: np.ndarray, t2: np.ndarray, flow: np.ndarray, iterations: int,
                       tile: int, halo: int, a2: float, g2: float, d2: float) -> np.ndarray:
    """
    Kernel dis_vr_solve_level's solver: W + dW after ``iterations`` fixed-point iterations.

    The kernel densifies W and forms the terms itself (dis_densify, dis_vr_terms here).

    Each area (side ``tile``; its core, ``tile - 2 halo``, at k * core) is solved alone from
    dW = 0, dW outside it held at 0; an area gives its core's flow.
    """
    h, w = flow.shape[:2]
    flow = flow.astype(np.float64)
    core = tile - 2 * halo
    out = flow.copy()
    for cy in range(0, h, core):
        for cx in range(0, w, core):
            area = _square(h, w, cy - halo, cx - halo, tile)
            d = np.zeros_like(flow)
            for _ in range(iterations):
                solve = _dis_region_solver(t1, t2, flow, d, a2, g2, d2)
                d = np.where(area[..., None], solve(area), 0.0)
            inner = _square(h, w, cy, cx, core)
            out[inner] = (flow + d)[inner]
    return out
