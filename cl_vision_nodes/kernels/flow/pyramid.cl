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

// Gaussian pyramid and gradients of one frame (flow/pyramid.py); after common.cl.
// Build defines: PYR_RUN = coarse rows a work-item of the _rows kernels makes (ROW_RUN);
// PYR_GW x PYR_GH = the work-group of pyr_down2_mono8(_gradient) and pyr_down_gradients
// (AREA_GROUP as the device allows).

// One pyramid step, identical to cv2.pyrDown: 5x5 binomial blur ([1 4 6 4 1]/16 per axis, the
// anti-alias Gaussian of sigma ~1 that a factor-0.5 step needs) sampled at even pixels, so
// coarse pixel (x, y) sits exactly on fine pixel (2x, 2y) and dst is ((sw+1)/2, (sh+1)/2).
//
// PYRAMID_STEP(S, T, LOAD16, LOAD4) defines the step's functions for a source of element type
// T whose rows are `pitch` elements apart, named with suffix S: float levels (no suffix), and
// a mono8 frame's bytes as uploaded (_mono8: level 1 made with the decode fused in; a byte's
// value is exact in float, so the same level bit for bit as from the decoded frame):
//   pyr_down_pixel: a coarse pixel's 25 taps through the mirrored border;
//   pyr_down_at: the same value, away from the border read directly in the order the mirrored
//     path sums them (PoCL vectorises it, 2.6x faster on a CPU);
//   pyr_down_rows8: pyr_down on CPUs, a work-item taking 8 coarse pixels (PYR_LANES) of each of
//     PYR_RUN rows, each source row as one 16-wide and one 4-wide load split into even and odd
//     lanes and summed along the row once (pyr_taps8), for the 2 or 3 coarse rows that read it:
//     the 25 taps of 8 pixels are vector operations instead of PoCL's strided gathers across
//     work-items (a level of 320 x 240 from 640 x 480: 0.33 -> 0.18 ms on 2 cores), the
//     mirrored rows of the top and bottom taken as the rows they mirror; columns near the
//     left and right border take pyr_down_pixel, lane by lane.
#define PYR_LANES 8
#define PYR_ROW(r) ((r)[0] + 4.0f * (r)[1] + 6.0f * (r)[2] + 4.0f * (r)[3] + (r)[4])
inline float8 pyr_taps8(const float16 a, const float4 b)
{
    const float8 e0 = a.even, o0 = a.odd;
    const float8 e1 = (float8)(e0.s1234, e0.s567, b.s0);
    const float8 o1 = (float8)(o0.s1234, o0.s567, b.s1);
    const float8 e2 = (float8)(e0.s2345, e0.s67, b.s0, b.s2);
    return e0 + 4.0f * o0 + 6.0f * e1 + 4.0f * o1 + e2;
}

#define PYRAMID_STEP(S, T, LOAD16, LOAD4) \
inline float pyr_down_pixel##S(__global const T* src, int pitch, int sw, int sh, int x, int y) \
{ \
    const float taps[5] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f}; \
    float acc = 0.0f; \
    for (int j = 0; j < 5; ++j) { \
        __global const T* row = src + (size_t)mirror(2 * y + j - 2, sh) * pitch; \
        float r = 0.0f; \
        for (int i = 0; i < 5; ++i) \
            r += taps[i] * row[mirror(2 * x + i - 2, sw)]; \
        acc += taps[j] * r; \
    } \
    return acc; \
} \
\
inline float pyr_down_at##S(__global const T* src, int pitch, int sw, int sh, int x, int y) \
{ \
    float acc = 0.0f; \
    if (x >= 1 && 2 * x + 2 < sw && y >= 1 && 2 * y + 2 < sh) { \
        __global const T* r = src + (size_t)(2 * y - 2) * pitch + 2 * x - 2; \
        acc = PYR_ROW(r) + 4.0f * PYR_ROW(r + pitch) + 6.0f * PYR_ROW(r + 2 * pitch) \
              + 4.0f * PYR_ROW(r + 3 * pitch) + PYR_ROW(r + 4 * pitch); \
    } else { \
        acc = pyr_down_pixel##S(src, pitch, sw, sh, x, y); \
    } \
    return acc * (1.0f / 256.0f); \
} \
\
inline float8 pyr_row8##S(__global const T* src, int pitch, int sh, int x0, int row) \
{ \
    __global const T* r = src + (size_t)mirror(row, sh) * pitch + 2 * x0 - 2; \
    return pyr_taps8(LOAD16(r), LOAD4(r + 16)); \
} \
\
inline void pyr_down_rows8##S(__global const T* src, int pitch, int sw, int sh, \
                              __global float* dst, int dw, int dh, int x0, int y0) \
{ \
    if (x0 >= dw || y0 >= dh) \
        return; \
    const int y1 = min(y0 + PYR_RUN, dh); \
    if (x0 >= 1 && 2 * (x0 + PYR_LANES - 1) + 2 < sw - 1 && x0 + PYR_LANES <= dw) { \
        float8 h0 = pyr_row8##S(src, pitch, sh, x0, 2 * y0 - 2); \
        float8 h1 = pyr_row8##S(src, pitch, sh, x0, 2 * y0 - 1); \
        float8 h2 = pyr_row8##S(src, pitch, sh, x0, 2 * y0); \
        float8 h3 = pyr_row8##S(src, pitch, sh, x0, 2 * y0 + 1); \
        float8 h4 = pyr_row8##S(src, pitch, sh, x0, 2 * y0 + 2); \
        for (int y = y0; y < y1; ++y) { \
            if (y > y0) { \
                h0 = h2; \
                h1 = h3; \
                h2 = h4; \
                h3 = pyr_row8##S(src, pitch, sh, x0, 2 * y + 1); \
                h4 = pyr_row8##S(src, pitch, sh, x0, 2 * y + 2); \
            } \
            const float8 acc = h0 + 4.0f * h1 + 6.0f * h2 + 4.0f * h3 + h4; \
            vstore8(acc * (1.0f / 256.0f), 0, dst + (size_t)y * dw + x0); \
        } \
        return; \
    } \
    for (int y = y0; y < y1; ++y) \
        for (int lane = 0; lane < PYR_LANES && x0 + lane < dw; ++lane) \
            dst[(size_t)y * dw + x0 + lane] = \
                pyr_down_pixel##S(src, pitch, sw, sh, x0 + lane, y) * (1.0f / 256.0f); \
}

#define PYR_LOAD16_F32(p) vload16(0, p)
#define PYR_LOAD4_F32(p) vload4(0, p)
#define PYR_LOAD16_MONO8(p) convert_float16(vload16(0, p))
#define PYR_LOAD4_MONO8(p) convert_float4(vload4(0, p))
PYRAMID_STEP(, float, PYR_LOAD16_F32, PYR_LOAD4_F32)
PYRAMID_STEP(_mono8, uchar, PYR_LOAD16_MONO8, PYR_LOAD4_MONO8)

__kernel void pyr_down(__global const float* src, const int sw, const int sh,
                       __global float* dst, const int dw, const int dh)
{
    const int2 p = item_pixel(dw, dh);
    dst[(size_t)p.y * dw + p.x] = pyr_down_at(src, sw, sw, sh, p.x, p.y);
}

// Level 1 from a mono8 frame's bytes (rows `step` apart): the decode and pyr_down in one
// launch, which reads 0.3 MB where the two moved 2.8 MB at 640 x 480.
__kernel void pyr_down_mono8(__global const uchar* src, const int step, const int sw,
                             const int sh, __global float* dst, const int dw, const int dh)
{
    const int2 p = item_pixel(dw, dh);
    dst[(size_t)p.y * dw + p.x] = pyr_down_at_mono8(src, step, sw, sh, p.x, p.y);
}

// Tap i of a line of n coarse pixels held mirrored in local memory from pixel a on (pixel j
// at line[(j - a) * stride]), odd-extended as odd_extended extends a stored line.
inline float pyr_area_odd(__local const float* line, int a, int i, int n, int stride)
{
    const float inner = line[(i - a) * stride];
    if (i < 0)
        return 2.0f * line[-a * stride] - inner;
    if (i >= n)
        return 2.0f * line[(n - 1 - a) * stride] - inner;
    return inner;
}

// The 5-point gradient at (x, y) of an area whose row y and column x start at pixels ax and
// ay, odd-extended past the level's w x h as gradient5 does.
inline float2 pyr_area_gradient(__local const float* row, __local const float* col, int ax,
                                int ay, int x, int y, int w, int h, int pitch)
{
    const float gx = (pyr_area_odd(row, ax, x - 2, w, 1)
                      - 8.0f * pyr_area_odd(row, ax, x - 1, w, 1)
                      + 8.0f * pyr_area_odd(row, ax, x + 1, w, 1)
                      - pyr_area_odd(row, ax, x + 2, w, 1)) * (1.0f / 12.0f);
    const float gy = (pyr_area_odd(col, ay, y - 2, h, pitch)
                      - 8.0f * pyr_area_odd(col, ay, y - 1, h, pitch)
                      + 8.0f * pyr_area_odd(col, ay, y + 1, h, pitch)
                      - pyr_area_odd(col, ay, y + 2, h, pitch)) * (1.0f / 12.0f);
    return (float2)(gx, gy);
}

// Level 2 from a mono8 frame's bytes in one launch (GPUs): a work-group makes the level-1
// pixels its level-2 pixels read (an area of 2 PYR_GW + 4 by 2 PYR_GH + 4 from 2 PYR_GW * group
// - 2 on, mirrored at level 1's border as pyr_down reads them) into local memory with
// pyr_down_mono8's sum, then pyr_down's sum of them in its order: the two launches' level 2 bit
// for bit. For a method that reads no level 1 (pyr_down2_mono8) level 1 is never written; for
// one that reads it and its gradient (pyr_down2_mono8_gradient) each work-item writes the 2 x 2
// level-1 pixels its level-2 pixel sits on and their gradients, from the area (which reaches 2
// pixels past them): pyr_down_mono8 and pyr_down_gradient's values bit for bit, a launch fewer.
// Work-items past the level fill the area and store nothing.
#define PYR_AREA_W (2 * PYR_GW + 4)
#define PYR_AREA_H (2 * PYR_GH + 4)
inline void pyr_down2_mono8_area(__local float* area, __global const uchar* src, int step,
                                 int sw, int sh, __global float* dst, int dw, int dh,
                                 __global float* mid, __global float2* mid_grad)
{
    const int mw = (sw + 1) / 2, mh = (sh + 1) / 2;  // level 1
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int ax = 2 * PYR_GW * (int)get_group_id(0) - 2;
    const int ay = 2 * PYR_GH * (int)get_group_id(1) - 2;
    // Level 2 alone reads 2 PYR_GW + 3 by 2 PYR_GH + 3 of it; the gradients one more each way.
    const int fw = mid == 0 ? PYR_AREA_W - 1 : PYR_AREA_W;
    const int fh = mid == 0 ? PYR_AREA_H - 1 : PYR_AREA_H;
    for (int i = ly * PYR_GW + lx; i < fw * fh; i += PYR_GW * PYR_GH) {
        const int tx = i % fw, ty = i / fw;
        area[ty * PYR_AREA_W + tx] = pyr_down_at_mono8(src, step, sw, sh, mirror(ax + tx, mw),
                                                       mirror(ay + ty, mh));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int x = (int)get_global_id(0), y = (int)get_global_id(1);
    if (x >= dw || y >= dh)
        return;
    __local const float* r = area + 2 * ly * PYR_AREA_W + 2 * lx;
    const float acc = PYR_ROW(r) + 4.0f * PYR_ROW(r + PYR_AREA_W)
                      + 6.0f * PYR_ROW(r + 2 * PYR_AREA_W) + 4.0f * PYR_ROW(r + 3 * PYR_AREA_W)
                      + PYR_ROW(r + 4 * PYR_AREA_W);
    dst[(size_t)y * dw + x] = acc * (1.0f / 256.0f);
    if (mid == 0)
        return;
    for (int j = 0; j < 2; ++j) {
        for (int i = 0; i < 2; ++i) {
            const int mx = 2 * x + i, my = 2 * y + j;
            if (mx < mw && my < mh) {
                __local const float* row = area + (my - ay) * PYR_AREA_W;
                mid[(size_t)my * mw + mx] = row[mx - ax];
                mid_grad[(size_t)my * mw + mx] = pyr_area_gradient(
                    row, area + (mx - ax), ax, ay, mx, my, mw, mh, PYR_AREA_W);
            }
        }
    }
}

__kernel __attribute__((reqd_work_group_size(PYR_GW, PYR_GH, 1)))
void pyr_down2_mono8(__global const uchar* src, const int step, const int sw, const int sh,
                     __global float* dst, const int dw, const int dh)
{
    __local float area[PYR_AREA_H * PYR_AREA_W];
    pyr_down2_mono8_area(area, src, step, sw, sh, dst, dw, dh, 0, 0);
}

__kernel __attribute__((reqd_work_group_size(PYR_GW, PYR_GH, 1)))
void pyr_down2_mono8_gradient(__global const uchar* src, const int step, const int sw,
                              const int sh, __global float* mid, __global float2* mid_grad,
                              __global float* dst, const int dw, const int dh)
{
    __local float area[PYR_AREA_H * PYR_AREA_W];
    pyr_down2_mono8_area(area, src, step, sw, sh, dst, dw, dh, mid, mid_grad);
}

// pyr_down, and gradient5 of the source at the 2 x 2 pixels the coarse pixel sits on (GPUs: a
// level and the finer level's gradient in one launch; dst's ceil-halves cover the source).
inline void pyr_down_and_source_gradient(__global const float* src, int sw, int sh,
                                         __global float* dst, int dw, __global float2* grad,
                                         int2 p)
{
    dst[(size_t)p.y * dw + p.x] = pyr_down_at(src, sw, sw, sh, p.x, p.y);
    for (int j = 0; j < 2; ++j) {
        for (int i = 0; i < 2; ++i) {
            const int x = 2 * p.x + i, y = 2 * p.y + j;
            if (x < sw && y < sh)
                grad[(size_t)y * sw + x] = gradient5(src, sw, sh, x, y);
        }
    }
}

__kernel void pyr_down_gradient(__global const float* src, const int sw, const int sh,
                                __global float* dst, const int dw, const int dh,
                                __global float2* grad)
{
    pyr_down_and_source_gradient(src, sw, sh, dst, dw, grad, item_pixel(dw, dh));
}

// pyr_down_gradient, and gradient5 of the level it makes (GPUs, for the coarsest level a method
// reads: a launch fewer). A work-group makes its coarse pixels and a 2-pixel ring around them
// (mirrored at the level's border) into local memory, then the stencil of each pixel from
// there, odd-extended at the border as gradient5 extends the stored level. The values of
// pyr_down_gradient and gradient bit for bit (gradient5's sums in its order, on the same
// values). Work-items past the level fill the area and store nothing.
#define PYR_RING_W (PYR_GW + 4)
#define PYR_RING_H (PYR_GH + 4)
__kernel __attribute__((reqd_work_group_size(PYR_GW, PYR_GH, 1)))
void pyr_down_gradients(__global const float* src, const int sw, const int sh,
                        __global float* dst, const int dw, const int dh,
                        __global float2* grad, __global float2* dst_grad)
{
    __local float area[PYR_RING_H][PYR_RING_W];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int ax = PYR_GW * (int)get_group_id(0) - 2, ay = PYR_GH * (int)get_group_id(1) - 2;
    for (int i = ly * PYR_GW + lx; i < PYR_RING_W * PYR_RING_H; i += PYR_GW * PYR_GH) {
        const int tx = i % PYR_RING_W, ty = i / PYR_RING_W;
        area[ty][tx] = pyr_down_at(src, sw, sw, sh, mirror(ax + tx, dw), mirror(ay + ty, dh));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int x = (int)get_global_id(0), y = (int)get_global_id(1);
    if (x >= dw || y >= dh)
        return;
    dst[(size_t)y * dw + x] = area[ly + 2][lx + 2];
    for (int j = 0; j < 2; ++j) {
        for (int i = 0; i < 2; ++i) {
            const int fx = 2 * x + i, fy = 2 * y + j;
            if (fx < sw && fy < sh)
                grad[(size_t)fy * sw + fx] = gradient5(src, sw, sh, fx, fy);
        }
    }
    // the level's row y from pixel ax on, its column x from pixel ay on
    dst_grad[(size_t)y * dw + x] = pyr_area_gradient(area[ly + 2], &area[0][lx + 2], ax, ay, x,
                                                     y, dw, dh, PYR_RING_W);
}

// pyr_down on CPUs (pyr_down_rows8) and its mono8 form.
__kernel void pyr_down_rows(__global const float* src, const int sw, const int sh,
                            __global float* dst, const int dw, const int dh)
{
    pyr_down_rows8(src, sw, sw, sh, dst, dw, dh, (int)get_global_id(0) * PYR_LANES,
                   (int)get_global_id(1) * PYR_RUN);
}

__kernel void pyr_down_mono8_rows(__global const uchar* src, const int step, const int sw,
                                  const int sh, __global float* dst, const int dw, const int dh)
{
    pyr_down_rows8_mono8(src, step, sw, sh, dst, dw, dh, (int)get_global_id(0) * PYR_LANES,
                         (int)get_global_id(1) * PYR_RUN);
}

// 5-point gradient of a level (gradient5), for Horn-Schunck's warping step.
__kernel void gradient(__global const float* img, const int w, const int h,
                       __global float2* grad)
{
    const int2 p = item_pixel(w, h);
    grad[(size_t)p.y * w + p.x] = gradient5(img, w, h, p.x, p.y);
}

// gradient on CPUs: a work-item takes 8 pixels of a row (PYR_LANES) as vector loads of the
// four taps' rows and columns and stores them as one float16 of (d/dx, d/dy) pairs (PoCL
// otherwise scatters the interleaved float2 stores of neighbouring work-items). The same sums
// in the same order as gradient5, bit for bit; pixels near the border take its path.
inline void gradient_row8(__global const float* img, int w, int h, __global float2* grad,
                          int x0, int y)
{
    if (x0 >= w || y >= h)
        return;
    if (x0 >= 2 && x0 + PYR_LANES + 2 <= w && y >= 2 && y + 2 < h) {
        __global const float* c = img + (size_t)y * w + x0;
        const float8 gx = (vload8(0, c - 2) - 8.0f * vload8(0, c - 1) + 8.0f * vload8(0, c + 1)
                           - vload8(0, c + 2)) * (1.0f / 12.0f);
        const float8 gy = (vload8(0, c - 2 * w) - 8.0f * vload8(0, c - w)
                           + 8.0f * vload8(0, c + w) - vload8(0, c + 2 * w)) * (1.0f / 12.0f);
        vstore16((float16)(gx.s0, gy.s0, gx.s1, gy.s1, gx.s2, gy.s2, gx.s3, gy.s3,
                           gx.s4, gy.s4, gx.s5, gy.s5, gx.s6, gy.s6, gx.s7, gy.s7),
                 0, (__global float*)(grad + (size_t)y * w + x0));
        return;
    }
    for (int lane = 0; lane < PYR_LANES && x0 + lane < w; ++lane)
        grad[(size_t)y * w + x0 + lane] = gradient5(img, w, h, x0 + lane, y);
}

__kernel void gradient_rows(__global const float* img, const int w, const int h,
                            __global float2* grad)
{
    gradient_row8(img, w, h, grad, (int)get_global_id(0) * PYR_LANES, (int)get_global_id(1));
}

// pyr_down_gradient on CPUs: pyr_down_rows' 8 x PYR_RUN coarse pixels and gradient_rows' 16 x
// 2 PYR_RUN source pixels they sit on, so the level and the gradient of the level above are one
// launch (PoCL spends about 15 us between two commands); the values of the two kernels bit for
// bit.
__kernel void pyr_down_gradient_rows(__global const float* src, const int sw, const int sh,
                                     __global float* dst, const int dw, const int dh,
                                     __global float2* grad)
{
    const int x0 = (int)get_global_id(0) * PYR_LANES, y0 = (int)get_global_id(1) * PYR_RUN;
    pyr_down_rows8(src, sw, sw, sh, dst, dw, dh, x0, y0);
    for (int y = 2 * y0; y < 2 * min(y0 + PYR_RUN, dh); ++y)
        for (int i = 0; i < 2; ++i)
            gradient_row8(src, sw, sh, grad, 2 * x0 + i * PYR_LANES, y);
}
