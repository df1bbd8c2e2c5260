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

// Dense pyramidal Lucas-Kanade, one launch per level (flow/lucas_kanade.py); after common.cl.
//
// Built with LK_RADIUS (window radius), LK_TILE_W (tile width = work-group width, a multiple of
// 4), LK_TILE_H (tile height; LkTiling keeps the local arrays within the device's local memory)
// and LK_GROUP_H (work-group height from the device's work-group limit, dividing LK_TILE_H): they
// size the local tiles and unroll the window loops. A work-group of LK_TILE_W x LK_GROUP_H items
// owns a LK_TILE_W x LK_TILE_H tile, item (lx, ly) its column lx, rows ly * LK_ROWS .. + LK_ROWS
// - 1 (a lower group gives each item more rows, the tile and so the result stay the same). The
// span is the tile and its window halo, LK_SPAN_W x LK_SPAN_H pixels; the terms to window-sum
// are kept per component in rows of LK_SPAN_P >= LK_SPAN_W floats (whole float4s), item lid
// filling entries lid + m * LK_ITEMS.
#if !defined(LK_RADIUS) || !defined(LK_TILE_W) || !defined(LK_TILE_H) || !defined(LK_GROUP_H)
#error "lucas_kanade.cl needs -D LK_RADIUS, LK_TILE_W, LK_TILE_H and LK_GROUP_H"
#endif
#if LK_TILE_W % 4 != 0 || LK_TILE_H % LK_GROUP_H != 0
#error "LK_TILE_W must be a multiple of 4 and LK_TILE_H a multiple of LK_GROUP_H"
#endif
#define LK_TAPS (2 * LK_RADIUS + 1)
#define LK_ROWS (LK_TILE_H / LK_GROUP_H)
#define LK_SPAN_W (LK_TILE_W + 2 * LK_RADIUS)
#define LK_SPAN_H (LK_TILE_H + 2 * LK_RADIUS)
#define LK_SPAN_P ((LK_SPAN_W + 3) / 4 * 4)
#define LK_FILL (LK_SPAN_P * LK_SPAN_H)
#define LK_ITEMS (LK_TILE_W * LK_GROUP_H)
#define LK_PER_ITEM ((LK_FILL + LK_ITEMS - 1) / LK_ITEMS)
#define LK_QUADS (LK_TILE_W / 4)
#define LK_ROW_TASKS (LK_SPAN_H * LK_QUADS)
#define LK_ROW_PASSES ((LK_ROW_TASKS + LK_ITEMS - 1) / LK_ITEMS)
#define LK_ROW_LOADS ((2 * LK_RADIUS + 7) / 4)
#define LK_DAMPING 0.1f

// Row pass of the separable window (taps[0 .. LK_TAPS - 1], sum 1) over one component:
// r[row][c] = sum_j taps[j] s[row][c + j] for every span row and tile column, four neighbouring
// columns per task from LK_ROW_LOADS float4 loads (reads stay within the padded row).
inline void lk_window_rows(__local const float4* s, __local float4* r, __constant float* taps,
                           int lid)
{
#pragma unroll
    for (int m = 0; m < LK_ROW_PASSES; ++m) {
        const int task = lid + m * LK_ITEMS;
        if (task < LK_ROW_TASKS) {
            const int row = task / LK_QUADS, quad = task % LK_QUADS;
            __local const float4* from = s + row * (LK_SPAN_P / 4) + quad;
            float v[4 * LK_ROW_LOADS];
#pragma unroll
            for (int i = 0; i < LK_ROW_LOADS; ++i) {
                const float4 a = from[i];
                v[4 * i] = a.x;
                v[4 * i + 1] = a.y;
                v[4 * i + 2] = a.z;
                v[4 * i + 3] = a.w;
            }
            float4 acc = 0.0f;
#pragma unroll
            for (int j = 0; j < LK_TAPS; ++j)
                acc += taps[j] * (float4)(v[j], v[j + 1], v[j + 2], v[j + 3]);
            r[row * LK_QUADS + quad] = acc;
        }
    }
}

// Column pass for the item's LK_ROWS tile pixels, sliding over LK_ROWS + 2 LK_RADIUS rows.
inline void lk_window_cols(__local const float4* rx, __local const float4* ry,
                           __constant float* taps, int lx, int ly, float2* out, const int both)
{
    __local const float* cx = (__local const float*)rx + ly * LK_ROWS * LK_TILE_W + lx;
    __local const float* cy = (__local const float*)ry + ly * LK_ROWS * LK_TILE_W + lx;
#pragma unroll
    for (int t = 0; t < LK_ROWS; ++t)
        out[t] = 0.0f;
#pragma unroll
    for (int j = 0; j < LK_ROWS + 2 * LK_RADIUS; ++j) {
        const float2 v = (float2)(cx[j * LK_TILE_W], both ? cy[j * LK_TILE_W] : 0.0f);
#pragma unroll
        for (int t = 0; t < LK_ROWS; ++t)
            if (j >= t && j - t < LK_TAPS)
                out[t] += taps[j - t] * v;
    }
}

// Per-pixel right-hand side of one Gauss-Newton step, q = g (g . u - e), with g = grad I0,
// u the pixel's flow and e = I1(x + u) - I0(x) (bilinear). Summed over the window it gives the
// exact LK step S u' = sum w q under the first-order model I1(x' + u') = I1(x' + u(x')) +
// g . (u' - u(x')), so a pixel's new flow is a structure-weighted average of its window's
// (a contraction: dense iterations stay stable). Where x + u leaves frame 1, e = 0.
inline float2 lk_rhs(__global const float* i1, int w, int h, int x, int y, float v0, float2 g,
                     float2 u)
{
    const float px = x + u.x, py = y + u.y;
    float e = 0.0f;
    if (px >= 0.0f && px <= w - 1 && py >= 0.0f && py <= h - 1)
        e = bilinear1(i1, w, h, px, py) - v0;
    return g * (dot(g, u) - e);
}

// One whole pyramid level in one launch. Start flow: the coarser level's, prolonged as
// flow_upsample does, when cw > 0, else 0. Then the windowed structure tensor S of frame 0's
// 5-point gradient (the gradient kernel's; window borders replicate the edge pixel) and
// `iterations` Gauss-Newton steps (S + LK_DAMPING I) u' = sum w q + LK_DAMPING u (q: lk_rhs).
// The damping (far below the tensor of any textured pixel) keeps flat pixels at their current
// estimate (the prolonged one on coarse levels) instead of dividing by ~0. When `final` is set
// (level 0), pixels whose tensor's smaller eigenvalue is below min_eig become NaN.
//
// Tiles start at (k LK_TILE_W - offset, k LK_TILE_H - offset) and iterate in local memory:
// the tile's own pixels are updated every step, its halo (pixels of other tiles within the
// window radius) keeps the level's start flow (block Jacobi across tiles, exact LK inside), so
// a launch is a pure function of its inputs. A span position outside the image stands for the
// edge pixel it replicates, tile pixel or halo pixel alike, so image borders add no error.
__kernel __attribute__((reqd_work_group_size(LK_TILE_W, LK_GROUP_H, 1)))
void lk_level(__global const float* i0, __global const float* i1, const int w, const int h,
              __global const float2* coarse, const int cw, const int ch,
              __global float2* flow, __constant float* taps, const int iterations,
              const int offset, const float min_eig, const int final)
{
    __local float2 current[LK_SPAN_W * LK_SPAN_H];  // the tile's current flow, the halo's start
    __local float4 sx[LK_FILL / 4], sy[LK_FILL / 4];  // terms to window-sum, per component
    __local float4 rx[LK_SPAN_H * LK_QUADS], ry[LK_SPAN_H * LK_QUADS];  // their row pass
    __local float* fx = (__local float*)sx;
    __local float* fy = (__local float*)sy;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int lid = ly * LK_TILE_W + lx;
    const int ox = (int)get_group_id(0) * LK_TILE_W - offset;
    const int oy = (int)get_group_id(1) * LK_TILE_H - offset;

    // The item's span entries (beyond the span: padding, computed, stored only as terms that no
    // window reaches): image position (replicated border; every tile holds image pixels, so it
    // stays in the span), frame-0 value and gradient; their start flow goes to `current`.
    int at[LK_PER_ITEM];
    float v0[LK_PER_ITEM];
    float2 g[LK_PER_ITEM];
#pragma unroll
    for (int m = 0; m < LK_PER_ITEM; ++m) {
        const int k = lid + m * LK_ITEMS;
        const int col = k % LK_SPAN_P, row = k / LK_SPAN_P;
        const int x = clamp(ox - LK_RADIUS + col, 0, w - 1);
        const int y = clamp(oy - LK_RADIUS + row, 0, h - 1);
        at[m] = x | (y << 16);
        v0[m] = i0[(size_t)y * w + x];
        g[m] = gradient5(i0, w, h, x, y);
        if (col < LK_SPAN_W && row < LK_SPAN_H)
            current[row * LK_SPAN_W + col] = prolonged_flow(coarse, cw, ch, x, y);
    }

    // Structure tensor of the item's tile pixels: (gx^2, gx gy), then gy^2, windowed.
    float2 sa[LK_ROWS], sb[LK_ROWS];
#pragma unroll
    for (int m = 0; m < LK_PER_ITEM; ++m) {
        const int k = lid + m * LK_ITEMS;
        if (k < LK_FILL) {
            fx[k] = g[m].x * g[m].x;
            fy[k] = g[m].x * g[m].y;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    lk_window_rows(sx, rx, taps, lid);
    lk_window_rows(sy, ry, taps, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    lk_window_cols(rx, ry, taps, lx, ly, sa, 1);
#pragma unroll
    for (int m = 0; m < LK_PER_ITEM; ++m) {
        const int k = lid + m * LK_ITEMS;
        if (k < LK_FILL)
            fx[k] = g[m].y * g[m].y;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    lk_window_rows(sx, rx, taps, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    lk_window_cols(rx, ry, taps, lx, ly, sb, 0);

    // The item's tile pixels in `current` (those outside the image are never read back).
    __local float2* own = current + (ly * LK_ROWS + LK_RADIUS) * LK_SPAN_W + lx + LK_RADIUS;
    float2 u[LK_ROWS];
#pragma unroll
    for (int t = 0; t < LK_ROWS; ++t)
        u[t] = own[t * LK_SPAN_W];

    for (int step = 0; step < iterations; ++step) {
#pragma unroll
        for (int m = 0; m < LK_PER_ITEM; ++m) {
            const int k = lid + m * LK_ITEMS;
            if (k < LK_FILL) {
                const int x = at[m] & 0xFFFF, y = at[m] >> 16;
                const float2 um = current[(y - oy + LK_RADIUS) * LK_SPAN_W + x - ox + LK_RADIUS];
                const float2 q = lk_rhs(i1, w, h, x, y, v0[m], g[m], um);
                fx[k] = q.x;
                fy[k] = q.y;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        lk_window_rows(sx, rx, taps, lid);
        lk_window_rows(sy, ry, taps, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        float2 b[LK_ROWS];
        lk_window_cols(rx, ry, taps, lx, ly, b, 1);
#pragma unroll
        for (int t = 0; t < LK_ROWS; ++t) {
            const float sxx = sa[t].x + LK_DAMPING, sxy = sa[t].y, syy = sb[t].x + LK_DAMPING;
            const float2 rhs = b[t] + LK_DAMPING * u[t];
            u[t] = (float2)(syy * rhs.x - sxy * rhs.y, sxx * rhs.y - sxy * rhs.x)
                   / (sxx * syy - sxy * sxy);
            own[t * LK_SPAN_W] = u[t];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    const int x = ox + lx;
#pragma unroll
    for (int t = 0; t < LK_ROWS; ++t) {
        const int y = oy + ly * LK_ROWS + t;
        if (x >= 0 && x < w && y >= 0 && y < h) {
            const float half_trace = 0.5f * (sa[t].x + sb[t].x);
            const float half_diff = 0.5f * (sa[t].x - sb[t].x);
            const float smallest = half_trace - sqrt(half_diff * half_diff + sa[t].y * sa[t].y);
            flow[(size_t)y * w + x] = final && !(smallest >= min_eig) ? (float2)(NAN, NAN) : u[t];
        }
    }
}

// --- CPU formulation (DeviceLimits.formulation 'cpu'; built with LK_CPU) ------------------------
// lk_level_cpu: lk_level's tiles, steps and arithmetic (the same window sums in the same order),
// one work-item per tile (global size: the tiles, work-groups of one) walking it with plain loops,
// tile columns as float8 in the window passes, and no barriers. Its arrays are in local memory,
// which a group of one work-item owns alone (about 90 KiB at the default window: PoCL has 1 MiB;
// built only for the CPU formulation, so a GPU never compiles it). Window rows are read with
// LOAD8 (common.cl: PoCL calls vload8 rather than inlining it).
#ifdef LK_CPU
#if LK_TILE_W % 8 != 0
#error "lk_level_cpu needs LK_TILE_W to be a multiple of 8"
#endif
#define LK_CHUNKS (LK_TILE_W / 8)
#define LK_SPAN (LK_SPAN_W * LK_SPAN_H)

// Row pass of one component (lk_window_rows): r[row][chunk] over every span row.
inline __attribute__((always_inline)) void lk_rows_cpu(__local const float* s, __local float8* r,
                                                       __constant float* taps)
{
    for (int row = 0; row < LK_SPAN_H; ++row)
        for (int c = 0; c < LK_CHUNKS; ++c) {
            __local const float* from = s + row * LK_SPAN_W + 8 * c;
            float8 acc = 0.0f;
#pragma unroll
            for (int j = 0; j < LK_TAPS; ++j)
                acc += taps[j] * LOAD8(from + j);
            r[row * LK_CHUNKS + c] = acc;
        }
}

// Column pass (lk_window_cols) of tile row t, chunk c.
inline __attribute__((always_inline)) float8 lk_col_cpu(__local const float8* r,
                                                        __constant float* taps, int t, int c)
{
    float8 acc = 0.0f;
#pragma unroll
    for (int j = 0; j < LK_TAPS; ++j)
        acc += taps[j] * r[(t + j) * LK_CHUNKS + c];
    return acc;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void lk_level_cpu(__global const float* i0, __global const float* i1, const int w, const int h,
                  __global const float2* coarse, const int cw, const int ch,
                  __global float2* flow, __constant float* taps, const int iterations,
                  const int offset, const float min_eig, const int final)
{
    __local float2 current[LK_SPAN];  // as lk_level's: the tile's current flow, the halo's start
    __local float v0[LK_SPAN];
    __local float2 g[LK_SPAN];
    __local int at[LK_SPAN];  // span position -> `current` index of its (clamped) image pixel
    __local int span_x[LK_SPAN_W], span_y[LK_SPAN_H];  // image column / row of span positions
    __local float fx[LK_SPAN], fy[LK_SPAN];
    __local float8 rx[LK_SPAN_H * LK_CHUNKS], ry[LK_SPAN_H * LK_CHUNKS];
    __local float8 sxx[LK_TILE_H * LK_CHUNKS], sxy[LK_TILE_H * LK_CHUNKS];
    __local float8 syy[LK_TILE_H * LK_CHUNKS];
    __local float8 ux[LK_TILE_H * LK_CHUNKS], uy[LK_TILE_H * LK_CHUNKS];
    const int ox = (int)get_global_id(0) * LK_TILE_W - offset;
    const int oy = (int)get_global_id(1) * LK_TILE_H - offset;
    if (ox >= w || oy >= h)
        return;
    for (int col = 0; col < LK_SPAN_W; ++col)
        span_x[col] = clamp(ox - LK_RADIUS + col, 0, w - 1);
    for (int row = 0; row < LK_SPAN_H; ++row)
        span_y[row] = clamp(oy - LK_RADIUS + row, 0, h - 1);
    for (int row = 0; row < LK_SPAN_H; ++row) {
        const int y = span_y[row];
        for (int col = 0; col < LK_SPAN_W; ++col) {
            const int x = span_x[col], k = row * LK_SPAN_W + col;
            at[k] = (y - oy + LK_RADIUS) * LK_SPAN_W + x - ox + LK_RADIUS;
            v0[k] = i0[(size_t)y * w + x];
            g[k] = gradient5(i0, w, h, x, y);
            current[k] = prolonged_flow(coarse, cw, ch, x, y);
        }
    }
    // Structure tensor of the tile pixels.
    for (int k = 0; k < LK_SPAN; ++k) {
        fx[k] = g[k].x * g[k].x;
        fy[k] = g[k].x * g[k].y;
    }
    lk_rows_cpu(fx, rx, taps);
    lk_rows_cpu(fy, ry, taps);
    for (int t = 0; t < LK_TILE_H; ++t)
        for (int c = 0; c < LK_CHUNKS; ++c) {
            sxx[t * LK_CHUNKS + c] = lk_col_cpu(rx, taps, t, c);
            sxy[t * LK_CHUNKS + c] = lk_col_cpu(ry, taps, t, c);
        }
    for (int k = 0; k < LK_SPAN; ++k)
        fx[k] = g[k].y * g[k].y;
    lk_rows_cpu(fx, rx, taps);
    for (int t = 0; t < LK_TILE_H; ++t)
        for (int c = 0; c < LK_CHUNKS; ++c) {
            syy[t * LK_CHUNKS + c] = lk_col_cpu(rx, taps, t, c);
            const int own = (t + LK_RADIUS) * LK_SPAN_W + LK_RADIUS + 8 * c;
            __local float* px = (__local float*)(ux + t * LK_CHUNKS + c);
            __local float* py = (__local float*)(uy + t * LK_CHUNKS + c);
            for (int l = 0; l < 8; ++l) {
                px[l] = current[own + l].x;
                py[l] = current[own + l].y;
            }
        }

    for (int step = 0; step < iterations; ++step) {
        for (int row = 0; row < LK_SPAN_H; ++row) {
            const int y = span_y[row];
            for (int col = 0; col < LK_SPAN_W; ++col) {
                const int x = span_x[col], k = row * LK_SPAN_W + col;
                const float2 q = lk_rhs(i1, w, h, x, y, v0[k], g[k], current[at[k]]);
                fx[k] = q.x;
                fy[k] = q.y;
            }
        }
        lk_rows_cpu(fx, rx, taps);
        lk_rows_cpu(fy, ry, taps);
        for (int t = 0; t < LK_TILE_H; ++t)
            for (int c = 0; c < LK_CHUNKS; ++c) {
                const int i = t * LK_CHUNKS + c;
                const float8 bx = lk_col_cpu(rx, taps, t, c), by = lk_col_cpu(ry, taps, t, c);
                const float8 a = sxx[i] + LK_DAMPING, b = sxy[i], d = syy[i] + LK_DAMPING;
                const float8 rhs_x = bx + LK_DAMPING * ux[i], rhs_y = by + LK_DAMPING * uy[i];
                const float8 det = a * d - b * b;
                ux[i] = (d * rhs_x - b * rhs_y) / det;
                uy[i] = (a * rhs_y - b * rhs_x) / det;
                const int own = (t + LK_RADIUS) * LK_SPAN_W + LK_RADIUS + 8 * c;
                __local const float* px = (__local const float*)(ux + i);
                __local const float* py = (__local const float*)(uy + i);
                for (int l = 0; l < 8; ++l)
                    current[own + l] = (float2)(px[l], py[l]);
            }
    }

    __local const float* lanes_xx = (__local const float*)sxx;
    __local const float* lanes_xy = (__local const float*)sxy;
    __local const float* lanes_yy = (__local const float*)syy;
    __local const float* lanes_ux = (__local const float*)ux;
    __local const float* lanes_uy = (__local const float*)uy;
    for (int t = 0; t < LK_TILE_H; ++t) {
        const int y = oy + t;
        for (int col = 0; col < LK_TILE_W; ++col) {
            const int x = ox + col, i = t * LK_TILE_W + col;  // lane col % 8 of chunk col / 8
            if (x >= 0 && x < w && y >= 0 && y < h) {
                const float a = lanes_xx[i], b = lanes_xy[i], d = lanes_yy[i];
                const float half_trace = 0.5f * (a + d);
                const float half_diff = 0.5f * (a - d);
                const float smallest = half_trace - sqrt(half_diff * half_diff + b * b);
                const float2 u = (float2)(lanes_ux[i], lanes_uy[i]);
                flow[(size_t)y * w + x] = final && !(smallest >= min_eig) ? (float2)(NAN, NAN)
                                                                          : u;
            }
        }
    }
}
#endif
