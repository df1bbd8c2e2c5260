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

// Helpers shared by the dense optical flow programs. Every flow program is this file followed by
// the file of the host module that launches it (kernels/flow/<module>.cl beside
// cl_vision_nodes/flow/<module>.py), built with that module's constants as -D defines.
// NumPy references of every kernel: cl_vision_nodes/flow/reference.py.
//
// Conventions: images are float32 row-major on the 0..255 scale; flow is float2 (u, v) in pixels
// of its pyramid level, from frame 0 (previous) to frame 1 (current); work-item
// (get_global_id(0), get_global_id(1)) is pixel (x, y), so neighbouring work-items touch
// neighbouring addresses. Kernels without local memory guard their own bounds, so any global
// size and any local size the driver picks are correct (item_pixel). The tiled kernels (lk_level, hs_sor,
// bm_search) require the work-group size the host chose from the device's limits (a define),
// take global sizes rounded up to it, and let every work-item of a group reach every barrier
// (out-of-image items only skip loads and stores). Their tiles, which shape the results, do not
// depend on the work-group size: a group of fewer work-items gives each more pixels.
//
// No contraction into fused multiply-adds: results match the references on every device.
#pragma OPENCL FP_CONTRACT OFF

// PoCL (the CPU devices) calls its built-in functions rather than inlining them, and spills the
// vector registers around every call: on CPU devices (CL_VISION_CPU_DEVICE, set by the
// runtime) the helpers below give the same values with operators, for the loops a CPU runs hot;
// elsewhere they are the built-ins, single instructions on a GPU. floor_int: |x| < 2^31.
#ifdef CL_VISION_CPU_DEVICE
inline int floor_int(float x)
{
    const int i = (int)x;
    return (float)i > x ? i - 1 : i;
}

inline int clamp_int(int i, int lo, int hi)
{
    return i < lo ? lo : (i > hi ? hi : i);
}

#if defined(__has_builtin)
#if __has_builtin(__builtin_sqrtf)
#define SQRT_OP __builtin_sqrtf
#endif
#endif
// Unaligned vector loads and stores element by element (the compiler merges them into one).
#define LOAD4(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define LOAD8(p) ((float8)(LOAD4(p), LOAD4((p) + 4)))
#define STORE8(v, p) \
    do { \
        (p)[0] = (v).s0; (p)[1] = (v).s1; (p)[2] = (v).s2; (p)[3] = (v).s3; \
        (p)[4] = (v).s4; (p)[5] = (v).s5; (p)[6] = (v).s6; (p)[7] = (v).s7; \
    } while (0)
#else
inline int floor_int(float x)
{
    return (int)floor(x);
}

inline int clamp_int(int i, int lo, int hi)
{
    return clamp(i, lo, hi);
}

#define LOAD4(p) vload4(0, p)
#define LOAD8(p) vload8(0, p)
#define STORE8(v, p) vstore8(v, 0, p)
#endif
#ifndef SQRT_OP
#define SQRT_OP sqrt
#endif

// Square root of 8 lanes: lane by lane through SQRT_OP on CPU devices (clang turns the 8 into
// one vsqrtps; PoCL's sqrt of a float8 is a call), the built-in elsewhere. Correctly rounded
// either way on PoCL, so the lanes are the scalar kernels' values.
inline float8 sqrt8(float8 x)
{
#ifdef CL_VISION_CPU_DEVICE
    return (float8)(SQRT_OP(x.s0), SQRT_OP(x.s1), SQRT_OP(x.s2), SQRT_OP(x.s3), SQRT_OP(x.s4),
                    SQRT_OP(x.s5), SQRT_OP(x.s6), SQRT_OP(x.s7));
#else
    return sqrt(x);
#endif
}

// The pixel of this work-item, clamped into a w x h image. Per-pixel kernels take it instead of
// returning early beyond the image: work-items past the edge (global sizes rounded up to whole
// work-groups) recompute the edge pixel and store the same value again. Without the branch PoCL
// vectorises the kernel across work-items on a CPU (pyr_down ran 5-8x faster there).
inline int2 item_pixel(int w, int h)
{
    const int x = (int)get_global_id(0), y = (int)get_global_id(1);
    return (int2)(x < w ? x : w - 1, y < h ? y : h - 1);
}

// Reflect-101 border (cv2.BORDER_REFLECT_101) for offsets up to one image length, then clamped,
// so it is safe for any stencil on any size (n == 1 included).
inline int mirror(int i, int n)
{
    i = i < 0 ? -i : i;
    const int back = (n - 1) - i;
    i = (n - 1) - (back < 0 ? -back : back);
    return clamp_int(i, 0, n - 1);
}

// The bilinear mix of four taps (c00 at the floor, c10 right of it, c01 below, c11 diagonal).
inline float2 bilinear_mix2(float2 c00, float2 c10, float2 c01, float2 c11, float tx, float ty)
{
    const float2 top = c00 * (1.0f - tx) + c10 * tx;
    const float2 bottom = c01 * (1.0f - tx) + c11 * tx;
    return top * (1.0f - ty) + bottom * ty;
}

// The taps of a bilinear sample at (x, y) of a w x h image (replicated border): columns
// (x0, x1), rows (y0, y1) and the fractions.
typedef struct { int x0, x1, y0, y1; float tx, ty; } bilinear_taps;

inline bilinear_taps bilinear_at(int w, int h, float x, float y)
{
    const int ix = floor_int(x), iy = floor_int(y);
    const bilinear_taps taps = {clamp_int(ix, 0, w - 1), clamp_int(ix + 1, 0, w - 1),
                                clamp_int(iy, 0, h - 1), clamp_int(iy + 1, 0, h - 1),
                                x - (float)ix, y - (float)iy};
    return taps;
}

inline float2 bilinear2(__global const float2* img, int w, int h, float x, float y)
{
    const bilinear_taps t = bilinear_at(w, h, x, y);
    return bilinear_mix2(img[t.y0 * w + t.x0], img[t.y0 * w + t.x1], img[t.y1 * w + t.x0],
                         img[t.y1 * w + t.x1], t.tx, t.ty);
}

// The coarser level's flow prolonged to pixel (x, y) of the next finer level, as flow_upsample
// by 2 samples it; zero where there is no coarser level (cw == 0): a level's start flow for a
// kernel that prolongs as it reads (lk_level, dis_search).
inline float2 prolonged_flow(__global const float2* coarse, int cw, int ch, int x, int y)
{
    return cw > 0 ? 2.0f * bilinear2(coarse, cw, ch, 0.5f * x, 0.5f * y) : (float2)(0.0f);
}

inline float bilinear1(__global const float* img, int w, int h, float x, float y)
{
    const int ix = floor_int(x), iy = floor_int(y);
    const float tx = x - (float)ix, ty = y - (float)iy;
    const int x0 = clamp_int(ix, 0, w - 1), x1 = clamp_int(ix + 1, 0, w - 1);
    const int y0 = clamp_int(iy, 0, h - 1), y1 = clamp_int(iy + 1, 0, h - 1);
    const float top = img[y0 * w + x0] * (1.0f - tx) + img[y0 * w + x1] * tx;
    const float bottom = img[y1 * w + x0] * (1.0f - tx) + img[y1 * w + x1] * tx;
    return top * (1.0f - ty) + bottom * ty;
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
// on the odd-extended image: (d/dx, d/dy) at pixel (x, y). Away from the border the taps are
// read directly, the same values in the same order (PoCL vectorises that path: 3x faster on a
// CPU than extending every tap).
inline float2 gradient5(__global const float* img, int w, int h, int x, int y)
{
    if (x >= 2 && x + 2 < w && y >= 2 && y + 2 < h) {
        __global const float* c = img + (size_t)y * w + x;
        return (float2)((c[-2] - 8.0f * c[-1] + 8.0f * c[1] - c[2]) * (1.0f / 12.0f),
                        (c[-2 * w] - 8.0f * c[-w] + 8.0f * c[w] - c[2 * w]) * (1.0f / 12.0f));
    }
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
