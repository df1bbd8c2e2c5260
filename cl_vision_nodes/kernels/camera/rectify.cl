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

// Rectification (camera/rectify.py): OpenCV's remap with float maps and a constant border, one
// work-item per rectified pixel, reading the raw message bytes (any row padding, either byte
// order) and writing packed little-endian rows of the output encoding.
//
// Semantics of cv2.remap in OpenCV 5 (float maps): nearest takes the pixel at rint(x), rint(y)
// (half to even); linear and cubic interpolate at the exact float coordinate (no 1/32 table),
// linear as two lerps p00 + fx (p01 - p00) and cubic with Keys' kernel, a = -0.75; neighbours
// outside the image read the border value; integer outputs are rounded half to even and
// saturated. Bit-exact with test/oracles/camera.py remap_reference.
//
// Built after imaging/device_image.cl (load_u16, load_f32, #pragma FP_CONTRACT OFF).
// Build defines: ENC_<NAME> encoding ids, INTER_NEAREST, INTER_LINEAR, INTER_CUBIC.

#define CUBIC_A (-0.75f)
// Coordinates farther than this outside the image read only border pixels (for every
// interpolation), which also keeps the integer conversions below in range (and NaN out).
#define FAR_OUTSIDE 4.0f

inline float4 load_pixel(__global const uchar* src, int step, int encoding, int swap,
                         int x, int y)
{
    __global const uchar* row = src + (size_t)y * step;
    switch (encoding) {
    case ENC_MONO16:
        return (float4)((float)load_u16(row + 2 * x, swap), 0.0f, 0.0f, 0.0f);
    case ENC_BGR8:
    case ENC_RGB8:
        return (float4)((float)row[3 * x], (float)row[3 * x + 1], (float)row[3 * x + 2], 0.0f);
    case ENC_BGRA8:
    case ENC_RGBA8:
        return convert_float4(vload4(x, row));
    case ENC_32FC1:
        return (float4)(load_f32(row + 4 * x, swap), 0.0f, 0.0f, 0.0f);
    default:  // ENC_MONO8
        return (float4)((float)row[x], 0.0f, 0.0f, 0.0f);
    }
}

inline float4 fetch(__global const uchar* src, int step, int width, int height, int encoding,
                    int swap, float border, int x, int y)
{
    if (x < 0 || y < 0 || x >= width || y >= height)
        return (float4)(border);
    return load_pixel(src, step, encoding, swap, x, y);
}

inline uchar to_u8(float v)  // rint half to even, saturate; NaN -> 0 (fmax drops a NaN)
{
    return (uchar)rint(fmin(fmax(v, 0.0f), 255.0f));
}

inline void store_pixel(__global uchar* dst, int encoding, size_t index, float4 v)
{
    switch (encoding) {
    case ENC_MONO16: {
        const uint u = (uint)rint(fmin(fmax(v.x, 0.0f), 65535.0f));
        dst[2 * index] = (uchar)u;
        dst[2 * index + 1] = (uchar)(u >> 8);
        break;
    }
    case ENC_BGR8:
    case ENC_RGB8:
        dst[3 * index] = to_u8(v.x);
        dst[3 * index + 1] = to_u8(v.y);
        dst[3 * index + 2] = to_u8(v.z);
        break;
    case ENC_BGRA8:
    case ENC_RGBA8:
        vstore4((uchar4)(to_u8(v.x), to_u8(v.y), to_u8(v.z), to_u8(v.w)), index, dst);
        break;
    case ENC_32FC1: {
        const uint bits = as_uint(v.x);
        vstore4((uchar4)((uchar)bits, (uchar)(bits >> 8), (uchar)(bits >> 16),
                         (uchar)(bits >> 24)), index, dst);
        break;
    }
    default:  // ENC_MONO8
        dst[index] = to_u8(v.x);
    }
}

// OpenCV's interpolateCubic: Keys' weights of the 4 taps at offsets -1..2 for fraction t.
inline float4 cubic_weights(float t)
{
    const float a = CUBIC_A;
    const float c0 = ((a * (t + 1.0f) - 5.0f * a) * (t + 1.0f) + 8.0f * a) * (t + 1.0f) - 4.0f * a;
    const float c1 = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    const float c2 = ((a + 2.0f) * (1.0f - t) - (a + 3.0f)) * (1.0f - t) * (1.0f - t) + 1.0f;
    return (float4)(c0, c1, c2, 1.0f - c0 - c1 - c2);
}

// Rectify: dst(x, y) = src(map_x(x, y), map_y(x, y)) for the width x height output grid.
// src_encoding may differ from dst_encoding only as 32FC1 -> mono8 (a decoded gray).
__kernel void remap(__global const uchar* src, const int src_step, const int src_width,
                    const int src_height, const int src_encoding, const int swap_bytes,
                    __global const float* map_x, __global const float* map_y, const int width,
                    const int height, const int interpolation, const float border,
                    __global uchar* dst, const int dst_encoding)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    const size_t index = (size_t)y * width + x;
    const float sx = map_x[index];
    const float sy = map_y[index];
    float4 value = (float4)(border);
    if (sx > -FAR_OUTSIDE && sx < (float)src_width + FAR_OUTSIDE
            && sy > -FAR_OUTSIDE && sy < (float)src_height + FAR_OUTSIDE) {
#define AT(dx, dy) fetch(src, src_step, src_width, src_height, src_encoding, swap_bytes, \
                         border, ix + (dx), iy + (dy))
        if (interpolation == INTER_NEAREST) {
            const int ix = (int)rint(sx);
            const int iy = (int)rint(sy);
            value = AT(0, 0);
        } else {
            const float fx0 = floor(sx);
            const float fy0 = floor(sy);
            const int ix = (int)fx0;
            const int iy = (int)fy0;
            const float tx = sx - fx0;
            const float ty = sy - fy0;
            if (interpolation == INTER_LINEAR) {
                const float4 p00 = AT(0, 0), p01 = AT(1, 0), p10 = AT(0, 1), p11 = AT(1, 1);
                const float4 v0 = p00 + tx * (p01 - p00);
                const float4 v1 = p10 + tx * (p11 - p10);
                value = v0 + ty * (v1 - v0);
            } else {  // INTER_CUBIC
                const float4 wx = cubic_weights(tx);
                const float4 wy = cubic_weights(ty);
                float4 rows[4];
                for (int r = 0; r < 4; ++r)
                    rows[r] = wx.x * AT(-1, r - 1) + wx.y * AT(0, r - 1)
                              + wx.z * AT(1, r - 1) + wx.w * AT(2, r - 1);
                value = wy.x * rows[0] + wy.y * rows[1] + wy.z * rows[2] + wy.w * rows[3];
            }
        }
#undef AT
    }
    store_pixel(dst, dst_encoding, index, value);
}
