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

// Dense inverse search (flow/dense_inverse_search.py); after common.cl and coarse_to_fine.cl.
// Per level: the patch search twice (patches from the dense start, then from the best
// neighbour), the densification, then the variational refinement: dis_vr_warp and dis_vr_terms
// and the solver, a launch per fixed-point iteration, on a CPU; on a GPU the densification, the
// terms and a level's iterations in one launch (dis_vr_solve_level).
// On a GPU, levels that are not refined are not densified: the next level's search densifies
// its starts as it reads them (dis_search_both_patches), and the finest level's densification
// writes the full-resolution field (dis_densify_upsample_byF).
//
// Built with DIS_PATCH (patch side), DIS_TILE (side of the solver's tiles and areas), DIS_GROUP_W
// x DIS_GROUP_H (dis_vr_solve_level's work-group), DIS_SLOTS (patches a dis_search_group
// work-group takes) and DIS_HALO (the ring an area of dis_vr_solve_level solves around its core).
// The search and the densification have two formulations each, with the same numbers in the same
// order: on a GPU a work-item per lane of a patch (dis_search_group) and per pixel
// (dis_densify); on a CPU a work-item per patch (dis_search) and per 8 pixels of a row
// (dis_densify_rows). The CPU's solver, dis_vr_solve_rows, takes a tile a work-item (a row's 8
// pixels of one colour at a time; a half-sweep updates pixels of one colour, which read only
// pixels of the other); the GPU's, dis_vr_solve_level, an area a work-group, its iterations
// without exchanging dW between areas: the two give flows of the same accuracy, not the same bits.
#if !defined(DIS_PATCH) || !defined(DIS_TILE) || !defined(DIS_GROUP_W) || !defined(DIS_GROUP_H) \
    || !defined(DIS_SLOTS) || !defined(DIS_HALO)
#error "dense_inverse_search.cl needs -D DIS_PATCH, DIS_TILE, DIS_GROUP_W/H, DIS_SLOTS, DIS_HALO"
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
#define DIS_LANES 8  // pixels of a row a CPU work-item takes at once (a float8)

// Origin (left or top pixel) of patch k along an axis of n pixels: k * stride, the last patch
// moved back to end at the border, so every pixel is covered.
inline int dis_origin(int k, int stride, int n)
{
    return k * stride < n - DIS_PATCH ? k * stride : n - DIS_PATCH;
}

// Mean-normalised SSD between frame 0's patch at (ox, oy) and frame 1 at (ox, oy) + f, and the
// mean-normalised descent sums b = sum grad I0 * diff - sum diff * gsum / n (gsum: the
// template's gradient sum). Mean normalisation makes the match blind to a brightness offset.
// The sums are formed as 8 lanes (pixel c of a row in lane c % 8), the rows added in order and
// the lanes folded once, so dis_search (a work-item per patch, a row as float8s: dis_row_sums)
// and dis_search_group (a work-item per lane: dis_group_lanes) give the same numbers.

// The search's helpers are inlined whatever the compiler's estimate: PoCL left the row sums a
// call, and dis_search ran 1.5x slower on a CPU.
#define DIS_INLINE __attribute__((always_inline)) inline

// Where the patch at (ox, oy) samples frame 1 for flow f: the top-left tap (bx, by), the
// fractions (tx, ty), and whether every tap is inside the image.
DIS_INLINE int dis_warp(int w, int h, int ox, int oy, float2 f, int* bx, int* by, float* tx,
                    float* ty)
{
    const float fx = ox + f.x, fy = oy + f.y;
    const float px = fx < -DIS_PATCH ? -DIS_PATCH : (fx > w ? w : fx);
    const float py = fy < -DIS_PATCH ? -DIS_PATCH : (fy > h ? h : fy);
    *bx = floor_int(px);
    *by = floor_int(py);
    *tx = px - (float)*bx;
    *ty = py - (float)*by;
    return *bx >= 0 && *by >= 0 && *bx + DIS_PATCH < w && *by + DIS_PATCH < h;
}

// Row r's sums of d, d^2, d * gx and d * gy (d = warped frame 1 - frame 0) as float8 lanes,
// pixel c in lane c % 8 (a second chunk of 8, or a last one of 4, added to the first). A row of
// 8 is its own sums, no additions: the caller adds the rows.
typedef float8 dis_sums;
#define DIS_CHUNKS ((DIS_PATCH + 7) / 8)

// Frame 1's row y interpolated along x at the patch's taps (bx + c + tx), chunk by chunk (a
// last chunk of 4 in the lower half).
DIS_INLINE void dis_warp_row(__global const float* i1, int w, int bx, int y, float tx,
                             float8 row[DIS_CHUNKS])
{
    __global const float* p = i1 + (size_t)y * w + bx;
#pragma unroll
    for (int c = 0; c < DIS_PATCH; c += 8) {
        if (c + 8 <= DIS_PATCH)
            row[c / 8] = LOAD8(p + c) * (1.0f - tx) + LOAD8(p + c + 1) * tx;
        else
            row[c / 8] = (float8)(LOAD4(p + c) * (1.0f - tx) + LOAD4(p + c + 1) * tx,
                                  (float4)(0.0f));
    }
}

// The sums of row r where every tap is inside the image: the row is read as float8s (DIS_PATCH
// is a multiple of 4), so a CPU computes eight pixels an instruction. `upper` holds frame 1's
// row by + r interpolated along x and gets row by + r + 1, which the next row reads as its
// upper one: each row of frame 1 is interpolated once a patch, not twice.
DIS_INLINE void dis_row_sums(__global const float* i0, __global const float2* g0,
                             __global const float* i1, int w, int ox, int oy, int r, int bx,
                             int by, float tx, float ty, float8 upper[DIS_CHUNKS],
                             dis_sums* sd, dis_sums* sdd, dis_sums* sgx, dis_sums* sgy)
{
    float8 lower[DIS_CHUNKS];
    dis_warp_row(i1, w, bx, by + r + 1, tx, lower);
    __global const float* tmpl = i0 + (size_t)(oy + r) * w + ox;
    __global const float* grad = (__global const float*)(g0 + (size_t)(oy + r) * w + ox);
#pragma unroll
    for (int c = 0; c < DIS_PATCH; c += 8) {
        dis_sums d, gx, gy;
        if (c + 8 <= DIS_PATCH) {
            const float16 g = (float16)(LOAD8(grad + 2 * c), LOAD8(grad + 2 * c + 8));
            d = upper[c / 8] * (1.0f - ty) + lower[c / 8] * ty - LOAD8(tmpl + c);
            gx = g.even;
            gy = g.odd;
        } else {  // the last 4 of a side of 4 or 12, lanes 0 to 3
            const float8 g = LOAD8(grad + 2 * c);
            d = (float8)(upper[c / 8].lo * (1.0f - ty) + lower[c / 8].lo * ty - LOAD4(tmpl + c),
                         (float4)(0.0f));
            gx = (float8)(g.even, (float4)(0.0f));
            gy = (float8)(g.odd, (float4)(0.0f));
        }
        if (c == 0) {
            *sd = d;
            *sdd = d * d;
            *sgx = d * gx;
            *sgy = d * gy;
        } else {
            *sd += d;
            *sdd += d * d;
            *sgx += d * gx;
            *sgy += d * gy;
        }
        upper[c / 8] = lower[c / 8];
    }
}

// The sums of row r where a tap is clamped to the border, tap by tap.
DIS_INLINE void dis_row_sums_clamped(__global const float* i0, __global const float2* g0,
                                     __global const float* i1, int w, int h, int ox, int oy,
                                     int r, int bx, int by, float tx, float ty, dis_sums* sd,
                                     dis_sums* sdd, dis_sums* sgx, dis_sums* sgy)
{
    float lanes[4][8] = {{0.0f}};
    const int y0 = clamp_int(by + r, 0, h - 1), y1 = clamp_int(by + r + 1, 0, h - 1);
    for (int c = 0; c < DIS_PATCH; ++c) {
        const size_t at = (size_t)(oy + r) * w + ox + c;
        const int x0 = clamp_int(bx + c, 0, w - 1), x1 = clamp_int(bx + c + 1, 0, w - 1);
        const float top = i1[y0 * w + x0] * (1.0f - tx) + i1[y0 * w + x1] * tx;
        const float bottom = i1[y1 * w + x0] * (1.0f - tx) + i1[y1 * w + x1] * tx;
        const float d = top * (1.0f - ty) + bottom * ty - i0[at];
        const float2 g = g0[at];
        lanes[0][c % 8] += d;
        lanes[1][c % 8] += d * d;
        lanes[2][c % 8] += d * g.x;
        lanes[3][c % 8] += d * g.y;
    }
    *sd = LOAD8(lanes[0]);
    *sdd = LOAD8(lanes[1]);
    *sgx = LOAD8(lanes[2]);
    *sgy = LOAD8(lanes[3]);
}

// The sum of a patch's lanes, in one order for both formulations.
DIS_INLINE float dis_lane_total(dis_sums s)
{
    const float4 q = s.lo + s.hi;
    return q.x + q.y + q.z + q.w;
}

// The cost and b from a patch's sums.
DIS_INLINE float dis_cost(dis_sums sd, dis_sums sdd, dis_sums sgx, dis_sums sgy, float2 gsum,
                          float2* b)
{
    const float total = dis_lane_total(sd);
    const float2 sg = (float2)(dis_lane_total(sgx), dis_lane_total(sgy));
    *b = sg - total * gsum / DIS_N;
    return dis_lane_total(sdd) - total * total / DIS_N;
}

DIS_INLINE float dis_patch_cost(__global const float* i0, __global const float2* g0,
                            __global const float* i1, int w, int h, int ox, int oy, float2 f,
                            float2 gsum, float2* b)
{
    int bx, by;
    float tx, ty;
    const int inside = dis_warp(w, h, ox, oy, f, &bx, &by, &tx, &ty);
    dis_sums sd = 0.0f, sdd = 0.0f, sgx = 0.0f, sgy = 0.0f;
    float8 upper[DIS_CHUNKS];
    if (inside)
        dis_warp_row(i1, w, bx, by, tx, upper);
    for (int r = 0; r < DIS_PATCH; ++r) {
        dis_sums a, aa, ax, ay;
        if (inside)
            dis_row_sums(i0, g0, i1, w, ox, oy, r, bx, by, tx, ty, upper, &a, &aa, &ax, &ay);
        else
            dis_row_sums_clamped(i0, g0, i1, w, h, ox, oy, r, bx, by, tx, ty, &a, &aa, &ax,
                                 &ay);
        sd += a;
        sdd += aa;
        sgx += ax;
        sgy += ay;
    }
    return dis_cost(sd, sdd, sgx, sgy, gsum, b);
}

// Row r's template gradient sums: (sum gx, sum gy, sum gx^2, sum gx gy) and sum gy^2.
DIS_INLINE float4 dis_row_hessian(__global const float2* g0, int w, int ox, int oy, int r,
                              float* syy)
{
    float2 gsum = 0.0f;
    float sxx = 0.0f, sxy = 0.0f;
    *syy = 0.0f;
    for (int c = 0; c < DIS_PATCH; ++c) {
        const float2 g = g0[(size_t)(oy + r) * w + ox + c];
        gsum += g;
        sxx += g.x * g.x;
        sxy += g.x * g.y;
        *syy += g.y * g.y;
    }
    return (float4)(gsum, sxx, sxy);
}

// The template's mean-normalised Hessian (sxx, sxy, syy, det) from its rows' sums, and gsum.
inline float4 dis_hessian(float4 rows, float syy, float2* gsum)
{
    *gsum = rows.xy;
    const float sxx = rows.z - rows.x * rows.x / DIS_N;
    const float sxy = rows.w - rows.x * rows.y / DIS_N;
    const float nyy = syy - rows.y * rows.y / DIS_N;
    const float raw_det = sxx * nyy - sxy * sxy;
    return (float4)(sxx, sxy, nyy, raw_det > DIS_DET_MIN ? raw_det : DIS_DET_MIN);
}

// The descent's step from f: f - H^-1 b.
inline float2 dis_step(float2 f, float4 hessian, float2 b)
{
    return f - (float2)(hessian.z * b.x - hessian.y * b.y, hessian.x * b.y - hessian.y * b.x)
               / hessian.w;
}

// Start flow candidate n of patch (kx, ky) in a propagating pass: its own result (n = 0), then
// its left, right, upper and lower neighbours'; 0 where the neighbour is outside the grid.
inline int dis_candidate(int n, int kx, int ky, int ws, int hs)
{
    const int cx = n == 1 ? kx - 1 : (n == 2 ? kx + 1 : kx);
    const int cy = n == 3 ? ky - 1 : (n == 4 ? ky + 1 : ky);
    return cx >= 0 && cx < ws && cy >= 0 && cy < hs ? cy * ws + cx + 1 : 0;
}

// Dense flow from the patches covering each pixel, weighted by 1 / max(1, |I1(x + f) - I0(x)|)
// of each patch's flow f at that pixel. Patches k < n - 1 start at k * stride and cover pixel
// p for ceil((p - DIS_PATCH + 1) / stride) <= k <= p / stride; the last one starts at
// n - DIS_PATCH.
inline int2 dis_covering(int p, int n, int count, int stride)
{
    return (int2)(p < DIS_PATCH ? 0 : (p - DIS_PATCH + stride) / stride,
                  p / stride < count - 2 ? p / stride : count - 2);
}

inline void dis_vote(__global const float* i1, int w, int h, int x, int y, float v0, float2 f,
                     float2* num, float* den)
{
    const float error = bilinear1(i1, w, h, x + f.x, y + f.y) - v0;
    const float size = error < 0.0f ? -error : error;
    const float weight = 1.0f / (size > 1.0f ? size : 1.0f);
    *num += weight * f;
    *den += weight;
}

// Pixel (x, y)'s dense flow from the patches covering it (dis_densify).
inline float2 dis_densify_pixel(__global const float* i0, __global const float* i1, int w, int h,
                                __global const float2* sparse, int ws, int hs, int stride,
                                int x, int y)
{
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
    return num / den;
}

// One pass of the patch search, a work-item per patch of the ws x hs grid (CPUs). The start is
// the coarser level's flow prolonged to the patch centre (propagate == 0; zero on the coarsest
// level, cw == 0: no dense field is prolonged between levels) or the best, by mean-normalised
// SSD, of the patch's own result of the previous pass and those of its four neighbours
// (propagate != 0; ties keep the earlier of own, left, right, up, down). Then
// inverse-compositional LK: the template's Hessian (mean-normalised) is formed once, each
// iteration is one warp and one update f -= H^-1 b, and the descent stops (keeping the better
// point) once the cost stops falling (a propagating pass starts from its best candidate's cost,
// already computed). A result further than DIS_PATCH from its start is dropped for the start.
__kernel void dis_search(__global const float* i0, __global const float2* g0,
                         __global const float* i1, const int w, const int h,
                         __global const float2* coarse, const int cw, const int ch,
                         __global const float2* sparse_in,
                         __global float2* sparse_out, const int ws, const int hs,
                         const int stride, const int iterations, const int propagate)
{
    const int kx = get_global_id(0), ky = get_global_id(1);
    if (kx >= ws || ky >= hs)
        return;
    const int ox = dis_origin(kx, stride, w), oy = dis_origin(ky, stride, h);
    float4 rows = 0.0f;
    float syy = 0.0f;
    for (int r = 0; r < DIS_PATCH; ++r) {
        float row_yy;
        rows += dis_row_hessian(g0, w, ox, oy, r, &row_yy);
        syy += row_yy;
    }
    float2 gsum;
    const float4 hessian = dis_hessian(rows, syy, &gsum);
    const int k = ky * ws + kx;
    float2 start, b;
    float cost = INFINITY;
    if (!propagate) {
        start = prolonged_flow(coarse, cw, ch, ox + DIS_PATCH / 2, oy + DIS_PATCH / 2);
    } else {
        for (int n = 0; n < 5; ++n) {
            const int at = dis_candidate(n, kx, ky, ws, hs);
            if (!at)
                continue;
            const float2 other = sparse_in[at - 1];
            float2 other_b;
            const float other_cost = dis_patch_cost(i0, g0, i1, w, h, ox, oy, other, gsum,
                                                    &other_b);
            if (n == 0 || other_cost < cost) {
                cost = other_cost;
                start = other;
                b = other_b;
            }
        }
    }
    float2 f = start, previous = start;
    float last = INFINITY;
    for (int t = 0; t < iterations; ++t) {
        if (t > 0 || !propagate)
            cost = dis_patch_cost(i0, g0, i1, w, h, ox, oy, f, gsum, &b);
        if (!(cost < last)) {
            f = previous;
            break;
        }
        last = cost;
        previous = f;
        f = dis_step(f, hessian, b);
    }
    const float2 moved = f - start;
    sparse_out[k] = moved.x * moved.x + moved.y * moved.y > DIS_PATCH * DIS_PATCH ? start : f;
}

// Lane j of dis_row_sums' sums of row r, (d, d^2, d * gx, d * gy): the same operations in
// the same order as the row's float8 (its pixels c = j, j + 8, ...; the zeros a last chunk of
// 4 adds to lanes 4 to 7; none for lanes past a side of 4). dis_search_group's work-item j
// forms it, so the patch's 8 work-items read 8 neighbouring pixels at once. dis_lane_terms
// takes a pixel's four taps of frame 1 (top left, top right, bottom left, bottom right).
inline float4 dis_lane_terms(float4 taps, float v0, float2 g, float tx, float ty)
{
    const float upper = taps.x * (1.0f - tx) + taps.y * tx;
    const float lower = taps.z * (1.0f - tx) + taps.w * tx;
    const float d = upper * (1.0f - ty) + lower * ty - v0;
    return (float4)(d, d * d, d * g.x, d * g.y);
}

// A patch with a tap outside the image: lane j of row r, the taps clamped to the border, every
// pixel added to a lane that starts at 0.
inline float4 dis_lane_row_clamped(__global const float* i0, __global const float2* g0,
                                   __global const float* i1, int w, int h, int ox, int oy,
                                   int r, int bx, int by, float tx, float ty, int j)
{
    if (j >= DIS_PATCH)
        return 0.0f;
    const int y0 = clamp_int(by + r, 0, h - 1), y1 = clamp_int(by + r + 1, 0, h - 1);
    float4 lane = 0.0f;
    for (int c = j; c - j < DIS_PATCH; c += 8) {
        const int x0 = clamp_int(bx + c, 0, w - 1), x1 = clamp_int(bx + c + 1, 0, w - 1);
        const size_t at = (size_t)(oy + r) * w + ox + c;
        const float4 taps = (float4)(i1[y0 * w + x0], i1[y0 * w + x1], i1[y1 * w + x0],
                                     i1[y1 * w + x1]);
        lane += c < DIS_PATCH ? dis_lane_terms(taps, i0[at], g0[at], tx, ty) : 0.0f;
    }
    return lane;
}

// A patch inside the image: lane j's sums over the rows (the first chunk's lane as it is, later
// chunks added). Frame 1's two columns of every row (DIS_PATCH + 1 rows, each shared by a row
// and the one above it), frame 0's pixels and their gradients are loaded before any is used,
// so an evaluation waits for its loads once, not once a row (an H200's dis medium, 640x480,
// levels 4 to 1: 31, 30, 35 and 57 us a search launch row by row, 25, 25, 30 and 38 so).
inline float4 dis_lane_inside(__global const float* i0, __global const float2* g0,
                              __global const float* i1, int w, int ox, int oy, int bx, int by,
                              float tx, float ty, int j)
{
    if (j >= DIS_PATCH)
        return 0.0f;
    float2 frame1[DIS_CHUNKS][DIS_PATCH + 1];
    float frame0[DIS_CHUNKS][DIS_PATCH];
    float2 grad[DIS_CHUNKS][DIS_PATCH];
    for (int k = 0; k < DIS_CHUNKS; ++k) {
        const int c = j + 8 * k < DIS_PATCH ? j + 8 * k : j;  // a missing chunk reloads j
        __global const float* column = i1 + (size_t)by * w + bx + c;
        for (int r = 0; r <= DIS_PATCH; ++r)
            frame1[k][r] = (float2)(column[(size_t)r * w], column[(size_t)r * w + 1]);
        for (int r = 0; r < DIS_PATCH; ++r) {
            const size_t at = (size_t)(oy + r) * w + ox + c;
            frame0[k][r] = i0[at];
            grad[k][r] = g0[at];
        }
    }
    float4 total = 0.0f;
    for (int r = 0; r < DIS_PATCH; ++r) {
        float4 lane = dis_lane_terms((float4)(frame1[0][r], frame1[0][r + 1]), frame0[0][r],
                                     grad[0][r], tx, ty);
        for (int k = 1; k < DIS_CHUNKS; ++k)
            lane += j + 8 * k < DIS_PATCH
                    ? dis_lane_terms((float4)(frame1[k][r], frame1[k][r + 1]), frame0[k][r],
                                     grad[k][r], tx, ty)
                    : 0.0f;
        total += lane;
    }
    return total;
}

// dis_search_group's work-item j for flow f: lanes j, j + DIS_PATCH, ... (< 8) of the patch's
// sums, rows added in order (as dis_patch_cost's float8 sums add them), into `lanes`.
inline void dis_group_lanes(__global const float* i0, __global const float2* g0,
                            __global const float* i1, int w, int h, int ox, int oy, int j,
                            float2 f, __local float (*lanes)[8])
{
    int bx, by;
    float tx, ty;
    const int inside = dis_warp(w, h, ox, oy, f, &bx, &by, &tx, &ty);
    for (int lane = j; lane < 8; lane += DIS_PATCH) {
        float4 total = 0.0f;
        if (inside) {
            total = dis_lane_inside(i0, g0, i1, w, ox, oy, bx, by, tx, ty, lane);
        } else {
            for (int r = 0; r < DIS_PATCH; ++r)
                total += dis_lane_row_clamped(i0, g0, i1, w, h, ox, oy, r, bx, by, tx, ty,
                                              lane);
        }
        lanes[0][lane] = total.x;
        lanes[1][lane] = total.y;
        lanes[2][lane] = total.z;
        lanes[3][lane] = total.w;
    }
}

// The cost and b from a patch's lane sums (dis_group_lanes).
inline float dis_group_cost(__local const float (*lanes)[8], float2 gsum, float2* b)
{
    return dis_cost(LOAD8(lanes[0]), LOAD8(lanes[1]), LOAD8(lanes[2]), LOAD8(lanes[3]), gsum, b);
}

// One pass of dis_search on GPUs for a work-group's patches, DIS_PATCH work-items a patch (a
// slot): work-item j forms the template's Hessian sums of row j, and at each evaluation lane j
// of the patch's sums over its rows (dis_group_lanes: pixels j, j + 8, ... of every row,
// neighbouring work-items reading neighbouring pixels); then every work-item of the slot folds
// the lanes and steps the descent as dis_search does, each the same numbers, so the slot agrees
// on its flow without telling it (one barrier an evaluation: the lanes alternate between
// `sums_a` and `sums_b`, so an evaluation's lanes are written while the previous one's may
// still be read). Every work-item of the group reaches every barrier (the candidates and
// iterations are counted alike for all; a finished or absent patch only skips its loads). The
// start is the coarse field prolonged to the patch centre, which the caller read (`prolonged`,
// propagate == 0), or the best of the 5 candidates the caller read (`valid` where the neighbour
// exists). Returns the pass's result. The local
// arrays are the caller's, a row a slot.
inline float2 dis_group_pass(__global const float* i0, __global const float2* g0,
                             __global const float* i1, int w, int h, float2 prolonged,
                             int slot, int active, int ox, int oy, const float2* candidates,
                             const int* valid, int iterations, int propagate,
                             __local float4 (*part)[DIS_PATCH],
                             __local float (*part_yy)[DIS_PATCH],
                             __local float (*sums_a)[4][8], __local float (*sums_b)[4][8])
{
    const int r = get_local_id(0);
    float row_yy = 0.0f;
    part[slot][r] = active ? dis_row_hessian(g0, w, ox, oy, r, &row_yy) : 0.0f;
    part_yy[slot][r] = row_yy;
    barrier(CLK_LOCAL_MEM_FENCE);
    float4 rows = 0.0f;
    float syy = 0.0f;
    for (int row = 0; row < DIS_PATCH; ++row) {
        rows += part[slot][row];
        syy += part_yy[slot][row];
    }
    float2 gsum;
    const float4 hessian = dis_hessian(rows, syy, &gsum);
    float2 start = 0.0f, b = 0.0f;
    float cost = INFINITY, last = INFINITY;
    int phase = 0;  // evaluations so far: their parity picks the lanes' buffer
    if (!propagate) {
        if (active)
            start = prolonged;
    } else {
        for (int n = 0; n < 5; ++n, ++phase) {
            __local float (*lanes)[8] = (phase & 1 ? sums_b : sums_a)[slot];
            const int at = active && valid[n];
            const float2 other = at ? candidates[n] : (float2)(0.0f);
            if (at)
                dis_group_lanes(i0, g0, i1, w, h, ox, oy, r, other, lanes);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (at) {
                float2 other_b;
                const float other_cost = dis_group_cost(lanes, gsum, &other_b);
                if (n == 0 || other_cost < cost) {
                    cost = other_cost;
                    start = other;
                    b = other_b;
                }
            }
        }
    }
    float2 f = start, previous = start;
    int done = !active;
    for (int t = 0; t < iterations; ++t, ++phase) {
        __local float (*lanes)[8] = (phase & 1 ? sums_b : sums_a)[slot];
        const int measure = (t > 0 || !propagate) && !done;
        if (measure)
            dis_group_lanes(i0, g0, i1, w, h, ox, oy, r, f, lanes);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!done) {
            if (measure)
                cost = dis_group_cost(lanes, gsum, &b);
            if (!(cost < last)) {
                f = previous;
                done = 1;
            } else {
                last = cost;
                previous = f;
                f = dis_step(f, hessian, b);
            }
        }
    }
    const float2 moved = f - start;
    return moved.x * moved.x + moved.y * moved.y > DIS_PATCH * DIS_PATCH ? start : f;
}

// dis_search on GPUs, one pass: DIS_SLOTS patches a work-group (patch k = group * DIS_SLOTS +
// slot), the candidates of a propagating pass read from sparse_in. The search kernels' inputs
// are `restrict` (no store of the kernel reaches them), which NVIDIA's compiler turns into
// faster loads: an H100's dis medium, 640x480, level 1's search 43 -> 40 us (the coarser levels,
// bound by the chain of an evaluation's steps, unchanged).
__kernel __attribute__((reqd_work_group_size(DIS_PATCH, DIS_SLOTS, 1)))
void dis_search_group(__global const float* restrict i0, __global const float2* restrict g0,
                      __global const float* restrict i1, const int w, const int h,
                      __global const float2* restrict coarse, const int cw, const int ch,
                      __global const float2* restrict sparse_in,
                      __global float2* sparse_out, const int ws, const int hs,
                      const int stride, const int iterations, const int propagate)
{
    __local float4 part[DIS_SLOTS][DIS_PATCH];
    __local float part_yy[DIS_SLOTS][DIS_PATCH];
    __local float sums[2][DIS_SLOTS][4][8];
    const int slot = get_local_id(1);
    const int k = (int)get_group_id(1) * DIS_SLOTS + slot;
    const int active = k < ws * hs;
    const int kx = active ? k % ws : 0, ky = active ? k / ws : 0;
    const int ox = dis_origin(kx, stride, w), oy = dis_origin(ky, stride, h);
    float2 candidates[5];
    int valid[5];
    for (int n = 0; n < 5; ++n) {
        const int at = propagate && active ? dis_candidate(n, kx, ky, ws, hs) : 0;
        valid[n] = at != 0;
        candidates[n] = at ? sparse_in[at - 1] : (float2)(0.0f);
    }
    const float2 prolonged = !propagate && active
        ? prolonged_flow(coarse, cw, ch, ox + DIS_PATCH / 2, oy + DIS_PATCH / 2) : (float2)(0.0f);
    const float2 f = dis_group_pass(i0, g0, i1, w, h, prolonged, slot, active, ox, oy,
                                    candidates, valid, iterations, propagate, part, part_yy,
                                    sums[0], sums[1]);
    if (get_local_id(0) == 0 && active)
        sparse_out[k] = f;
}

// Both passes of dis_search_group in one launch: a work-group takes a DIS_BLOCK x DIS_BLOCK
// block of the patch grid and runs the first pass on it and on the ring of its left, right,
// upper and lower neighbours (slots DIS_BLOCK^2 on: up, down, left, right, DIS_BLOCK each),
// keeping the results in local memory, then the second pass on the block, its candidates read
// from there: the numbers of the two launches, the ring's first pass computed twice (by its
// own block too). DIS_BOTH slots: DIS_PATCH * DIS_BOTH work-items, where the device allows.
#define DIS_BLOCK 4
#define DIS_BOTH (DIS_BLOCK * DIS_BLOCK + 4 * DIS_BLOCK)

// Patch (kx, ky) of slot `slot` of block (bx, by), and the slot of patch (cx, cy) (-1 where it
// is neither in the block nor in its ring).
inline int2 dis_block_patch(int slot, int bx, int by)
{
    const int x0 = bx * DIS_BLOCK, y0 = by * DIS_BLOCK, B2 = DIS_BLOCK * DIS_BLOCK;
    if (slot < B2)
        return (int2)(x0 + slot % DIS_BLOCK, y0 + slot / DIS_BLOCK);
    const int side = (slot - B2) / DIS_BLOCK, i = (slot - B2) % DIS_BLOCK;
    return side == 0 ? (int2)(x0 + i, y0 - 1) : side == 1 ? (int2)(x0 + i, y0 + DIS_BLOCK)
           : side == 2 ? (int2)(x0 - 1, y0 + i) : (int2)(x0 + DIS_BLOCK, y0 + i);
}

inline int dis_block_slot(int cx, int cy, int bx, int by)
{
    const int x = cx - bx * DIS_BLOCK, y = cy - by * DIS_BLOCK, B2 = DIS_BLOCK * DIS_BLOCK;
    const int across = x >= 0 && x < DIS_BLOCK, down = y >= 0 && y < DIS_BLOCK;
    if (across && down)
        return y * DIS_BLOCK + x;
    if (across && y == -1)
        return B2 + x;
    if (across && y == DIS_BLOCK)
        return B2 + DIS_BLOCK + x;
    if (down && x == -1)
        return B2 + 2 * DIS_BLOCK + y;
    if (down && x == DIS_BLOCK)
        return B2 + 3 * DIS_BLOCK + y;
    return -1;
}

// Patch (kx, ky) of slot `slot` of block (bx, by) in the grid; (-1, -1) where there is none.
inline int2 dis_both_patch(int slot, int bx, int by, int ws, int hs)
{
    const int2 kk = dis_block_patch(slot, bx, by);
    return kk.x >= 0 && kk.y >= 0 && kk.x < ws && kk.y < hs ? kk : (int2)(-1);
}

// Both passes of a dis_search_both work-group, the first from `prolonged`, the slot's start.
inline void dis_both_passes(__global const float* i0, __global const float2* g0,
                            __global const float* i1, int w, int h, float2 prolonged,
                            __global float2* sparse_out, int ws, int hs, int stride,
                            int iterations, __local float4 (*part)[DIS_PATCH],
                            __local float (*part_yy)[DIS_PATCH],
                            __local float (*sums)[DIS_BOTH][4][8],
                            __local float2* first)
{
    const int slot = get_local_id(1), bx = get_group_id(0), by = get_group_id(1);
    const int2 kk = dis_both_patch(slot, bx, by, ws, hs);
    const int in_grid = kk.x >= 0;
    const int kx = in_grid ? kk.x : 0, ky = in_grid ? kk.y : 0;
    const int ox = dis_origin(kx, stride, w), oy = dis_origin(ky, stride, h);
    float2 candidates[5];
    int valid[5];
    for (int n = 0; n < 5; ++n)
        valid[n] = 0;
    float2 f = dis_group_pass(i0, g0, i1, w, h, prolonged, slot, in_grid, ox, oy, candidates,
                              valid, iterations, 0, part, part_yy, sums[0], sums[1]);
    if (get_local_id(0) == 0)
        first[slot] = f;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int own = in_grid && slot < DIS_BLOCK * DIS_BLOCK;
    for (int n = 0; n < 5; ++n) {
        const int at = own ? dis_candidate(n, kx, ky, ws, hs) : 0;
        valid[n] = at != 0;
        candidates[n] = at ? first[dis_block_slot((at - 1) % ws, (at - 1) / ws, bx, by)]
                           : (float2)(0.0f);
    }
    f = dis_group_pass(i0, g0, i1, w, h, prolonged, slot, own, ox, oy, candidates, valid,
                       iterations, 1, part, part_yy, sums[0], sums[1]);
    if (get_local_id(0) == 0 && own)
        sparse_out[ky * ws + kx] = f;
}

// The centre of the patch of this work-item's slot (a patch origin plus DIS_PATCH / 2), the
// origin of the grid's first patch where the slot has none.
inline int2 dis_both_centre(int w, int h, int ws, int hs, int stride)
{
    const int2 kk = dis_both_patch(get_local_id(1), get_group_id(0), get_group_id(1), ws, hs);
    const int kx = kk.x >= 0 ? kk.x : 0, ky = kk.x >= 0 ? kk.y : 0;
    return (int2)(dis_origin(kx, stride, w), dis_origin(ky, stride, h)) + DIS_PATCH / 2;
}

__kernel __attribute__((reqd_work_group_size(DIS_PATCH, DIS_BOTH, 1)))
void dis_search_both(__global const float* restrict i0, __global const float2* restrict g0,
                     __global const float* restrict i1, const int w, const int h,
                     __global const float2* restrict coarse, const int cw, const int ch,
                     __global float2* sparse_out, const int ws, const int hs, const int stride,
                     const int iterations)
{
    __local float4 part[DIS_BOTH][DIS_PATCH];
    __local float part_yy[DIS_BOTH][DIS_PATCH];
    __local float sums[2][DIS_BOTH][4][8];
    __local float2 first[DIS_BOTH];
    const int2 c = dis_both_centre(w, h, ws, hs, stride);
    dis_both_passes(i0, g0, i1, w, h, prolonged_flow(coarse, cw, ch, c.x, c.y), sparse_out, ws,
                    hs, stride, iterations, part, part_yy, sums, first);
}

// The coarser level's field prolonged to pixel (x, y), as prolonged_flow reads dis_densify's
// output: its four taps densified here from the coarser level's patches (frames i0c, i1c of
// cw x ch, patch flows sparse_c of a wsc x hsc grid), the same numbers bit for bit.
inline float2 dis_prolonged_patches(__global const float* i0c, __global const float* i1c,
                                    int cw, int ch, __global const float2* sparse_c, int wsc,
                                    int hsc, int stride, int x, int y)
{
    const bilinear_taps t = bilinear_at(cw, ch, 0.5f * x, 0.5f * y);
#define DIS_DENSE(px, py) dis_densify_pixel(i0c, i1c, cw, ch, sparse_c, wsc, hsc, stride, px, py)
    return 2.0f * bilinear_mix2(DIS_DENSE(t.x0, t.y0), DIS_DENSE(t.x1, t.y0),
                                DIS_DENSE(t.x0, t.y1), DIS_DENSE(t.x1, t.y1), t.tx, t.ty);
#undef DIS_DENSE
}

// dis_search_both on a level whose coarser level was searched but not refined: the first
// pass's start densified from the coarser level's patch flows as it is read, so that level's
// dense field (dis_densify, a launch) is never made. The same flows bit for bit.
__kernel __attribute__((reqd_work_group_size(DIS_PATCH, DIS_BOTH, 1)))
void dis_search_both_patches(__global const float* restrict i0,
                             __global const float2* restrict g0,
                             __global const float* restrict i1, const int w, const int h,
                             __global const float* restrict i0c,
                             __global const float* restrict i1c, const int cw, const int ch,
                             __global const float2* restrict sparse_c,
                             const int wsc, const int hsc,
                             __global float2* sparse_out, const int ws, const int hs,
                             const int stride, const int iterations)
{
    __local float4 part[DIS_BOTH][DIS_PATCH];
    __local float part_yy[DIS_BOTH][DIS_PATCH];
    __local float sums[2][DIS_BOTH][4][8];
    __local float2 first[DIS_BOTH];
    const int2 c = dis_both_centre(w, h, ws, hs, stride);
    const float2 prolonged = dis_prolonged_patches(i0c, i1c, cw, ch, sparse_c, wsc, hsc, stride,
                                                   c.x, c.y);
    dis_both_passes(i0, g0, i1, w, h, prolonged, sparse_out, ws, hs, stride, iterations, part,
                    part_yy, sums, first);
}

__kernel void dis_densify(__global const float* i0, __global const float* i1, const int w,
                          const int h, __global const float2* sparse, const int ws, const int hs,
                          const int stride, __global float2* dense)
{
    const int2 p = item_pixel(w, h);
    dense[(size_t)p.y * w + p.x] = dis_densify_pixel(i0, i1, w, h, sparse, ws, hs, stride, p.x,
                                                     p.y);
}

// dis_densify then flow_upsample_byF in one launch, for the finest level searched when it is
// not refined (after coarse_to_fine.cl): a DIS_GROUP_W x DIS_GROUP_H work-group densifies its
// pixels and the column and row past them (clamped at the border, as the upsampling's taps)
// into local memory, then each work-item writes its pixel's F x F block of the full-resolution
// field from there: flow_upsample_byF's numbers of dis_densify's field bit for bit, that field
// never written. Work-items past the level densify its last pixel and store nothing.
#define DIS_DENSIFY_UPSAMPLE_BY(F)                                                                \
__kernel __attribute__((reqd_work_group_size(DIS_GROUP_W, DIS_GROUP_H, 1)))                       \
void dis_densify_upsample_by##F(__global const float* i0, __global const float* i1,               \
                                const int w, const int h, __global const float2* sparse,          \
                                const int ws, const int hs, const int stride,                     \
                                __global float2* fine, const int fw, const int fh)                \
{                                                                                                 \
    __local float2 tile[DIS_GROUP_H + 1][DIS_GROUP_W + 1];                                        \
    const int lx = get_local_id(0), ly = get_local_id(1);                                         \
    const int gx = get_global_id(0), gy = get_global_id(1);                                       \
    const int x = gx < w ? gx : w - 1, y = gy < h ? gy : h - 1;                                   \
    const int x1 = gx + 1 < w ? gx + 1 : w - 1, y1 = gy + 1 < h ? gy + 1 : h - 1;                 \
    tile[ly][lx] = dis_densify_pixel(i0, i1, w, h, sparse, ws, hs, stride, x, y);                 \
    if (lx == DIS_GROUP_W - 1)                                                                    \
        tile[ly][lx + 1] = dis_densify_pixel(i0, i1, w, h, sparse, ws, hs, stride, x1, y);        \
    if (ly == DIS_GROUP_H - 1)                                                                    \
        tile[ly + 1][lx] = dis_densify_pixel(i0, i1, w, h, sparse, ws, hs, stride, x, y1);        \
    if (lx == DIS_GROUP_W - 1 && ly == DIS_GROUP_H - 1)                                           \
        tile[ly + 1][lx + 1] = dis_densify_pixel(i0, i1, w, h, sparse, ws, hs, stride, x1, y1);   \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    if (gx < w && gy < h)                                                                         \
        flow_block_by##F(tile[ly][lx], tile[ly][lx + 1], tile[ly + 1][lx], tile[ly + 1][lx + 1],  \
                         (int2)(gx, gy), fine, fw, fh);                                           \
}
DIS_DENSIFY_UPSAMPLE_BY(2)
DIS_DENSIFY_UPSAMPLE_BY(4)
DIS_DENSIFY_UPSAMPLE_BY(8)

// The CPU formulation of dis_densify: a work-item takes 8 neighbouring pixels of a row
// (DIS_LANES, lane i at x0 + i; DIS_DENSIFY_ROWS rows in turn) and each covering patch votes for all of them at once, its
// samples of frame 1 at x + f read as two rows of 8 neighbouring values (a vector load each)
// where no tap is clamped. A lane takes a patch's vote only where dis_densify takes it, in the
// same order, so the sums are the same bit for bit: a lane's other votes weigh 0. Lanes past the
// image compute the last pixel and store nothing.
typedef float8 dis_lanes;
typedef int8 dis_lane_ints;

// dis_sample_lanes lane by lane, for the rare vote it cannot read as two rows of 8 (a tap
// clamped, or rounding that moves a lane's floor); a call, so that the common path keeps its
// values in registers (PoCL: 2x faster with this out of line).
__attribute__((noinline))
dis_lanes dis_sample_each(__global const float* i1, int w, int h, dis_lanes sx, float sy)
{
    float lanes[DIS_LANES], xs[DIS_LANES];
    STORE8(sx, xs);
    for (int i = 0; i < DIS_LANES; ++i)
        lanes[i] = bilinear1(i1, w, h, xs[i], sy);
    return LOAD8(lanes);
}

// The lanes' bilinear samples of i1 at (x + f.x, y + f.y), as bilinear1 computes each.
DIS_INLINE dis_lanes dis_sample_lanes(__global const float* i1, int w, int h, dis_lane_ints x,
                                      int y, float2 f)
{
    const dis_lanes sx = convert_float8(x) + f.x;
    const float sy = (float)y + f.y;
    const int ix0 = floor_int(sx.s0);
    const dis_lanes tx = sx - convert_float8(ix0 + (dis_lane_ints)(0, 1, 2, 3, 4, 5, 6, 7));
    // one floor for all lanes while each lane's fraction is in [0, 1): its taps are then 9
    // neighbouring values of two rows
    const dis_lane_ints fits = tx >= 0.0f && tx < 1.0f;
    const int iy = floor_int(sy);
    if (ix0 < 0 || ix0 + DIS_LANES >= w || iy < 0 || iy + 1 >= h
        || !(fits.s0 & fits.s1 & fits.s2 & fits.s3 & fits.s4 & fits.s5 & fits.s6 & fits.s7))
        return dis_sample_each(i1, w, h, sx, sy);
    const float ty = sy - (float)iy;
    __global const float* top = i1 + (size_t)iy * w + ix0;
    __global const float* bottom = top + w;
    const dis_lanes upper = LOAD8(top) * (1.0f - tx) + LOAD8(top + 1) * tx;
    const dis_lanes lower = LOAD8(bottom) * (1.0f - tx) + LOAD8(bottom + 1) * tx;
    return upper * (1.0f - ty) + lower * ty;
}

DIS_INLINE void dis_vote_lanes(__global const float* i1, int w, int h, dis_lane_ints x, int y,
                               dis_lanes v0, float2 f, dis_lane_ints takes, dis_lanes* nu,
                               dis_lanes* nv, dis_lanes* den)
{
    const dis_lanes error = dis_sample_lanes(i1, w, h, x, y, f) - v0;
    const dis_lanes size = error < 0.0f ? -error : error;
    const dis_lanes weight = takes ? 1.0f / (size > 1.0f ? size : 1.0f) : 0.0f;
    *nu += weight * f.x;
    *nv += weight * f.y;
    *den += weight;
}

// 8 pixels of row y from x0 (dis_densify_rows).
DIS_INLINE void dis_densify_lanes(__global const float* i0, __global const float* i1, int w,
                                  int h, __global const float2* sparse, int ws, int hs,
                                  int stride, int x0, int y, __global float2* dense)
{
    const dis_lane_ints lane = (dis_lane_ints)(0, 1, 2, 3, 4, 5, 6, 7);
    const dis_lane_ints x = x0 + lane < w ? x0 + lane : w - 1;
    float base[DIS_LANES];
    for (int i = 0; i < DIS_LANES; ++i)
        base[i] = i0[(size_t)y * w + (x0 + i < w ? x0 + i : w - 1)];
    const dis_lanes v0 = LOAD8(base);
    // dis_covering per lane: the columns of patches (before the last) covering each pixel
    const dis_lane_ints first = x < DIS_PATCH ? 0 : (x - DIS_PATCH + stride) / stride;
    const dis_lane_ints end = x / stride < ws - 2 ? x / stride : ws - 2;
    const dis_lane_ints last_col = x >= w - DIS_PATCH;
    const int2 rows = dis_covering(y, h, hs, stride);
    const int last_row = y >= h - DIS_PATCH;
    int lo = first.s0, hi = end.s7;
    dis_lanes nu = 0.0f, nv = 0.0f, den = 0.0f;
    for (int a = rows.x; a <= rows.y + last_row; ++a) {
        const int k = a <= rows.y ? a : hs - 1;  // after the covering rows: the last one
        for (int b = lo; b <= hi; ++b)
            dis_vote_lanes(i1, w, h, x, y, v0, sparse[k * ws + b], first <= b && b <= end,
                           &nu, &nv, &den);
        if (last_col.s7)  // the lanes grow along the row: the last is past w - DIS_PATCH first
            dis_vote_lanes(i1, w, h, x, y, v0, sparse[k * ws + ws - 1], last_col, &nu, &nv,
                           &den);
    }
    float u[DIS_LANES], v[DIS_LANES];
    STORE8(nu / den, u);
    STORE8(nv / den, v);
    for (int i = 0; i < DIS_LANES && x0 + i < w; ++i)
        dense[(size_t)y * w + x0 + i] = (float2)(u[i], v[i]);
}

// A work-item takes 8 pixels of DIS_DENSIFY_ROWS rows: PoCL starts each work-group at some cost
// (a level of 160 x 120: 0.17 -> 0.13 ms with 8 rows instead of 1).
#define DIS_DENSIFY_ROWS 8
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dis_densify_rows(__global const float* i0, __global const float* i1, const int w,
                      const int h, __global const float2* sparse, const int ws, const int hs,
                      const int stride, __global float2* dense)
{
    const int x0 = (int)get_global_id(0) * DIS_LANES;
    const int y0 = (int)get_global_id(1) * DIS_DENSIFY_ROWS;
    if (x0 >= w)
        return;
    for (int y = y0; y < y0 + DIS_DENSIFY_ROWS && y < h; ++y)
        dis_densify_lanes(i0, i1, w, h, sparse, ws, hs, stride, x0, y, dense);
}

// Refinement, start: frame 1 warped by the flow (bilinear, replicated border); out (average of
// both frames, warped - I0).
inline float2 dis_warp_pixel(__global const float* i0, __global const float* i1, int w, int h,
                             int x, int y, float2 f)
{
    const size_t i = (size_t)y * w + x;
    const float warped = bilinear1(i1, w, h, x + f.x, y + f.y);
    return (float2)(0.5f * (i0[i] + warped), warped - i0[i]);
}

__kernel void dis_vr_warp(__global const float* i0, __global const float* i1,
                          __global const float2* flow, const int w, const int h,
                          __global float2* out)
{
    const int2 p = item_pixel(w, h);
    const size_t i = (size_t)p.y * w + p.x;
    out[i] = dis_warp_pixel(i0, i1, w, h, p.x, p.y, flow[i]);
}

// The derivatives of dis_vr_warp's output `ai` (I: the average, Iz: the difference), central
// differences with replicated borders, as 8 planes of w * h floats: Ix, Iy, Iz, Ixz, Iyz, Ixx,
// Ixy, Iyy; the second ones the central differences of Ix and Iy, formed here at the neighbours
// as a first pass would store them, in one launch. Planes: dis_vr_solve_rows reads 16 pixels of
// a row of one term as one vector.
#define DIS_TERMS 8

// dis_diff2 (central difference (f[+1] - f[-1]) / 2 with replicated borders along (dx, dy), per
// component) and dis_pixel_terms (pixel (x, y)'s 8 terms, plane k in lane k), written once for
// `ai` in SPACE memory with pixel (x, y) at index AT(x, y): the whole warped pair in global
// memory (dis_vr_terms) and an area's local copy (dis_vr_solve_level, origin (ox, oy)).
#define DIS_TERMS_HELPERS(SPACE, suffix, AT) \
inline float2 dis_diff2##suffix(SPACE const float2* ai, int w, int h, int ox, int oy, int x, \
                                int y, int dx, int dy) \
{ \
    const int xa = x + dx < w ? x + dx : w - 1, ya = y + dy < h ? y + dy : h - 1; \
    const int xb = x - dx > 0 ? x - dx : 0, yb = y - dy > 0 ? y - dy : 0; \
    return 0.5f * (ai[AT(xa, ya)] - ai[AT(xb, yb)]); \
} \
\
inline float8 dis_pixel_terms##suffix(SPACE const float2* ai, int w, int h, int ox, int oy, \
                                      int x, int y) \
{ \
    const int xa = x + 1 < w ? x + 1 : w - 1, ya = y + 1 < h ? y + 1 : h - 1; \
    const int xb = x - 1 > 0 ? x - 1 : 0, yb = y - 1 > 0 ? y - 1 : 0; \
    const float2 dx = dis_diff2##suffix(ai, w, h, ox, oy, x, y, 1, 0); \
    const float2 dy = dis_diff2##suffix(ai, w, h, ox, oy, x, y, 0, 1); \
    return (float8)(dx.x, dy.x, ai[AT(x, y)].y, dx.y, dy.y, \
                    0.5f * (dis_diff2##suffix(ai, w, h, ox, oy, xa, y, 1, 0).x \
                            - dis_diff2##suffix(ai, w, h, ox, oy, xb, y, 1, 0).x), \
                    0.5f * (dis_diff2##suffix(ai, w, h, ox, oy, x, ya, 1, 0).x \
                            - dis_diff2##suffix(ai, w, h, ox, oy, x, yb, 1, 0).x), \
                    0.5f * (dis_diff2##suffix(ai, w, h, ox, oy, x, ya, 0, 1).x \
                            - dis_diff2##suffix(ai, w, h, ox, oy, x, yb, 0, 1).x)); \
}

// dis_vr_solve_level's local copy: the area and a DIS_RING-pixel ring around it, DIS_WIDE wide.
#define DIS_RING 2
#define DIS_WIDE (DIS_TILE + 2 * DIS_RING)
#define DIS_AT_IMAGE(x, y) ((size_t)(y) * w + (x))
#define DIS_AT_TILE(x, y) (((y) - oy + DIS_RING) * DIS_WIDE + (x) - ox + DIS_RING)
DIS_TERMS_HELPERS(__global, , DIS_AT_IMAGE)
DIS_TERMS_HELPERS(__local, _local, DIS_AT_TILE)

__kernel void dis_vr_terms(__global const float2* ai, const int w, const int h,
                           __global float* terms)
{
    const int2 p = item_pixel(w, h);
    const float8 v = dis_pixel_terms(ai, w, h, 0, 0, p.x, p.y);
    const size_t i = (size_t)p.y * w + p.x, plane = (size_t)w * h;
    terms[i] = v.s0;
    terms[i + plane] = v.s1;
    terms[i + 2 * plane] = v.s2;
    terms[i + 3 * plane] = v.s3;
    terms[i + 4 * plane] = v.s4;
    terms[i + 5 * plane] = v.s5;
    terms[i + 6 * plane] = v.s6;
    terms[i + 7 * plane] = v.s7;
}

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
// flow_out. This is dis_vr_solve_rows (CPUs: one work-item walks the tile, a row's pixels of one
// colour as a float8); GPUs run a level's iterations in one launch (dis_vr_solve_level, below).
// The helpers below are written once for a float and for 8 lanes, so both kernels form their
// systems with the same numbers in the same order.

// DIS_REFINE_HELPERS(T, SQRT, suffix) defines, for values of type T (float, float8):
// dis_smooth_weight: smoothness weight of a pixel, for the edges to its right and lower
//   neighbours, from the forward differences of W + dW there (0 where the image ends);
// dis_data_system: the data terms' part of a pixel's system at the lagged dW (du, dv): a11,
//   a12, a22, b1, b2, from terms a = (Ix, Iy, Iz, Ixz), e = (Iyz, Ixx, Ixy, Iyy); reciprocals of
//   the normalisations keep it to 5 divisions;
// dis_system: the whole system from the data part, the edge weights wn (left, right, up, down;
//   0 where no neighbour) and W at the pixel and its neighbours: (1 / a11, 1 / a22) with the
//   smoothness on the diagonal, and the right-hand side with the pull of W's differences (the
//   part that does not move in the sweeps).
#define DIS_REFINE_HELPERS(T, SQRT, suffix) \
DIS_INLINE T dis_smooth_weight##suffix(T ux, T vx, T uy, T vy, float a2) \
{ \
    return a2 / SQRT(ux * ux + vx * vx + uy * uy + vy * vy + DIS_EPS2); \
} \
\
DIS_INLINE void dis_data_system##suffix(T ax, T ay, T az, T aw, T ex, T ey, T ez, T ew, T du, \
                                        T dv, float g2, float d2, T* a11, T* a12, T* a22, \
                                        T* b1, T* b2) \
{ \
    const T inv_norm = 1.0f / (ax * ax + ay * ay + DIS_ZETA2); \
    const T residual = az + ax * du + ay * dv; \
    const T wd = d2 / SQRT(residual * residual * inv_norm + DIS_EPS2) * inv_norm; \
    const T inx = 1.0f / (ey * ey + ez * ez + DIS_ZETA2); \
    const T iny = 1.0f / (ew * ew + ez * ez + DIS_ZETA2); \
    const T rx = aw + ey * du + ez * dv; \
    const T ry = ex + ez * du + ew * dv; \
    const T wg = g2 / SQRT(rx * rx * inx + ry * ry * iny + DIS_EPS2); \
    *a11 = wd * ax * ax + DIS_ZETA2 + wg * (ey * ey * inx + ez * ez * iny); \
    *a12 = wd * ax * ay + wg * (ey * ez * inx + ez * ew * iny); \
    *a22 = wd * ay * ay + DIS_ZETA2 + wg * (ez * ez * inx + ew * ew * iny); \
    *b1 = -wd * az * ax - wg * (ey * aw * inx + ez * ex * iny); \
    *b2 = -wd * az * ay - wg * (ez * aw * inx + ew * ex * iny); \
} \
\
DIS_INLINE void dis_system##suffix(T a11, T a22, T b1, T b2, T wl, T wr, T wu, T wd, \
                                   T own_u, T own_v, T l_u, T l_v, T r_u, T r_v, T u_u, \
                                   T u_v, T d_u, T d_v, T* i11, T* i22, T* r1, T* r2) \
{ \
    const T sum = wl + wr + wu + wd; \
    *i11 = 1.0f / (a11 + sum); \
    *i22 = 1.0f / (a22 + sum); \
    *r1 = b1 + (wl * (l_u - own_u) + wr * (r_u - own_u) + wu * (u_u - own_u) \
                + wd * (d_u - own_u)); \
    *r2 = b2 + (wl * (l_v - own_v) + wr * (r_v - own_v) + wu * (u_v - own_v) \
                + wd * (d_v - own_v)); \
}
DIS_REFINE_HELPERS(float, SQRT_OP, )
DIS_REFINE_HELPERS(float8, sqrt8, 8)

inline int dis_in_image(int gx, int gy, int w, int h)
{
    return gx >= 0 && gy >= 0 && gx < w && gy < h;
}

// A level's densification and refinement in one launch (GPUs): a work-group densifies the
// patch flows (sparse, of a ws x hs grid) on a DIS_TILE^2 area and a DIS_RING ring and warps
// them there, into local memory (dis_densify, dis_vr_warp), forms the area's 8 terms from
// there (dis_pixel_terms_local: every neighbour it reads, clamped into the image, lies in the
// ring; each work-item holds its pixels' terms), then solves the area, its core of DIS_CORE^2
// pixels and a DIS_HALO ring, for all `iterations` fixed-point iterations, with dW in the
// 1-pixel span ring around the area held at 0 (dW's start value: areas never exchange dW), and
// writes W + dW of the core to flow_out. Each iteration is dis_vr_solve_rows' on the area:
// robust weights lagged at the iteration start, DIS_SWEEPS red-black SOR sweeps. The halo keeps
// the cores' borders off the frozen ring: 5 launches of 16^2 tiles cost 5 x 9 us on an H200,
// most of it a launch's fixed cost; one about 27 us (Middlebury medium EPE 0.342 against
// 0.338). The densification in the same launch (overlapping areas densify their overlap each)
// spares a launch a level: an H100's 640x480 frame, dis medium 363-366 -> 356 us, fast 261-263
// -> 251-252.
#define DIS_CORE (DIS_TILE - 2 * DIS_HALO)
#define DIS_AREA_LOOP(a) for (int a = lid; a < DIS_TILE * DIS_TILE; a += DIS_ITEMS)
#define DIS_AREA_ITEMS ((DIS_TILE * DIS_TILE + DIS_ITEMS - 1) / DIS_ITEMS)  // pixels an item
__kernel __attribute__((reqd_work_group_size(DIS_GROUP_W, DIS_GROUP_H, 1)))
void dis_vr_solve_level(__global const float* i0, __global const float* i1, const int w,
                        const int h, __global const float2* sparse, const int ws, const int hs,
                        const int stride, __global float2* flow_out, const int iterations,
                        const float a2, const float g2, const float d2)
{
    __local float2 ai[DIS_WIDE * DIS_WIDE];       // the warped pair, the area and its ring
    __local float2 dense[DIS_WIDE * DIS_WIDE];    // W there
    __local float2 base[DIS_SPAN * DIS_SPAN];     // W
    __local float2 total[DIS_SPAN * DIS_SPAN];    // W + dW at the iteration start
    __local float2 d[DIS_SPAN * DIS_SPAN];        // dW
    __local float smooth[DIS_SPAN * DIS_SPAN];
    __local float4 edges[DIS_TILE * DIS_TILE];
    __local float4 system[DIS_TILE * DIS_TILE];
    __local float2 rhs[DIS_TILE * DIS_TILE];
    const int lid = get_local_id(1) * DIS_GROUP_W + get_local_id(0);
    const int ox = (int)get_group_id(0) * DIS_CORE - DIS_HALO;  // the area's origin
    const int oy = (int)get_group_id(1) * DIS_CORE - DIS_HALO;
    for (int k = lid; k < DIS_WIDE * DIS_WIDE; k += DIS_ITEMS) {
        const int x = ox - DIS_RING + k % DIS_WIDE, y = oy - DIS_RING + k / DIS_WIDE;
        if (dis_in_image(x, y, w, h)) {  // the copy's cells outside the image are never read
            const float2 f = dis_densify_pixel(i0, i1, w, h, sparse, ws, hs, stride, x, y);
            ai[k] = dis_warp_pixel(i0, i1, w, h, x, y, f);
            dense[k] = f;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float8 held[DIS_AREA_ITEMS];  // the terms of this item's pixels a, in order
    DIS_AREA_LOOP(a) {
        const int x = ox + a % DIS_TILE, y = oy + a / DIS_TILE;
        held[a / DIS_ITEMS] = dis_in_image(x, y, w, h)
                              ? dis_pixel_terms_local(ai, w, h, ox, oy, x, y) : (float8)(0.0f);
    }
    for (int k = lid; k < DIS_SPAN * DIS_SPAN; k += DIS_ITEMS) {  // borders clamped
        const int gx = clamp_int(ox - 1 + k % DIS_SPAN, 0, w - 1);
        const int gy = clamp_int(oy - 1 + k / DIS_SPAN, 0, h - 1);
        const float2 f = dense[DIS_AT_TILE(gx, gy)];
        base[k] = f;
        total[k] = f;
        d[k] = (float2)(0.0f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int iteration = 0; iteration < iterations; ++iteration) {
        for (int k = lid; k < DIS_SPAN * DIS_SPAN; k += DIS_ITEMS) {
            const int sx = k % DIS_SPAN, sy = k / DIS_SPAN;
            const int gx = ox - 1 + sx, gy = oy - 1 + sy;
            const int inside = sx <= DIS_TILE && sy <= DIS_TILE && dis_in_image(gx, gy, w, h);
            // past the image's last column or row the difference is 0 (replicated border)
            const float2 here = total[k];
            const float2 ddx = total[k + 1 < DIS_SPAN * DIS_SPAN ? k + 1 : k] - here;
            const float2 ddy = total[k + DIS_SPAN < DIS_SPAN * DIS_SPAN ? k + DIS_SPAN : k] - here;
            smooth[k] = inside ? dis_smooth_weight(ddx.x, ddx.y, ddy.x, ddy.y, a2) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        DIS_AREA_LOOP(a) {
            const int gx = ox + a % DIS_TILE, gy = oy + a / DIS_TILE;
            if (!dis_in_image(gx, gy, w, h))
                continue;
            const int me = (a / DIS_TILE + 1) * DIS_SPAN + a % DIS_TILE + 1;
            const float8 m = held[a / DIS_ITEMS];
            float a11, a12, a22, b1, b2;
            dis_data_system(m.s0, m.s1, m.s2, m.s3, m.s4, m.s5, m.s6, m.s7, d[me].x, d[me].y, g2,
                            d2, &a11, &a12, &a22, &b1, &b2);
            const float4 wn = (float4)(gx > 0 ? smooth[me - 1] : 0.0f,
                                       gx < w - 1 ? smooth[me] : 0.0f,
                                       gy > 0 ? smooth[me - DIS_SPAN] : 0.0f,
                                       gy < h - 1 ? smooth[me] : 0.0f);
            const float2 own = base[me], l = base[me - 1], r = base[me + 1];
            const float2 up = base[me - DIS_SPAN], dn = base[me + DIS_SPAN];
            float i11, i22, r1, r2;
            dis_system(a11, a22, b1, b2, wn.x, wn.y, wn.z, wn.w, own.x, own.y, l.x, l.y, r.x, r.y,
                       up.x, up.y, dn.x, dn.y, &i11, &i22, &r1, &r2);
            edges[a] = wn;
            system[a] = (float4)(i11, a12, i22, 0.0f);
            rhs[a] = (float2)(r1, r2);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int sweep = 0; sweep < DIS_SWEEPS; ++sweep) {
            for (int parity = 0; parity < 2; ++parity) {
                DIS_AREA_LOOP(a) {
                    const int gx = ox + a % DIS_TILE, gy = oy + a / DIS_TILE;
                    if (((gx + gy) & 1) != parity || !dis_in_image(gx, gy, w, h))
                        continue;
                    const int me = (a / DIS_TILE + 1) * DIS_SPAN + a % DIS_TILE + 1;
                    const float4 wn = edges[a], c = system[a];
                    const float2 sigma = wn.x * d[me - 1] + wn.y * d[me + 1]
                                         + wn.z * d[me - DIS_SPAN] + wn.w * d[me + DIS_SPAN]
                                         + rhs[a];
                    float2 du = d[me];
                    du.x = (1.0f - DIS_OMEGA) * du.x + DIS_OMEGA * (sigma.x - c.y * du.y) * c.x;
                    du.y = (1.0f - DIS_OMEGA) * du.y + DIS_OMEGA * (sigma.y - c.y * du.x) * c.z;
                    d[me] = du;
                }
                barrier(CLK_LOCAL_MEM_FENCE);
            }
        }
        for (int k = lid; k < DIS_SPAN * DIS_SPAN; k += DIS_ITEMS) {
            // a span pixel past the image's border copies the pixel it is clamped to
            const int gx = clamp_int(ox - 1 + k % DIS_SPAN, 0, w - 1);
            const int gy = clamp_int(oy - 1 + k / DIS_SPAN, 0, h - 1);
            total[k] = base[k] + d[(gy - oy + 1) * DIS_SPAN + gx - ox + 1];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int k = lid; k < DIS_CORE * DIS_CORE; k += DIS_ITEMS) {
        const int tx = DIS_HALO + k % DIS_CORE, ty = DIS_HALO + k / DIS_CORE;
        if (dis_in_image(ox + tx, oy + ty, w, h))
            flow_out[(size_t)(oy + ty) * w + ox + tx] = total[(ty + 1) * DIS_SPAN + tx + 1];
    }
}
#undef DIS_AREA_LOOP
#undef DIS_AREA_ITEMS

#if DIS_TILE == 16
// dis_vr_solve_rows keeps W + dW and dW per component in two planes per span row, the span's
// even and odd columns (DIS_HALF each), and the smoothness weights likewise: in a half-sweep
// the pixels of one colour in a tile row are every other column, i.e. 8 neighbouring entries of
// one plane, and their left, right, upper and lower neighbours 8 neighbouring entries of the
// other plane or of the rows above and below. Span columns 2 * (base + lane) + odd with base
// = !odd are tile columns of one colour: 1, 3, .. 15 (odd) or 2, 4, .. 16 (even). The tile
// pixels' coefficients are stored by (row, plane, lane) in the same order. Lanes outside the
// image get a zero system: no weights, so the image never reads them.
#define DIS_HALF (DIS_SPAN / 2)
#define DIS_PLANE(row, odd) (((row) * 2 + (odd)) * DIS_HALF)
#define DIS_COEF(ty, odd) (((ty) * 2 + (odd)) * DIS_LANES)

// The 8 values of a 16-pixel tile row of one colour in a row of w floats: tile columns 0, 2, ..
// 14 (span columns odd) or 1, 3, .. 15; clamped into the row where the tile overhangs it.
DIS_INLINE float8 dis_tile_lanes(__global const float* row, int ox, int w, int odd)
{
    float16 r;
    if (ox >= 0 && ox + DIS_TILE <= w) {
        r = (float16)(LOAD8(row + ox), LOAD8(row + ox + 8));
    } else {
        float c[DIS_TILE];
        for (int i = 0; i < DIS_TILE; ++i)
            c[i] = row[clamp_int(ox + i, 0, w - 1)];
        r = (float16)(LOAD8(c), LOAD8(c + 8));
    }
    return odd ? r.even : r.odd;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void dis_vr_solve_rows(__global const float* terms, __global const float2* flow,
                       __global const float2* dflow_in, __global float2* dflow_out,
                       __global float2* flow_out, const int w, const int h, const int offset,
                       const int fresh, const int last, const float a2, const float g2,
                       const float d2)
{
    __local float tu[DIS_SPAN * DIS_SPAN], tv[DIS_SPAN * DIS_SPAN];  // W + dW at the start
    __local float u[DIS_SPAN * DIS_SPAN], v[DIS_SPAN * DIS_SPAN];    // dW
    __local float smooth[DIS_SPAN * DIS_SPAN];
    __local float wl[DIS_TILE * 2 * DIS_LANES], wr[DIS_TILE * 2 * DIS_LANES];
    __local float wu[DIS_TILE * 2 * DIS_LANES], wd[DIS_TILE * 2 * DIS_LANES];
    __local float i11[DIS_TILE * 2 * DIS_LANES], a12[DIS_TILE * 2 * DIS_LANES];
    __local float i22[DIS_TILE * 2 * DIS_LANES];
    __local float r1[DIS_TILE * 2 * DIS_LANES], r2[DIS_TILE * 2 * DIS_LANES];
    const int ox = (int)get_group_id(0) * DIS_TILE - offset;
    const int oy = (int)get_group_id(1) * DIS_TILE - offset;
    const size_t plane = (size_t)w * h;
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
    const float8 none = 0.0f;
    for (int sy = 0; sy < DIS_SPAN; ++sy) {
        const size_t row = (size_t)clamp_int(oy - 1 + sy, 0, h - 1) * w;
        for (int sx = 0; sx < DIS_SPAN; ++sx) {
            const size_t g = row + clamp_int(ox - 1 + sx, 0, w - 1);
            const int at = DIS_PLANE(sy, sx & 1) + sx / 2;
            const float2 loaded = dflow_in[g];
            const float2 dd = fresh ? (float2)(0.0f) : loaded;
            const float2 t = flow[g] + dd;
            tu[at] = t.x;
            tv[at] = t.y;
            u[at] = dd.x;
            v[at] = dd.y;
        }
    }
    // smoothness weights of span rows 0 .. DIS_TILE, columns 0 .. DIS_TILE (the span's borders
    // are clamped: past the image's last column or row the difference is 0)
    for (int sy = 0; sy <= DIS_TILE; ++sy) {
        const int gy = oy - 1 + sy, row_inside = gy >= 0 && gy < h;
        for (int odd = 0; odd < 2; ++odd) {
            const int base = !odd, here = DIS_PLANE(sy, odd) + base;
            const int right = DIS_PLANE(sy, !odd) + 1, down = DIS_PLANE(sy + 1, odd) + base;
            const int8 gx = ox - 1 + 2 * (base + lane) + odd;
            const float8 hu = LOAD8(tu + here), hv = LOAD8(tv + here);
            const float8 s = dis_smooth_weight8(LOAD8(tu + right) - hu, LOAD8(tv + right) - hv,
                                                LOAD8(tu + down) - hu, LOAD8(tv + down) - hv, a2);
            STORE8((gx >= 0) & (gx < w) & (row_inside ? -1 : 0) ? s : none, smooth + here);
        }
        const int here = DIS_PLANE(sy, 0), right = DIS_PLANE(sy, 1), down = DIS_PLANE(sy + 1, 0);
        const int gx = ox - 1;  // span column 0
        smooth[here] = row_inside && gx >= 0 && gx < w
            ? dis_smooth_weight(tu[right] - tu[here], tv[right] - tv[here],
                                tu[down] - tu[here], tv[down] - tv[here], a2) : 0.0f;
    }
    for (int ty = 0; ty < DIS_TILE; ++ty) {
        const int sy = ty + 1, gy = oy + ty;
        const __global float* row = terms + (size_t)clamp_int(gy, 0, h - 1) * w;
        for (int odd = 0; odd < 2; ++odd) {
            const int base = !odd, own = DIS_PLANE(sy, odd) + base;
            const int left = DIS_PLANE(sy, !odd), right = left + 1;
            const int up = DIS_PLANE(sy - 1, odd) + base, down = DIS_PLANE(sy + 1, odd) + base;
            const int8 gx = ox - 1 + 2 * (base + lane) + odd;
            const int8 inside = (gx >= 0) & (gx < w) & (gy >= 0 && gy < h ? -1 : 0);
            float8 c11, c12, c22, c1, c2;
            dis_data_system8(dis_tile_lanes(row, ox, w, odd),
                             dis_tile_lanes(row + plane, ox, w, odd),
                             dis_tile_lanes(row + 2 * plane, ox, w, odd),
                             dis_tile_lanes(row + 3 * plane, ox, w, odd),
                             dis_tile_lanes(row + 4 * plane, ox, w, odd),
                             dis_tile_lanes(row + 5 * plane, ox, w, odd),
                             dis_tile_lanes(row + 6 * plane, ox, w, odd),
                             dis_tile_lanes(row + 7 * plane, ox, w, odd), LOAD8(u + own),
                             LOAD8(v + own), g2, d2, &c11, &c12, &c22, &c1, &c2);
            const float8 el = gx > 0 ? LOAD8(smooth + left) : none;
            const float8 er = gx < w - 1 ? LOAD8(smooth + own) : none;
            const float8 eu = gy > 0 ? LOAD8(smooth + up) : none;
            const float8 ed = gy < h - 1 ? LOAD8(smooth + own) : none;
            float8 inv11, inv22, rhs1, rhs2;
            dis_system8(c11, c22, c1, c2, el, er, eu, ed, LOAD8(tu + own) - LOAD8(u + own),
                        LOAD8(tv + own) - LOAD8(v + own), LOAD8(tu + left) - LOAD8(u + left),
                        LOAD8(tv + left) - LOAD8(v + left), LOAD8(tu + right) - LOAD8(u + right),
                        LOAD8(tv + right) - LOAD8(v + right), LOAD8(tu + up) - LOAD8(u + up),
                        LOAD8(tv + up) - LOAD8(v + up), LOAD8(tu + down) - LOAD8(u + down),
                        LOAD8(tv + down) - LOAD8(v + down), &inv11, &inv22, &rhs1, &rhs2);
            const int c = DIS_COEF(ty, odd);
            STORE8(inside ? el : none, wl + c);
            STORE8(inside ? er : none, wr + c);
            STORE8(inside ? eu : none, wu + c);
            STORE8(inside ? ed : none, wd + c);
            STORE8(inside ? inv11 : none, i11 + c);
            STORE8(inside ? c12 : none, a12 + c);
            STORE8(inside ? inv22 : none, i22 + c);
            STORE8(inside ? rhs1 : none, r1 + c);
            STORE8(inside ? rhs2 : none, r2 + c);
        }
    }
    for (int sweep = 0; sweep < DIS_SWEEPS; ++sweep) {
        for (int parity = 0; parity < 2; ++parity) {
            for (int ty = 0; ty < DIS_TILE; ++ty) {
                const int sy = ty + 1;
                // span columns of this colour in this row: odd (1, 3, ..) or even (2, 4, ..)
                const int odd = ((parity - (ox - 1) - (oy + ty)) & 1);
                const int own = DIS_PLANE(sy, odd) + !odd;
                const int left = DIS_PLANE(sy, !odd), right = left + 1;
                const int up = DIS_PLANE(sy - 1, odd) + !odd;
                const int down = DIS_PLANE(sy + 1, odd) + !odd;
                const int c = DIS_COEF(ty, odd);
                const float8 cu = LOAD8(u + own), cv = LOAD8(v + own);
                const float8 su = LOAD8(wl + c) * LOAD8(u + left)
                                  + LOAD8(wr + c) * LOAD8(u + right)
                                  + LOAD8(wu + c) * LOAD8(u + up)
                                  + LOAD8(wd + c) * LOAD8(u + down) + LOAD8(r1 + c);
                const float8 sv = LOAD8(wl + c) * LOAD8(v + left)
                                  + LOAD8(wr + c) * LOAD8(v + right)
                                  + LOAD8(wu + c) * LOAD8(v + up)
                                  + LOAD8(wd + c) * LOAD8(v + down) + LOAD8(r2 + c);
                const float8 b = LOAD8(a12 + c);
                const float8 nu = (1.0f - DIS_OMEGA) * cu
                                  + DIS_OMEGA * (su - b * cv) * LOAD8(i11 + c);
                const float8 nv = (1.0f - DIS_OMEGA) * cv
                                  + DIS_OMEGA * (sv - b * nu) * LOAD8(i22 + c);
                STORE8(nu, u + own);
                STORE8(nv, v + own);
            }
        }
    }
    for (int ty = 0; ty < DIS_TILE; ++ty) {
        for (int tx = 0; tx < DIS_TILE; ++tx) {
            const int gx = ox + tx, gy = oy + ty, sx = tx + 1;
            if (!dis_in_image(gx, gy, w, h))
                continue;
            const size_t g = (size_t)gy * w + gx;
            const int at = DIS_PLANE(ty + 1, sx & 1) + sx / 2;
            const float2 dd = (float2)(u[at], v[at]);
            dflow_out[g] = dd;
            if (last)
                flow_out[g] = flow[g] + dd;
        }
    }
}
#endif
