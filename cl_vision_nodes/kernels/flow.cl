// Dense optical flow: Gaussian pyramid, 5-point gradients, pyramidal Lucas-Kanade,
// coarse-to-fine robust Horn-Schunck (red-black SOR + median) and full-search block matching.
// NumPy references of every kernel: cl_vision_nodes/flow/reference.py.
//
// Conventions: images are float32 row-major on the 0..255 scale; flow is float2 (u, v) in pixels
// of its pyramid level, from frame 0 (previous) to frame 1 (current); work-item
// (get_global_id(0), get_global_id(1)) is pixel (x, y), so neighbouring work-items touch
// neighbouring addresses. Kernels without local memory guard their own bounds, so any global
// size and any local size the driver picks are correct. The tiled kernels (lk_level, hs_sor,
// bm_search) require their work-group size, take global sizes rounded up to it, and let every
// work-item of a group reach every barrier (out-of-image items only skip loads and stores).
//
// Build defines: the block matcher needs BM_BLOCK, BM_RADIUS and BM_LOCAL (work-group size, a
// power of two), Lucas-Kanade LK_RADIUS and LK_TILE_H; built without them the program holds
// every other kernel.
#pragma OPENCL FP_CONTRACT OFF

// Reflect-101 border (cv2.BORDER_REFLECT_101) for offsets up to one image length, then clamped,
// so it is safe for any stencil on any size (n == 1 included).
inline int mirror(int i, int n)
{
    i = abs(i);
    i = (n - 1) - abs((n - 1) - i);
    return clamp(i, 0, n - 1);
}

inline float2 bilinear2(__global const float2* img, int w, int h, float x, float y)
{
    const float fx = floor(x), fy = floor(y);
    const float tx = x - fx, ty = y - fy;
    const int x0 = clamp((int)fx, 0, w - 1), x1 = clamp((int)fx + 1, 0, w - 1);
    const int y0 = clamp((int)fy, 0, h - 1), y1 = clamp((int)fy + 1, 0, h - 1);
    const float2 top = img[y0 * w + x0] * (1.0f - tx) + img[y0 * w + x1] * tx;
    const float2 bottom = img[y1 * w + x0] * (1.0f - tx) + img[y1 * w + x1] * tx;
    return top * (1.0f - ty) + bottom * ty;
}

inline float bilinear1(__global const float* img, int w, int h, float x, float y)
{
    const float fx = floor(x), fy = floor(y);
    const float tx = x - fx, ty = y - fy;
    const int x0 = clamp((int)fx, 0, w - 1), x1 = clamp((int)fx + 1, 0, w - 1);
    const int y0 = clamp((int)fy, 0, h - 1), y1 = clamp((int)fy + 1, 0, h - 1);
    const float top = img[y0 * w + x0] * (1.0f - tx) + img[y0 * w + x1] * tx;
    const float bottom = img[y1 * w + x0] * (1.0f - tx) + img[y1 * w + x1] * tx;
    return top * (1.0f - ty) + bottom * ty;
}

// ---- pyramid and gradients -----------------------------------------------------------------

// One pyramid step, identical to cv2.pyrDown: 5x5 binomial blur ([1 4 6 4 1]/16 per axis, the
// anti-alias Gaussian of sigma ~1 that a factor-0.5 step needs) sampled at even pixels, so
// coarse pixel (x, y) sits exactly on fine pixel (2x, 2y) and dst is ((sw+1)/2, (sh+1)/2).
__kernel void pyr_down(__global const float* src, const int sw, const int sh,
                       __global float* dst, const int dw, const int dh)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= dw || y >= dh)
        return;
    const float taps[5] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f};
    float acc = 0.0f;
    for (int j = 0; j < 5; ++j) {
        __global const float* row = src + (size_t)mirror(2 * y + j - 2, sh) * sw;
        float r = 0.0f;
        for (int i = 0; i < 5; ++i)
            r += taps[i] * row[mirror(2 * x + i - 2, sw)];
        acc += taps[j] * r;
    }
    dst[(size_t)y * dw + x] = acc * (1.0f / 256.0f);
}

// Sample i of a line of n values (stride apart) extended beyond its ends by odd reflection,
// I(-k) = 2 I(0) - I(k): linear ramps continue, so border derivatives are not forced to 0
// (exact for the 5-point stencil on lines of 3 or more pixels).
inline float odd_extended(__global const float* line, int i, int n, int stride)
{
    const float inner = line[(size_t)mirror(i, n) * stride];
    if (i < 0)
        return 2.0f * line[0] - inner;
    if (i >= n)
        return 2.0f * line[(size_t)(n - 1) * stride] - inner;
    return inner;
}

// Spatial gradient with the 5-point central stencil (I[-2] - 8 I[-1] + 8 I[1] - I[2]) / 12
// on the odd-extended image: (d/dx, d/dy) at pixel (x, y).
inline float2 gradient5(__global const float* img, int w, int h, int x, int y)
{
    __global const float* row = img + (size_t)y * w;
    __global const float* col = img + x;
    const float gx = (odd_extended(row, x - 2, w, 1) - 8.0f * odd_extended(row, x - 1, w, 1)
                      + 8.0f * odd_extended(row, x + 1, w, 1) - odd_extended(row, x + 2, w, 1))
                     * (1.0f / 12.0f);
    const float gy = (odd_extended(col, y - 2, h, w) - 8.0f * odd_extended(col, y - 1, h, w)
                      + 8.0f * odd_extended(col, y + 1, h, w) - odd_extended(col, y + 2, h, w))
                     * (1.0f / 12.0f);
    return (float2)(gx, gy);
}

__kernel void gradient(__global const float* img, const int w, const int h,
                       __global float2* grad)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    grad[(size_t)y * w + x] = gradient5(img, w, h, x, y);
}

// Coarse-to-fine prolongation: fine pixel (x, y) lies at coarse (x/2, y/2) (see pyr_down);
// bilinear, and the vectors double with the pixel size.
__kernel void flow_upsample(__global const float2* coarse, const int cw, const int ch,
                            __global float2* fine, const int fw, const int fh)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= fw || y >= fh)
        return;
    fine[(size_t)y * fw + x] = 2.0f * bilinear2(coarse, cw, ch, 0.5f * x, 0.5f * y);
}

// ---- Lucas-Kanade ------------------------------------------------------------------------------
#ifdef LK_RADIUS
// Built with LK_RADIUS (window radius) and LK_TILE_H (tile height, a multiple of LK_GROUP_H;
// lucas_kanade.tile_height keeps the local arrays within 47 KiB): they size the local tiles and
// unroll the window loops. A work-group of LK_TILE_W x LK_GROUP_H items owns a LK_TILE_W x
// LK_TILE_H tile, item (lx, ly) its column lx, rows ly * LK_ROWS .. + LK_ROWS - 1. The span is
// the tile and its window halo, LK_SPAN_W x LK_SPAN_H pixels; the terms to window-sum are kept
// per component in rows of LK_SPAN_P >= LK_SPAN_W floats (whole float4s), item lid filling
// entries lid + m * LK_ITEMS.
#define LK_TILE_W 32
#define LK_GROUP_H 8
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
            current[row * LK_SPAN_W + col] =
                cw > 0 ? 2.0f * bilinear2(coarse, cw, ch, 0.5f * x, 0.5f * y) : (float2)(0.0f);
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
#endif

// ---- Horn-Schunck ------------------------------------------------------------------------------

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

#define HS_TILE 16
#define HS_SPAN (HS_TILE + 2)

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
// Input dflow_in (ignored and taken as 0 when `fresh`, the first launch of a warping step),
// output dflow_out (ping-pong): a launch is a pure function of its inputs.
//
// Convergence without host round trips, in flags[0..2] (one slot per launch k, k % 3; hs_warp
// sets slot 2, the one launch 0 reads): launch k reads slot `read` (raised by launch k-1): 0
// there means the previous launch changed no pixel by more than tol, and this launch only
// copies dflow_in to dflow_out. Launch k raises slot `write` on a change > tol and clears slot
// `reset`, the one launch k+1 writes.
__kernel __attribute__((reqd_work_group_size(HS_TILE, HS_TILE, 1)))
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
    const int x = ox + lx, y = oy + ly;
    if (get_global_id(0) == 0 && get_global_id(1) == 0)
        flags[slot_reset] = 0;
    const int active = flags[slot_read] != 0;
    for (int k = ly * HS_TILE + lx; k < HS_SPAN * HS_SPAN; k += HS_TILE * HS_TILE) {
        const int gx = clamp(ox - 1 + k % HS_SPAN, 0, w - 1);
        const int gy = clamp(oy - 1 + k / HS_SPAN, 0, h - 1);
        const size_t g = (size_t)gy * w + gx;
        total[k] = fresh ? flow[g] : flow[g] + dflow_in[g];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int inside = x >= 0 && x < w && y >= 0 && y < h;
    const size_t i = inside ? (size_t)y * w + x : 0;
    const float2 base = inside ? flow[i] : (float2)(0.0f);
    const float4 t = inside ? terms[i] : (float4)(0.0f);
    float2 d = inside && !fresh ? dflow_in[i] : (float2)(0.0f);
    const int me = (ly + 1) * HS_SPAN + lx + 1;
    int moved = 0;
    for (int sweep = 0; sweep < sweeps; ++sweep) {
        for (int parity = 0; parity < 2; ++parity) {
            if (active && inside && ((x + y) & 1) == parity) {
                const float2 own = base + d;
                float2 weight_sum = 0.0f, pull = 0.0f;
                if (x > 0)
                    hs_neighbour(total[me - 1], own, base, inv_eps_s2, &weight_sum, &pull);
                if (x < w - 1)
                    hs_neighbour(total[me + 1], own, base, inv_eps_s2, &weight_sum, &pull);
                if (y > 0)
                    hs_neighbour(total[me - HS_SPAN], own, base, inv_eps_s2, &weight_sum, &pull);
                if (y < h - 1)
                    hs_neighbour(total[me + HS_SPAN], own, base, inv_eps_s2, &weight_sum, &pull);
                const float residual = t.z + t.x * d.x + t.y * d.y;
                const float wd = t.w * charbonnier_weight(residual, inv_eps_d2);
                const float a11 = wd * t.x * t.x + alpha2 * weight_sum.x;
                const float a12 = wd * t.x * t.y;
                const float a22 = wd * t.y * t.y + alpha2 * weight_sum.y;
                const float b1 = alpha2 * pull.x - wd * t.x * t.z;
                const float b2 = alpha2 * pull.y - wd * t.y * t.z;
                const float det = a11 * a22 - a12 * a12;
                if (det > 0.0f) {
                    const float2 solved = (float2)(a22 * b1 - a12 * b2, a11 * b2 - a12 * b1) / det;
                    const float2 next = d + omega * (solved - d);
                    const float2 change = fabs(next - d);
                    moved |= fmax(change.x, change.y) > tol;
                    d = next;
                    total[me] = base + d;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    if (inside)
        dflow_out[i] = d;
    if (moved && flags[slot_write] == 0)
        atomic_or(&flags[slot_write], 1);
}

inline void sort_pair(float2* a, float2* b)
{
    const float2 lo = fmin(*a, *b);
    *b = fmax(*a, *b);
    *a = lo;
}

// Optimal 9-comparator network sorting v[0], v[stride], ..., v[4 * stride] per component.
inline void sort5(float2* v, int stride)
{
    sort_pair(v, v + stride);
    sort_pair(v + 3 * stride, v + 4 * stride);
    sort_pair(v + 2 * stride, v + 4 * stride);
    sort_pair(v + 2 * stride, v + 3 * stride);
    sort_pair(v, v + 3 * stride);
    sort_pair(v, v + 2 * stride);
    sort_pair(v + stride, v + 4 * stride);
    sort_pair(v + stride, v + 3 * stride);
    sort_pair(v + stride, v + 2 * stride);
}

// Median of a row-major 5x5 window per component in 153 comparators (a plain selection needs
// 234). Sorting the columns, then the rows, orders the window along both axes; then 6 entries
// are known to be below the median and 6 above, and the median is that of the 13 others.
inline float2 median5x5(float2* m)
{
#pragma unroll
    for (int c = 0; c < 5; ++c)
        sort5(m + c, 5);
#pragma unroll
    for (int r = 0; r < 5; ++r)
        sort5(m + 5 * r, 1);
    float2 v[13] = {m[3], m[4], m[7], m[8], m[9], m[11], m[12], m[13], m[15], m[16], m[17],
                    m[20], m[21]};
    // 7 bubble passes move the 7 largest, sorted, to v[6..12].
#pragma unroll
    for (int pass = 0; pass < 7; ++pass)
#pragma unroll
        for (int k = 0; k < 12 - pass; ++k)
            sort_pair(v + k, v + k + 1);
    return v[6];
}

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

// ---- block matching ----------------------------------------------------------------------------
#ifdef BM_BLOCK
#define BM_SPAN (BM_BLOCK + 2 * BM_RADIUS)
#define BM_SIDE (2 * BM_RADIUS + 1)
#define BM_CANDIDATES (BM_SIDE * BM_SIDE)

// Matching cost of the candidate displaced by (dx, dy): the mean absolute difference of the
// 8-bit values over the block pixels whose match lies inside frame 1 (-1 in the tile), in
// fixed point (1/1024 grey level, exact integer arithmetic); UINT_MAX when fewer than half of
// the block's `inside` pixels have a match, so blocks at the border still find their motion.
inline uint block_cost(__local const short* ref, __local const short* area, int dx, int dy,
                       int inside)
{
    uint sad = 0;
    int count = 0;
    for (int y = 0; y < BM_BLOCK; ++y) {
        __local const short* arow = area + (y + dy + BM_RADIUS) * BM_SPAN + dx + BM_RADIUS;
        for (int x = 0; x < BM_BLOCK; ++x) {
            const int a = ref[y * BM_BLOCK + x];
            const int b = arow[x];
            if (a >= 0 && b >= 0) {
                sad += abs(a - b);
                ++count;
            }
        }
    }
    return 2 * count >= inside ? (sad << 10) / count : UINT_MAX;
}

// Vertex of the parabola through (-1, left), (0, mid), (1, right), within +-0.5 px.
inline float parabola_offset(uint left, uint mid, uint right)
{
    if (left == UINT_MAX || right == UINT_MAX)
        return 0.0f;
    const float l = (float)left, m = (float)mid, r = (float)right;
    const float curvature = l - 2.0f * m + r;
    return curvature > 0.0f ? clamp((l - r) / (2.0f * curvature), -0.5f, 0.5f) : 0.0f;
}

// One work-group per BM_BLOCK x BM_BLOCK block of frame 0 (partial blocks at the right and
// bottom use their inside pixels). Frame values are quantised to 8 bits (round to nearest).
// The block and its search area of frame 1 are cached in local memory; each work-item scans a
// stride of the (2R+1)^2 candidates; the minimum of the key (cost, |d|^2, raster index) picks
// the best cost (block_cost: SAD per matched pixel), ties going to the smallest motion, then to
// the first in raster order (d = 0 always has a cost). With `subpixel`, a parabola through the
// costs of the 4-neighbour displacements refines each axis. Every pixel of the block receives
// the block's vector.
__kernel __attribute__((reqd_work_group_size(BM_LOCAL, 1, 1)))
void bm_search(__global const float* i0, __global const float* i1, const int w, const int h,
               const int subpixel, __global float2* flow)
{
    __local short ref[BM_BLOCK * BM_BLOCK];
    __local short area[BM_SPAN * BM_SPAN];
    __local ulong keys[BM_LOCAL];
    __local uint neighbour_cost[4];
    const int lid = get_local_id(0);
    const int x0 = get_group_id(0) * BM_BLOCK, y0 = get_group_id(1) * BM_BLOCK;
    const int inside = min(BM_BLOCK, w - x0) * min(BM_BLOCK, h - y0);
    for (int k = lid; k < BM_BLOCK * BM_BLOCK; k += BM_LOCAL) {
        const int x = x0 + k % BM_BLOCK, y = y0 + k / BM_BLOCK;
        ref[k] = (x < w && y < h) ? convert_uchar_sat_rte(i0[(size_t)y * w + x]) : -1;
    }
    for (int k = lid; k < BM_SPAN * BM_SPAN; k += BM_LOCAL) {
        const int x = x0 - BM_RADIUS + k % BM_SPAN, y = y0 - BM_RADIUS + k / BM_SPAN;
        area[k] = (x >= 0 && x < w && y >= 0 && y < h)
            ? convert_uchar_sat_rte(i1[(size_t)y * w + x]) : -1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    ulong best = ULONG_MAX;
    for (int c = lid; c < BM_CANDIDATES; c += BM_LOCAL) {
        const int dx = c % BM_SIDE - BM_RADIUS, dy = c / BM_SIDE - BM_RADIUS;
        const uint cost = block_cost(ref, area, dx, dy, inside);
        if (cost != UINT_MAX)
            best = min(best, ((ulong)cost << 32) | ((ulong)(dx * dx + dy * dy) << 16) | (ulong)c);
    }
    keys[lid] = best;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BM_LOCAL / 2; stride > 0; stride >>= 1) {
        if (lid < stride)
            keys[lid] = min(keys[lid], keys[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ulong key = keys[0];
    const int c = (int)(key & 0xFFFF);
    const int dx = c % BM_SIDE - BM_RADIUS, dy = c / BM_SIDE - BM_RADIUS;
    if (lid < 4) {
        const int nx = dx + (lid == 0 ? -1 : lid == 1 ? 1 : 0);
        const int ny = dy + (lid == 2 ? -1 : lid == 3 ? 1 : 0);
        const int in_range = abs(nx) <= BM_RADIUS && abs(ny) <= BM_RADIUS;
        neighbour_cost[lid] = (subpixel && in_range) ? block_cost(ref, area, nx, ny, inside)
                                                     : UINT_MAX;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float2 vector = (float2)(dx, dy);
    if (subpixel) {
        const uint mid = (uint)(key >> 32);
        vector.x += parabola_offset(neighbour_cost[0], mid, neighbour_cost[1]);
        vector.y += parabola_offset(neighbour_cost[2], mid, neighbour_cost[3]);
    }
    for (int k = lid; k < BM_BLOCK * BM_BLOCK; k += BM_LOCAL) {
        const int x = x0 + k % BM_BLOCK, y = y0 + k / BM_BLOCK;
        if (x < w && y < h)
            flow[(size_t)y * w + x] = vector;
    }
}
#endif
