// Copyright 2026 cl_vision_nodes maintainers
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Dense inverse search (flow/dis.py); after common.cl. Per level: dis_search twice (patches from
// the dense start, then from the best neighbour), dis_densify, then the variational refinement:
// dis_vr_warp, dis_vr_first, dis_vr_second and one dis_vr_solve per fixed-point iteration.
//
// Built with DIS_PATCH (patch side), DIS_TILE (side of the dis_vr_solve tiles) and DIS_GROUP_W x
// DIS_GROUP_H (its work-group). The two formulations differ only in that group: on a GPU a group
// of many work-items shares a tile (each item a few of its pixels), on a CPU one work-item walks
// the whole tile in plain loops (its barriers then cost nothing). A half-sweep updates pixels of
// one colour, which read only pixels of the other, so both give the same numbers.
#if !defined(DIS_PATCH) || !defined(DIS_TILE) || !defined(DIS_GROUP_W) || !defined(DIS_GROUP_H)
#error "dis.cl needs -D DIS_PATCH, DIS_TILE, DIS_GROUP_W and DIS_GROUP_H"
#endif
#if DIS_PATCH % 4 != 0
#error "DIS_PATCH must be a multiple of 4"
#endif
#define DIS_N ((float)(DIS_PATCH * DIS_PATCH))
#define DIS_DET_MIN 1e-3f
#define DIS_SPAN (DIS_TILE + 2)
#define DIS_ITEMS (DIS_GROUP_W * DIS_GROUP_H)
#define DIS_SWEEPS 5
#define DIS_OMEGA 1.6f
#define DIS_ZETA2 0.01f
#define DIS_EPS2 1e-6f

// Origin (left or top pixel) of patch k along an axis of n pixels: k * stride, the last patch
// moved back to end at the border, so every pixel is covered.
inline int dis_origin(int k, int stride, int n)
{
    return min(k * stride, n - DIS_PATCH);
}

// Mean-normalised SSD between frame 0's patch at (ox, oy) and frame 1 at (ox, oy) + f, and the
// mean-normalised descent sums b = sum grad I0 * diff - sum diff * gsum / n (gsum: the
// template's gradient sum). Mean normalisation makes the match blind to a brightness offset.
// Inside the image a patch row is read as float4s (DIS_PATCH is a multiple of 4), so a CPU
// computes four pixels an instruction; at the border taps are clamped one by one.
inline float dis_patch_cost(__global const float* i0, __global const float2* g0,
                            __global const float* i1, int w, int h, int ox, int oy, float2 f,
                            float2 gsum, float2* b)
{
    const float px = clamp(ox + f.x, -(float)DIS_PATCH, (float)w);
    const float py = clamp(oy + f.y, -(float)DIS_PATCH, (float)h);
    const float fx = floor(px), fy = floor(py);
    const float tx = px - fx, ty = py - fy;
    const int bx = (int)fx, by = (int)fy;
    float4 sd = 0.0f, sdd = 0.0f, sgx = 0.0f, sgy = 0.0f;
    if (bx >= 0 && by >= 0 && bx + DIS_PATCH < w && by + DIS_PATCH < h) {
        for (int r = 0; r < DIS_PATCH; ++r) {
            __global const float* top = i1 + (size_t)(by + r) * w + bx;
            __global const float* bottom = top + w;
            const size_t at = (size_t)(oy + r) * w + ox;
#pragma unroll
            for (int c = 0; c < DIS_PATCH; c += 4) {
                const float4 upper = vload4(0, top + c) * (1.0f - tx) + vload4(0, top + c + 1) * tx;
                const float4 lower = vload4(0, bottom + c) * (1.0f - tx)
                                     + vload4(0, bottom + c + 1) * tx;
                const float4 d = upper * (1.0f - ty) + lower * ty - vload4(0, i0 + at + c);
                const float8 g = vload8(0, (__global const float*)(g0 + at + c));
                sd += d;
                sdd += d * d;
                sgx += d * g.even;
                sgy += d * g.odd;
            }
        }
    } else {
        for (int r = 0; r < DIS_PATCH; ++r) {
            const int y0 = clamp(by + r, 0, h - 1), y1 = clamp(by + r + 1, 0, h - 1);
            for (int c = 0; c < DIS_PATCH; ++c) {
                const size_t at = (size_t)(oy + r) * w + ox + c;
                const int x0 = clamp(bx + c, 0, w - 1), x1 = clamp(bx + c + 1, 0, w - 1);
                const float top = i1[y0 * w + x0] * (1.0f - tx) + i1[y0 * w + x1] * tx;
                const float bottom = i1[y1 * w + x0] * (1.0f - tx) + i1[y1 * w + x1] * tx;
                const float d = top * (1.0f - ty) + bottom * ty - i0[at];
                const float2 g = g0[at];
                sd.x += d;
                sdd.x += d * d;
                sgx.x += d * g.x;
                sgy.x += d * g.y;
            }
        }
    }
    const float total = sd.x + sd.y + sd.z + sd.w;
    const float2 sg = (float2)(sgx.x + sgx.y + sgx.z + sgx.w, sgy.x + sgy.y + sgy.z + sgy.w);
    *b = sg - total * gsum / DIS_N;
    return sdd.x + sdd.y + sdd.z + sdd.w - total * total / DIS_N;
}

// One pass of the patch search, a work-item per patch of the ws x hs grid. The start is the
// dense flow at the patch centre (propagate == 0) or the best, by mean-normalised SSD, of the
// patch's own result of the previous pass and those of its four neighbours (propagate != 0;
// ties keep the earlier of own, left, right, up, down). Then inverse-compositional LK: the
// template's Hessian (mean-normalised) is formed once, each iteration is one warp and one
// update f -= H^-1 b, and the descent stops (keeping the better point) once the cost stops
// falling. A result further than DIS_PATCH from its start is dropped for the start.
__kernel void dis_search(__global const float* i0, __global const float2* g0,
                         __global const float* i1, const int w, const int h,
                         __global const float2* dense, __global const float2* sparse_in,
                         __global float2* sparse_out, const int ws, const int hs,
                         const int stride, const int iterations, const int propagate)
{
    const int kx = get_global_id(0), ky = get_global_id(1);
    if (kx >= ws || ky >= hs)
        return;
    const int ox = dis_origin(kx, stride, w), oy = dis_origin(ky, stride, h);
    float2 gsum = 0.0f;
    float sxx = 0.0f, sxy = 0.0f, syy = 0.0f;
    for (int r = 0; r < DIS_PATCH; ++r)
        for (int c = 0; c < DIS_PATCH; ++c) {
            const float2 g = g0[(size_t)(oy + r) * w + ox + c];
            gsum += g;
            sxx += g.x * g.x;
            sxy += g.x * g.y;
            syy += g.y * g.y;
        }
    sxx -= gsum.x * gsum.x / DIS_N;
    sxy -= gsum.x * gsum.y / DIS_N;
    syy -= gsum.y * gsum.y / DIS_N;
    const float det = fmax(sxx * syy - sxy * sxy, DIS_DET_MIN);
    const int k = ky * ws + kx;
    float2 start, b;
    if (!propagate) {
        start = dense[(size_t)(oy + DIS_PATCH / 2) * w + ox + DIS_PATCH / 2];
    } else {
        start = sparse_in[k];
        float best = dis_patch_cost(i0, g0, i1, w, h, ox, oy, start, gsum, &b);
        const int nx[4] = {kx - 1, kx + 1, kx, kx};
        const int ny[4] = {ky, ky, ky - 1, ky + 1};
        for (int n = 0; n < 4; ++n) {
            if (nx[n] < 0 || nx[n] >= ws || ny[n] < 0 || ny[n] >= hs)
                continue;
            const float2 other = sparse_in[ny[n] * ws + nx[n]];
            const float cost = dis_patch_cost(i0, g0, i1, w, h, ox, oy, other, gsum, &b);
            if (cost < best) {
                best = cost;
                start = other;
            }
        }
    }
    float2 f = start, previous = start;
    float last = INFINITY;
    for (int t = 0; t < iterations; ++t) {
        const float cost = dis_patch_cost(i0, g0, i1, w, h, ox, oy, f, gsum, &b);
        if (!(cost < last)) {
            f = previous;
            break;
        }
        last = cost;
        previous = f;
        f -= (float2)(syy * b.x - sxy * b.y, sxx * b.y - sxy * b.x) / det;
    }
    const float2 moved = f - start;
    sparse_out[k] = moved.x * moved.x + moved.y * moved.y > DIS_PATCH * DIS_PATCH ? start : f;
}

// Dense flow from the patches covering each pixel, weighted by 1 / max(1, |I1(x + f) - I0(x)|)
// of each patch's flow f at that pixel. Patches k < n - 1 start at k * stride and cover pixel
// p for ceil((p - DIS_PATCH + 1) / stride) <= k <= p / stride; the last one starts at
// n - DIS_PATCH.
inline int2 dis_covering(int p, int n, int count, int stride)
{
    return (int2)(p < DIS_PATCH ? 0 : (p - DIS_PATCH + stride) / stride,
                  min(count - 2, p / stride));
}

inline void dis_vote(__global const float* i1, int w, int h, int x, int y, float v0, float2 f,
                     float2* num, float* den)
{
    const float weight = 1.0f / fmax(1.0f, fabs(bilinear1(i1, w, h, x + f.x, y + f.y) - v0));
    *num += weight * f;
    *den += weight;
}

__kernel void dis_densify(__global const float* i0, __global const float* i1, const int w,
                          const int h, __global const float2* sparse, const int ws, const int hs,
                          const int stride, __global float2* dense)
{
    const int2 p = item_pixel(w, h);
    const int x = p.x, y = p.y;
    const float v0 = i0[(size_t)y * w + x];
    const int2 rows = dis_covering(y, h, hs, stride), cols = dis_covering(x, w, ws, stride);
    const int last_row = y >= h - DIS_PATCH, last_col = x >= w - DIS_PATCH;
    float2 num = 0.0f;
    float den = 0.0f;
    for (int a = rows.x; a <= rows.y; ++a) {
        for (int b = cols.x; b <= cols.y; ++b)
            dis_vote(i1, w, h, x, y, v0, sparse[a * ws + b], &num, &den);
        if (last_col)
            dis_vote(i1, w, h, x, y, v0, sparse[a * ws + ws - 1], &num, &den);
    }
    if (last_row) {
        for (int b = cols.x; b <= cols.y; ++b)
            dis_vote(i1, w, h, x, y, v0, sparse[(hs - 1) * ws + b], &num, &den);
        if (last_col)
            dis_vote(i1, w, h, x, y, v0, sparse[hs * ws - 1], &num, &den);
    }
    dense[(size_t)y * w + x] = num / den;
}

// Refinement, start: frame 1 warped by the flow (bilinear, replicated border); out (average of
// both frames, warped - I0).
__kernel void dis_vr_warp(__global const float* i0, __global const float* i1,
                          __global const float2* flow, const int w, const int h,
                          __global float2* out)
{
    const int2 p = item_pixel(w, h);
    const size_t i = (size_t)p.y * w + p.x;
    const float warped = bilinear1(i1, w, h, p.x + flow[i].x, p.y + flow[i].y);
    out[i] = (float2)(0.5f * (i0[i] + warped), warped - i0[i]);
}

// Central difference (f[+1] - f[-1]) / 2 with replicated borders along (dx, dy), per component.
inline float2 dis_diff2(__global const float2* img, int w, int h, int x, int y, int dx, int dy)
{
    return 0.5f * (img[(size_t)min(y + dy, h - 1) * w + min(x + dx, w - 1)]
                   - img[(size_t)max(y - dy, 0) * w + max(x - dx, 0)]);
}

inline float4 dis_diff4(__global const float4* img, int w, int h, int x, int y, int dx, int dy)
{
    return 0.5f * (img[(size_t)min(y + dy, h - 1) * w + min(x + dx, w - 1)]
                   - img[(size_t)max(y - dy, 0) * w + max(x - dx, 0)]);
}

// First derivatives of dis_vr_warp's output: t1 = (Ix, Iy, Iz, Ixz) and t2.x = Iyz (I: the
// average, Iz: the difference); dis_vr_second fills the rest of t2.
__kernel void dis_vr_first(__global const float2* ai, const int w, const int h,
                           __global float4* t1, __global float4* t2)
{
    const int2 p = item_pixel(w, h);
    const size_t i = (size_t)p.y * w + p.x;
    const float2 dx = dis_diff2(ai, w, h, p.x, p.y, 1, 0), dy = dis_diff2(ai, w, h, p.x, p.y, 0, 1);
    t1[i] = (float4)(dx.x, dy.x, ai[i].y, dx.y);
    t2[i] = (float4)(dy.y, 0.0f, 0.0f, 0.0f);
}

// Second derivatives: t2 = (Iyz, Ixx, Ixy, Iyy), the central differences of Ix and Iy.
__kernel void dis_vr_second(__global const float4* t1, const int w, const int h,
                            __global float4* t2)
{
    const int2 p = item_pixel(w, h);
    const size_t i = (size_t)p.y * w + p.x;
    const float4 dx = dis_diff4(t1, w, h, p.x, p.y, 1, 0), dy = dis_diff4(t1, w, h, p.x, p.y, 0, 1);
    t2[i] = (float4)(t2[i].x, dx.x, dy.x, dy.y);
}

// Loops of dis_vr_solve over the tile pixels a work-item owns: rows ly, ly + DIS_GROUP_H, ...,
// columns lx, lx + DIS_GROUP_W, ...
#define DIS_TILE_ROWS(ty) \
    for (int ty = (int)get_local_id(1); ty < DIS_TILE; ty += DIS_GROUP_H)
#define DIS_TILE_COLS(tx) \
    for (int tx = (int)get_local_id(0); tx < DIS_TILE; tx += DIS_GROUP_W)

// One fixed-point iteration of the variational refinement of flow W by dW: energy
// delta Psi(brightness constancy) + gamma Psi(gradient constancy) + alpha Psi(|grad (W + dW)|^2),
// Psi(s^2) = sqrt(s^2 + eps^2), both data terms normalised by their gradients (zeta), linearised
// at W. The robust weights are taken at dW of the launch start (lagged), then DIS_SWEEPS
// red-black SOR sweeps (omega DIS_OMEGA) solve the linear system for dW. Weights a2, g2, d2 are
// alpha/2, gamma/2, delta/2.
//
// One tile of DIS_TILE^2 pixels (origin k * DIS_TILE - offset) per work-group, with a 1-pixel
// halo whose dW stays at its launch-start value (block Gauss-Seidel across tiles). The
// smoothness weight of pixel p, for the edges to its right and lower neighbours, is taken from
// forward differences of W + dW at the launch start, so both tiles of an edge agree on it.
// Input dflow_in (taken as 0 when `fresh`), output dflow_out; `last` also writes W + dW to
// flow_out.
__kernel __attribute__((reqd_work_group_size(DIS_GROUP_W, DIS_GROUP_H, 1)))
void dis_vr_solve(__global const float4* t1, __global const float4* t2,
                  __global const float2* flow, __global const float2* dflow_in,
                  __global float2* dflow_out, __global float2* flow_out, const int w,
                  const int h, const int offset, const int fresh, const int last,
                  const float a2, const float g2, const float d2)
{
    __local float2 total[DIS_SPAN * DIS_SPAN];    // W + dW at the launch start
    __local float2 d[DIS_SPAN * DIS_SPAN];        // dW
    __local float smooth[DIS_SPAN * DIS_SPAN];    // smoothness weight, edges right and down
    __local float4 edges[DIS_TILE * DIS_TILE];    // edge weights left, right, up, down
    __local float4 system[DIS_TILE * DIS_TILE];   // 1 / a11, a12, 1 / a22, unused
    __local float2 rhs[DIS_TILE * DIS_TILE];
    const int lid = get_local_id(1) * DIS_GROUP_W + get_local_id(0);
    const int ox = (int)get_group_id(0) * DIS_TILE - offset;
    const int oy = (int)get_group_id(1) * DIS_TILE - offset;
    for (int k = lid; k < DIS_SPAN * DIS_SPAN; k += DIS_ITEMS) {
        const int gx = clamp(ox - 1 + k % DIS_SPAN, 0, w - 1);
        const int gy = clamp(oy - 1 + k / DIS_SPAN, 0, h - 1);
        const size_t g = (size_t)gy * w + gx;
        const float2 dd = fresh ? (float2)(0.0f) : dflow_in[g];
        d[k] = dd;
        total[k] = flow[g] + dd;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = lid; k < DIS_SPAN * DIS_SPAN; k += DIS_ITEMS) {
        const int sx = k % DIS_SPAN, sy = k / DIS_SPAN;
        const int gx = ox - 1 + sx, gy = oy - 1 + sy;
        float s = 0.0f;
        if (sx <= DIS_TILE && sy <= DIS_TILE && gx >= 0 && gy >= 0 && gx < w && gy < h) {
            const float2 here = total[k];
            const float2 ddx = gx < w - 1 ? total[k + 1] - here : (float2)(0.0f);
            const float2 ddy = gy < h - 1 ? total[k + DIS_SPAN] - here : (float2)(0.0f);
            s = a2 / sqrt(ddx.x * ddx.x + ddx.y * ddx.y + ddy.x * ddy.x + ddy.y * ddy.y
                          + DIS_EPS2);
        }
        smooth[k] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    DIS_TILE_ROWS(ty) {
        DIS_TILE_COLS(tx) {
            const int gx = ox + tx, gy = oy + ty, k = ty * DIS_TILE + tx;
            if (gx < 0 || gy < 0 || gx >= w || gy >= h)
                continue;
            const size_t g = (size_t)gy * w + gx;
            const int me = (ty + 1) * DIS_SPAN + tx + 1;
            const float4 a = t1[g], e = t2[g];  // a: Ix Iy Iz Ixz, e: Iyz Ixx Ixy Iyy
            const float2 du = d[me];
            const float norm = a.x * a.x + a.y * a.y + DIS_ZETA2;
            const float residual = a.z + a.x * du.x + a.y * du.y;
            const float wd = d2 / sqrt(residual * residual / norm + DIS_EPS2) / norm;
            float a11 = wd * a.x * a.x + DIS_ZETA2, a12 = wd * a.x * a.y;
            float a22 = wd * a.y * a.y + DIS_ZETA2;
            float b1 = -wd * a.z * a.x, b2 = -wd * a.z * a.y;
            const float nx = e.y * e.y + e.z * e.z + DIS_ZETA2;
            const float ny = e.w * e.w + e.z * e.z + DIS_ZETA2;
            const float rx = a.w + e.y * du.x + e.z * du.y;
            const float ry = e.x + e.z * du.x + e.w * du.y;
            const float wg = g2 / sqrt(rx * rx / nx + ry * ry / ny + DIS_EPS2);
            a11 += wg * (e.y * e.y / nx + e.z * e.z / ny);
            a12 += wg * (e.y * e.z / nx + e.z * e.w / ny);
            a22 += wg * (e.z * e.z / nx + e.w * e.w / ny);
            b1 -= wg * (e.y * a.w / nx + e.z * e.x / ny);
            b2 -= wg * (e.z * a.w / nx + e.w * e.x / ny);
            // Smoothness: edge weights (0 where no neighbour), and the part of the pull that
            // does not move in the sweeps (the differences of W).
            const float4 wn = (float4)(gx > 0 ? smooth[me - 1] : 0.0f,
                                       gx < w - 1 ? smooth[me] : 0.0f,
                                       gy > 0 ? smooth[me - DIS_SPAN] : 0.0f,
                                       gy < h - 1 ? smooth[me] : 0.0f);
            const float2 own = total[me] - d[me];
            const float2 pull = wn.x * (total[me - 1] - d[me - 1] - own)
                                + wn.y * (total[me + 1] - d[me + 1] - own)
                                + wn.z * (total[me - DIS_SPAN] - d[me - DIS_SPAN] - own)
                                + wn.w * (total[me + DIS_SPAN] - d[me + DIS_SPAN] - own);
            const float sum = wn.x + wn.y + wn.z + wn.w;
            edges[k] = wn;
            system[k] = (float4)(1.0f / (a11 + sum), a12, 1.0f / (a22 + sum), 0.0f);
            rhs[k] = (float2)(b1, b2) + pull;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int sweep = 0; sweep < DIS_SWEEPS; ++sweep) {
        for (int parity = 0; parity < 2; ++parity) {
            DIS_TILE_ROWS(ty) {
                const int gy = oy + ty;
#if DIS_GROUP_W == 1
                // one work-item a row: visit only the pixels of this colour
                for (int tx = (parity - ox - gy) & 1; tx < DIS_TILE; tx += 2) {
#else
                DIS_TILE_COLS(tx) {
                    if (((ox + tx + gy) & 1) != parity)
                        continue;
#endif
                    const int gx = ox + tx, k = ty * DIS_TILE + tx;
                    if (gx < 0 || gy < 0 || gx >= w || gy >= h)
                        continue;
                    const int me = (ty + 1) * DIS_SPAN + tx + 1;
                    const float4 wn = edges[k], c = system[k];
                    const float2 sigma = wn.x * d[me - 1] + wn.y * d[me + 1]
                                         + wn.z * d[me - DIS_SPAN] + wn.w * d[me + DIS_SPAN]
                                         + rhs[k];
                    float2 du = d[me];
                    du.x = (1.0f - DIS_OMEGA) * du.x + DIS_OMEGA * (sigma.x - c.y * du.y) * c.x;
                    du.y = (1.0f - DIS_OMEGA) * du.y + DIS_OMEGA * (sigma.y - c.y * du.x) * c.z;
                    d[me] = du;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    DIS_TILE_ROWS(ty) {
        DIS_TILE_COLS(tx) {
            const int gx = ox + tx, gy = oy + ty;
            if (gx < 0 || gy < 0 || gx >= w || gy >= h)
                continue;
            const size_t g = (size_t)gy * w + gx;
            const float2 dd = d[(ty + 1) * DIS_SPAN + tx + 1];
            dflow_out[g] = dd;
            if (last)
                flow_out[g] = flow[g] + dd;
        }
    }
}
