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

// Coarse-to-fine robust Horn-Schunck: warping step, SOR sweeps, median (flow/horn_schunck.py);
// after common.cl. Built with HS_TILE (side of the SOR tiles) and HS_GROUP_H (work-group height
// from the device's work-group limit, dividing HS_TILE).
#if !defined(HS_TILE) || !defined(HS_GROUP_H)
#error "horn_schunck.cl needs -D HS_TILE and HS_GROUP_H"
#endif
#if HS_TILE % HS_GROUP_H != 0
#error "HS_TILE must be a multiple of HS_GROUP_H"
#endif
#define HS_SPAN (HS_TILE + 2)
#define HS_ROWS (HS_TILE / HS_GROUP_H)
#define HS_ITEMS (HS_TILE * HS_GROUP_H)

// Keys cubic convolution weights (a = -0.5, Catmull-Rom) of taps -1, 0, 1, 2 at fraction t.
inline void cubic_weights(float t, float* wt)
{
    wt[0] = ((-0.5f * t + 1.0f) * t - 0.5f) * t;
    wt[1] = (1.5f * t - 2.5f) * t * t + 1.0f;
    wt[2] = ((-1.5f * t + 2.0f) * t + 0.5f) * t;
    wt[3] = (0.5f * t - 0.5f) * t * t;
}

// Start of a warping step. Linearised data term at the current flow: frame 1 and its gradient
// sampled bicubically at x + flow, gradients averaged over both frames, temporal difference
// I1(x + flow) - I0(x). Out: (Ix, Iy, It, 1), or 0 where x + flow leaves frame 1 (no data
// term there). Also resets the solver's convergence slots (see hs_sor) to "still moving".
__kernel void hs_warp(__global const float* i0, __global const float2* g0,
                      __global const float* i1, __global const float2* g1,
                      __global const float2* flow, const int w, const int h,
                      __global float4* terms, __global int* flags)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x == 0 && y == 0) {
        flags[0] = 0;
        flags[1] = 0;
        flags[2] = 1;
    }
    if (x >= w || y >= h)
        return;
    const size_t i = (size_t)y * w + x;
    const float px = x + flow[i].x, py = y + flow[i].y;
    float4 out = 0.0f;
    if (px >= 0.0f && px <= w - 1 && py >= 0.0f && py <= h - 1) {
        const float fx = floor(px), fy = floor(py);
        float wx[4], wy[4];
        cubic_weights(px - fx, wx);
        cubic_weights(py - fy, wy);
        float value = 0.0f;
        float2 grad = 0.0f;
        for (int j = 0; j < 4; ++j) {
            const size_t row = (size_t)clamp((int)fy - 1 + j, 0, h - 1) * w;
            float rv = 0.0f;
            float2 rg = 0.0f;
            for (int k = 0; k < 4; ++k) {
                const int col = clamp((int)fx - 1 + k, 0, w - 1);
                rv += wx[k] * i1[row + col];
                rg += wx[k] * g1[row + col];
            }
            value += wy[j] * rv;
            grad += wy[j] * rg;
        }
        grad = 0.5f * (grad + g0[i]);
        out = (float4)(grad.x, grad.y, value - i0[i], 1.0f);
    }
    terms[i] = out;
}

// Derivative weight of the normalised Charbonnier penalty eps^2 (sqrt(1 + d^2/eps^2) - 1):
// 1 for |d| << eps (quadratic, classic Horn-Schunck), eps/|d| for |d| >> eps (L1, robust).
inline float charbonnier_weight(float d, float inv_eps2)
{
    return rsqrt(1.0f + d * d * inv_eps2);
}

// Accumulates the smoothness pull of one 4-neighbour whose u + du is `other` (u and v are
// penalised separately).
inline void hs_neighbour(float2 other, float2 total, float2 base, float inv_eps_s2,
                         float2* weight_sum, float2* pull)
{
    const float2 e = (float2)(charbonnier_weight(other.x - total.x, inv_eps_s2),
                              charbonnier_weight(other.y - total.y, inv_eps_s2));
    *weight_sum += e;
    *pull += e * (other - base);
}

// `sweeps` red-black SOR sweeps on the increment du of
// E = sum rho_D(It + Ix du + Iy dv) + alpha2 * sum over 4-neighbour edges rho_S(diff of u + du)
// (and of v + dv), rho = normalised Charbonnier. Each pixel solves its coupled 2x2 system with
// the penalties' weights taken at the current values (lagged IRLS: each update minimises a
// quadratic majoriser, so a Gauss-Seidel step never increases E), then over-relaxes by omega.
//
// One work-group per HS_TILE^2 tile, its u + du (and a 1-pixel halo) in local memory, so one
// launch runs several sweeps: the tile is Gauss-Seidel inside and sees its neighbours' values
// of the launch start at its edges (block Gauss-Seidel/Jacobi). Tiles start at
// (k * HS_TILE - offset): the host alternates offset so tile edges move between launches.
// Item (lx, ly) of the HS_TILE x HS_GROUP_H group owns the tile's column lx, rows
// ly + r * HS_GROUP_H (r < HS_ROWS). A half-sweep updates pixels of one colour, which read only
// pixels of the other, so the result does not depend on the group height.
// Input dflow_in (ignored and taken as 0 when `fresh`, the first launch of a warping step),
// output dflow_out (ping-pong): a launch is a pure function of its inputs.
//
// Convergence without host round trips, in flags[0..2] (one slot per launch k, k % 3; hs_warp
// sets slot 2, the one launch 0 reads): launch k reads slot `read` (raised by launch k-1): 0
// there means the previous launch changed no pixel by more than tol, and this launch only
// copies dflow_in to dflow_out. Launch k raises slot `write` on a change > tol and clears slot
// `reset`, the one launch k+1 writes.
__kernel __attribute__((reqd_work_group_size(HS_TILE, HS_GROUP_H, 1)))
void hs_sor(__global const float4* terms, __global const float2* flow,
            __global const float2* dflow_in, __global float2* dflow_out,
            volatile __global int* flags, const int w, const int h, const int fresh,
            const int offset, const int sweeps, const int slot_read, const int slot_write,
            const int slot_reset, const float alpha2, const float omega, const float inv_eps_d2,
            const float inv_eps_s2, const float tol)
{
    __local float2 total[HS_SPAN * HS_SPAN];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int ox = (int)get_group_id(0) * HS_TILE - offset;
    const int oy = (int)get_group_id(1) * HS_TILE - offset;
    const int x = ox + lx;
    if (get_global_id(0) == 0 && get_global_id(1) == 0)
        flags[slot_reset] = 0;
    const int active = flags[slot_read] != 0;
    for (int k = ly * HS_TILE + lx; k < HS_SPAN * HS_SPAN; k += HS_ITEMS) {
        const int gx = clamp(ox - 1 + k % HS_SPAN, 0, w - 1);
        const int gy = clamp(oy - 1 + k / HS_SPAN, 0, h - 1);
        const size_t g = (size_t)gy * w + gx;
        total[k] = fresh ? flow[g] : flow[g] + dflow_in[g];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    int inside[HS_ROWS];
    size_t at[HS_ROWS];
    float2 base[HS_ROWS], d[HS_ROWS];
    float4 t[HS_ROWS];
#pragma unroll
    for (int r = 0; r < HS_ROWS; ++r) {
        const int y = oy + ly + r * HS_GROUP_H;
        inside[r] = x >= 0 && x < w && y >= 0 && y < h;
        at[r] = inside[r] ? (size_t)y * w + x : 0;
        base[r] = inside[r] ? flow[at[r]] : (float2)(0.0f);
        t[r] = inside[r] ? terms[at[r]] : (float4)(0.0f);
        d[r] = inside[r] && !fresh ? dflow_in[at[r]] : (float2)(0.0f);
    }
    int moved = 0;
    for (int sweep = 0; sweep < sweeps; ++sweep) {
        for (int parity = 0; parity < 2; ++parity) {
#pragma unroll
            for (int r = 0; r < HS_ROWS; ++r) {
                const int row = ly + r * HS_GROUP_H, y = oy + row;
                if (!(active && inside[r] && ((x + y) & 1) == parity))
                    continue;
                // The pixel's 2x2 system at the current weights, then over-relaxation. (Inline:
                // as a function taking &d[r] it ran 2 % slower on an H200.)
                const int me = (row + 1) * HS_SPAN + lx + 1;
                const float2 u = base[r], du = d[r];
                const float4 tr = t[r];
                const float2 own = u + du;
                float2 weight_sum = 0.0f, pull = 0.0f;
                if (x > 0)
                    hs_neighbour(total[me - 1], own, u, inv_eps_s2, &weight_sum, &pull);
                if (x < w - 1)
                    hs_neighbour(total[me + 1], own, u, inv_eps_s2, &weight_sum, &pull);
                if (y > 0)
                    hs_neighbour(total[me - HS_SPAN], own, u, inv_eps_s2, &weight_sum, &pull);
                if (y < h - 1)
                    hs_neighbour(total[me + HS_SPAN], own, u, inv_eps_s2, &weight_sum, &pull);
                const float residual = tr.z + tr.x * du.x + tr.y * du.y;
                const float wd = tr.w * charbonnier_weight(residual, inv_eps_d2);
                const float a11 = wd * tr.x * tr.x + alpha2 * weight_sum.x;
                const float a12 = wd * tr.x * tr.y;
                const float a22 = wd * tr.y * tr.y + alpha2 * weight_sum.y;
                const float b1 = alpha2 * pull.x - wd * tr.x * tr.z;
                const float b2 = alpha2 * pull.y - wd * tr.y * tr.z;
                const float det = a11 * a22 - a12 * a12;
                if (det > 0.0f) {
                    const float2 solved = (float2)(a22 * b1 - a12 * b2, a11 * b2 - a12 * b1) / det;
                    const float2 next = du + omega * (solved - du);
                    const float2 change = fabs(next - du);
                    moved |= fmax(change.x, change.y) > tol;
                    d[r] = next;
                    total[me] = u + next;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
#pragma unroll
    for (int r = 0; r < HS_ROWS; ++r)
        if (inside[r])
            dflow_out[at[r]] = d[r];
    if (moved && flags[slot_write] == 0)
        atomic_or(&flags[slot_write], 1);
}

inline void sort_pair(float2* a, float2* b)
{
    const float2 lo = fmin(*a, *b);
    *b = fmax(*a, *b);
    *a = lo;
}

// The median network for element type T, whose compare-exchange is SORT_PAIR: defines
// SORT5(v, stride), the optimal 9-comparator network sorting v[0], v[stride], ..,
// v[4 * stride] per component, and MEDIAN(m), the median of a row-major 5x5 window per
// component in 153 comparators (a plain selection needs 234). Sorting the columns, then the
// rows, orders the window along both axes; then 6 entries are known to be below the median and
// 6 above, and the median is that of the 13 others: 7 bubble passes move the 7 largest, sorted,
// to v[6..12]. For float2 (hs_update) and float8 (hs_update_cpu, 8 windows at once).
#define HS_DEFINE_MEDIAN5X5(T, QUALIFIER, SORT_PAIR, SORT5, MEDIAN) \
    QUALIFIER void SORT5(T* v, int stride) \
    { \
        SORT_PAIR(v, v + stride); \
        SORT_PAIR(v + 3 * stride, v + 4 * stride); \
        SORT_PAIR(v + 2 * stride, v + 4 * stride); \
        SORT_PAIR(v + 2 * stride, v + 3 * stride); \
        SORT_PAIR(v, v + 3 * stride); \
        SORT_PAIR(v, v + 2 * stride); \
        SORT_PAIR(v + stride, v + 4 * stride); \
        SORT_PAIR(v + stride, v + 3 * stride); \
        SORT_PAIR(v + stride, v + 2 * stride); \
    } \
    QUALIFIER T MEDIAN(T* m) \
    { \
        _Pragma("unroll") for (int c = 0; c < 5; ++c) \
            SORT5(m + c, 5); \
        _Pragma("unroll") for (int r = 0; r < 5; ++r) \
            SORT5(m + 5 * r, 1); \
        T v[13] = {m[3], m[4], m[7], m[8], m[9], m[11], m[12], m[13], m[15], m[16], m[17], \
                   m[20], m[21]}; \
        _Pragma("unroll") for (int pass = 0; pass < 7; ++pass) \
            _Pragma("unroll") for (int k = 0; k < 12 - pass; ++k) \
                SORT_PAIR(v + k, v + k + 1); \
        return v[6]; \
    }

HS_DEFINE_MEDIAN5X5(float2, inline, sort_pair, sort5, median5x5)

// End of a warp: out = u + du, then (median != 0) a 5x5 median per component with replicated
// borders, which removes the outliers the linearisation leaves (Sun, Roth & Black 2010).
__kernel void hs_update(__global const float2* flow, __global const float2* dflow,
                        const int w, const int h, const int median, __global float2* out)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    const size_t i = (size_t)y * w + x;
    if (!median) {
        out[i] = flow[i] + dflow[i];
        return;
    }
    float2 window[25];
    for (int j = 0; j < 5; ++j) {
        const size_t row = (size_t)clamp(y + j - 2, 0, h - 1) * w;
        for (int k = 0; k < 5; ++k) {
            const size_t n = row + clamp(x + k - 2, 0, w - 1);
            window[5 * j + k] = flow[n] + dflow[n];
        }
    }
    out[i] = median5x5(window);
}

// --- CPU formulation (DeviceLimits.formulation 'cpu'; built with HS_CPU) ------------------------
// For devices of few cores (PoCL): the same launches and results, but a work-item walks a whole
// tile (hs_sor_cpu) or row (hs_warp_cpu, hs_update_cpu), with no barriers. PoCL calls its
// built-in functions instead of inlining them (and spills the vector registers around each
// call), so the loops use operators (?: for select, fmin and fmax) and float8 arrays instead of
// vload/vstore, and rsqrt8 is 1 / sqrt8 (common.cl: one vsqrtps; PoCL's rsqrt is that same
// 1 / sqrt, so the numbers are hs_sor's).
#ifdef HS_CPU
#if HS_TILE != 16
#error "hs_sor_cpu is written for 16 x 16 tiles (float8 rows of one colour)"
#endif
#define HS_CPU_INLINE inline __attribute__((always_inline))

HS_CPU_INLINE float8 rsqrt8(float8 x)
{
    return 1.0f / sqrt8(x);
}

// Smoothness pull of one neighbour on 8 pixels, as hs_neighbour; lanes without that neighbour
// (`has` 0) add a zero weight.
HS_CPU_INLINE void hs_neighbour8(float8 other_u, float8 other_v, float8 own_u, float8 own_v,
                                 float8 base_u, float8 base_v, int8 has, float inv_eps_s2,
                                 float8* sum_u, float8* sum_v, float8* pull_u, float8* pull_v)
{
    const float8 eu = has ? rsqrt8(1.0f + (other_u - own_u) * (other_u - own_u) * inv_eps_s2)
                          : (float8)(0.0f);
    const float8 ev = has ? rsqrt8(1.0f + (other_v - own_v) * (other_v - own_v) * inv_eps_s2)
                          : (float8)(0.0f);
    *sum_u += eu;
    *sum_v += ev;
    *pull_u += eu * (other_u - base_u);
    *pull_v += ev * (other_v - base_v);
}

// hs_sor with one work-item per tile (global size: the tiles). The tile and its halo are split
// by local column lc = x - ox + 1 (0..17): per row, `even` holds lc 2..16 (8 lanes) and
// `odd` lc 1..15, halo columns 0 and 17 as scalars. Tile origins are even (offset is 0 or
// HS_TILE / 2), so the pixels x = ox + 2k + s of row y (lanes k) have colour (s + y) & 1:
// s = 0 are `odd` (left neighbours: lc 0, 2, .., 14; right: `even`), s = 1 are `even` (left:
// `odd`; right: lc 3, .., 17). Up and down neighbours are the same lanes of rows y -+ 1.
__kernel void hs_sor_cpu(__global const float4* terms, __global const float2* flow,
                         __global const float2* dflow_in, __global float2* dflow_out,
                         volatile __global int* flags, const int w, const int h, const int fresh,
                         const int offset, const int sweeps, const int slot_read,
                         const int slot_write, const int slot_reset, const float alpha2,
                         const float omega, const float inv_eps_d2, const float inv_eps_s2,
                         const float tol)
{
    const int tx = get_global_id(0), ty = get_global_id(1);
    if (tx == 0 && ty == 0)
        flags[slot_reset] = 0;
    const int ox = tx * HS_TILE - offset, oy = ty * HS_TILE - offset;
    if (ox >= w || oy >= h)
        return;
    const int active = flags[slot_read] != 0;
    // u + du of the tile's rows and halo rows (row lr = y - oy + 1).
    float8 even_u[HS_SPAN], even_v[HS_SPAN], odd_u[HS_SPAN], odd_v[HS_SPAN];
    float left_u[HS_SPAN], left_v[HS_SPAN], right_u[HS_SPAN], right_v[HS_SPAN];
    for (int lr = 0; lr < HS_SPAN; ++lr) {
        const size_t row = (size_t)clamp(oy - 1 + lr, 0, h - 1) * w;
        float* eu = (float*)(even_u + lr);
        float* ev = (float*)(even_v + lr);
        float* ou = (float*)(odd_u + lr);
        float* ov = (float*)(odd_v + lr);
        for (int lc = 0; lc < HS_SPAN; ++lc) {
            const size_t g = row + clamp(ox - 1 + lc, 0, w - 1);
            const float2 total = fresh ? flow[g] : flow[g] + dflow_in[g];
            if (lc == 0) {
                left_u[lr] = total.x;
                left_v[lr] = total.y;
            } else if (lc == HS_SPAN - 1) {
                right_u[lr] = total.x;
                right_v[lr] = total.y;
            } else if (lc & 1) {
                ou[lc / 2] = total.x;
                ov[lc / 2] = total.y;
            } else {
                eu[lc / 2 - 1] = total.x;
                ev[lc / 2 - 1] = total.y;
            }
        }
    }
    // Per tile pixel, at [row * 2 + s] lane k for x = ox + 2k + s: u, the data terms and du.
    float8 base_u[2 * HS_TILE], base_v[2 * HS_TILE], ix[2 * HS_TILE], iy[2 * HS_TILE];
    float8 it[2 * HS_TILE], iw[2 * HS_TILE], d_u[2 * HS_TILE], d_v[2 * HS_TILE];
    for (int r = 0; r < HS_TILE; ++r) {
        const int y = oy + r;
        for (int c = 0; c < HS_TILE; ++c) {
            const int x = ox + c, p = (r * 2 + (c & 1)) * 8 + c / 2;
            const int inside = x >= 0 && x < w && y >= 0 && y < h;
            const size_t at = inside ? (size_t)y * w + x : 0;
            const float2 base = inside ? flow[at] : (float2)(0.0f);
            const float4 t = inside ? terms[at] : (float4)(0.0f);
            const float2 d = inside && !fresh ? dflow_in[at] : (float2)(0.0f);
            ((float*)base_u)[p] = base.x;
            ((float*)base_v)[p] = base.y;
            ((float*)ix)[p] = t.x;
            ((float*)iy)[p] = t.y;
            ((float*)it)[p] = t.z;
            ((float*)iw)[p] = t.w;
            ((float*)d_u)[p] = d.x;
            ((float*)d_v)[p] = d.y;
        }
    }
    // Lanes of colour set s in the image, and those with a left / right neighbour.
    const int8 lane = (int8)(0, 2, 4, 6, 8, 10, 12, 14);
    const int8 x0 = ox + lane, x1 = x0 + 1;
    const int8 in_x[2] = {x0 >= 0 && x0 < w, x1 >= 0 && x1 < w};
    const int8 has_left[2] = {x0 > 0, x1 > 0};
    const int8 has_right[2] = {x0 < w - 1, x1 < w - 1};
    int8 moved = 0;
    for (int sweep = 0; active && sweep < sweeps; ++sweep) {
        for (int parity = 0; parity < 2; ++parity) {
            for (int r = 0; r < HS_TILE; ++r) {
                const int y = oy + r;
                if (y < 0 || y >= h)
                    continue;
                const int s = (parity ^ y) & 1, lr = r + 1, p = r * 2 + s;
                float8* own_u = s ? even_u : odd_u;
                float8* own_v = s ? even_v : odd_v;
                float8 side_lu, side_lv, side_ru, side_rv;
                if (s) {
                    side_lu = odd_u[lr];
                    side_lv = odd_v[lr];
                    side_ru = (float8)(odd_u[lr].s1234, odd_u[lr].s567, right_u[lr]);
                    side_rv = (float8)(odd_v[lr].s1234, odd_v[lr].s567, right_v[lr]);
                } else {
                    side_lu = (float8)(left_u[lr], even_u[lr].s012, even_u[lr].s3456);
                    side_lv = (float8)(left_v[lr], even_v[lr].s012, even_v[lr].s3456);
                    side_ru = even_u[lr];
                    side_rv = even_v[lr];
                }
                const float8 u = base_u[p], v = base_v[p], du = d_u[p], dv = d_v[p];
                const float8 tx8 = ix[p], ty8 = iy[p], tz8 = it[p], tw8 = iw[p];
                const float8 own_tu = u + du, own_tv = v + dv;
                float8 sum_u = 0.0f, sum_v = 0.0f, pull_u = 0.0f, pull_v = 0.0f;
                hs_neighbour8(side_lu, side_lv, own_tu, own_tv, u, v, has_left[s], inv_eps_s2,
                              &sum_u, &sum_v, &pull_u, &pull_v);
                hs_neighbour8(side_ru, side_rv, own_tu, own_tv, u, v, has_right[s], inv_eps_s2,
                              &sum_u, &sum_v, &pull_u, &pull_v);
                hs_neighbour8(own_u[lr - 1], own_v[lr - 1], own_tu, own_tv, u, v,
                              (int8)(-(y > 0)), inv_eps_s2, &sum_u, &sum_v, &pull_u, &pull_v);
                hs_neighbour8(own_u[lr + 1], own_v[lr + 1], own_tu, own_tv, u, v,
                              (int8)(-(y < h - 1)), inv_eps_s2, &sum_u, &sum_v, &pull_u, &pull_v);
                const float8 residual = tz8 + tx8 * du + ty8 * dv;
                const float8 wd = tw8 * rsqrt8(1.0f + residual * residual * inv_eps_d2);
                const float8 a11 = wd * tx8 * tx8 + alpha2 * sum_u;
                const float8 a12 = wd * tx8 * ty8;
                const float8 a22 = wd * ty8 * ty8 + alpha2 * sum_v;
                const float8 b1 = alpha2 * pull_u - wd * tx8 * tz8;
                const float8 b2 = alpha2 * pull_v - wd * ty8 * tz8;
                const float8 det = a11 * a22 - a12 * a12;
                const float8 solved_u = (a22 * b1 - a12 * b2) / det;
                const float8 solved_v = (a11 * b2 - a12 * b1) / det;
                const float8 next_u = du + omega * (solved_u - du);
                const float8 next_v = dv + omega * (solved_v - dv);
                const int8 update = in_x[s] && det > 0.0f;
                // |next - du| > tol in u or v (fmax of the fabs, without the calls)
                const float8 cu = next_u - du, cv = next_v - dv;
                moved |= update && (cu > tol || -cu > tol || cv > tol || -cv > tol);
                d_u[p] = update ? next_u : du;
                d_v[p] = update ? next_v : dv;
                own_u[lr] = update ? u + next_u : own_tu;
                own_v[lr] = update ? v + next_v : own_tv;
            }
        }
    }
    for (int r = 0; r < HS_TILE; ++r) {
        const int y = oy + r;
        for (int c = 0; c < HS_TILE; ++c) {
            const int x = ox + c, p = (r * 2 + (c & 1)) * 8 + c / 2;
            if (x >= 0 && x < w && y >= 0 && y < h)
                dflow_out[(size_t)y * w + x] = (float2)(((float*)d_u)[p], ((float*)d_v)[p]);
        }
    }
    if (any(moved) && flags[slot_write] == 0)
        atomic_or(&flags[slot_write], 1);
}

// hs_warp with one work-item per row (global size: the rows) and no built-in calls in the
// pixel loop: floor is the truncation of the non-negative position, clamps are ?: (the same
// numbers).
__kernel void hs_warp_cpu(__global const float* i0, __global const float2* g0,
                          __global const float* i1, __global const float2* g1,
                          __global const float2* flow, const int w, const int h,
                          __global float4* terms, __global int* flags)
{
    const int y = get_global_id(0);
    if (y == 0) {
        flags[0] = 0;
        flags[1] = 0;
        flags[2] = 1;
    }
    if (y >= h)
        return;
    for (int x = 0; x < w; ++x) {
        const size_t i = (size_t)y * w + x;
        const float px = x + flow[i].x, py = y + flow[i].y;
        float4 out = 0.0f;
        if (px >= 0.0f && px <= w - 1 && py >= 0.0f && py <= h - 1) {
            const int ix = (int)px, iy = (int)py;  // floor: px, py >= 0
            const float fx = (float)ix, fy = (float)iy;
            float wx[4], wy[4];
            cubic_weights(px - fx, wx);
            cubic_weights(py - fy, wy);
            int cols[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int col = ix - 1 + k;
                cols[k] = col < 0 ? 0 : col > w - 1 ? w - 1 : col;
            }
            float value = 0.0f;
            float2 grad = 0.0f;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int r = iy - 1 + j;
                const size_t row = (size_t)(r < 0 ? 0 : r > h - 1 ? h - 1 : r) * w;
                float rv = 0.0f;
                float2 rg = 0.0f;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    rv += wx[k] * i1[row + cols[k]];
                    rg += wx[k] * g1[row + cols[k]];
                }
                value += wy[j] * rv;
                grad += wy[j] * rg;
            }
            grad = 0.5f * (grad + g0[i]);
            out = (float4)(grad.x, grad.y, value - i0[i], 1.0f);
        }
        terms[i] = out;
    }
}

HS_CPU_INLINE void sort_pair8(float8* a, float8* b)
{
    const int8 swap = *b < *a;
    const float8 lo = swap ? *b : *a;
    *b = swap ? *a : *b;
    *a = lo;
}

HS_DEFINE_MEDIAN5X5(float8, HS_CPU_INLINE, sort_pair8, sort5_8, median5x5_8)

// (u, v) + (du, dv) of pixels n .. n + 7 as u and v lanes.
HS_CPU_INLINE void load_totals8(__global const float2* flow, __global const float2* dflow,
                                size_t n, float8* u, float8* v)
{
    __global const float* f = (__global const float*)(flow + n);
    __global const float* d = (__global const float*)(dflow + n);
    const float8 lo = (float8)(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7])
                      + (float8)(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
    const float8 hi = (float8)(f[8], f[9], f[10], f[11], f[12], f[13], f[14], f[15])
                      + (float8)(d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]);
    *u = (float8)(lo.even, hi.even);
    *v = (float8)(lo.odd, hi.odd);
}

// hs_update with one work-item per row, 8 pixels at a time (a median selects values: the same
// result). Global size: the rows.
__kernel void hs_update_cpu(__global const float2* flow, __global const float2* dflow,
                            const int w, const int h, const int median, __global float2* out)
{
    const int y = get_global_id(0);
    if (y >= h)
        return;
    const size_t at = (size_t)y * w;
    if (!median) {
        for (int x = 0; x < w; ++x)
            out[at + x] = flow[at + x] + dflow[at + x];
        return;
    }
    size_t rows[5];
    for (int j = 0; j < 5; ++j)
        rows[j] = (size_t)clamp(y + j - 2, 0, h - 1) * w;
    for (int x0 = 0; x0 < w; x0 += 8) {
        float8 wu[25], wv[25];
        if (x0 >= 2 && x0 + 10 <= w) {
#pragma unroll
            for (int j = 0; j < 5; ++j)
#pragma unroll
                for (int k = 0; k < 5; ++k)
                    load_totals8(flow, dflow, rows[j] + x0 - 2 + k, wu + 5 * j + k,
                                 wv + 5 * j + k);
        } else {  // near the left or right border: columns replicated per lane
            for (int j = 0; j < 5; ++j)
                for (int k = 0; k < 5; ++k)
                    for (int l = 0; l < 8; ++l) {
                        const size_t n = rows[j] + clamp(x0 + l + k - 2, 0, w - 1);
                        const float2 total = flow[n] + dflow[n];
                        ((float*)(wu + 5 * j + k))[l] = total.x;
                        ((float*)(wv + 5 * j + k))[l] = total.y;
                    }
        }
        const float8 mu = median5x5_8(wu), mv = median5x5_8(wv);
        for (int l = 0; l < 8 && x0 + l < w; ++l)
            out[at + x0 + l] = (float2)(((const float*)&mu)[l], ((const float*)&mv)[l]);
    }
}
#endif
