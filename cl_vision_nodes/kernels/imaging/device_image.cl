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

// Image decoding on the device: raw sensor_msgs/Image bytes (any supported encoding, padded
// rows, either byte order) -> float gray on the 0..255 scale, the input of every algorithm.
// Bit-exact with cl_vision_nodes.imaging.encodings.to_gray_reference.
//
// Build defines: ENC_<NAME> = encoding ids from cl_vision_nodes/imaging/encodings.py.
#pragma OPENCL FP_CONTRACT OFF

// 1/257 rounded to float: maps mono16 0..65535 onto 0..255 with a multiply, as the reference.
#define INV_257 0x1.fe01fep-9f

inline int reflect101(int i, int n)
{
    i = i < 0 ? -i : i;
    return i >= n ? 2 * n - 2 - i : i;
}

inline int bgr_to_gray(int b, int g, int r)
{
    // OpenCV's fixed-point BT.601, 15-bit weights (cvtColor BGR2GRAY is bit-identical).
    return (b * 3735 + g * 19235 + r * 9798 + 16384) >> 15;
}

inline uint load_u16(__global const uchar* p, int swap)
{
    return swap ? ((uint)p[0] << 8) | p[1] : ((uint)p[1] << 8) | p[0];
}

inline float load_f32(__global const uchar* p, int swap)
{
    uint bits = swap
        ? ((uint)p[0] << 24) | ((uint)p[1] << 16) | ((uint)p[2] << 8) | p[3]
        : ((uint)p[3] << 24) | ((uint)p[2] << 16) | ((uint)p[1] << 8) | p[0];
    return as_float(bits);
}

inline int bayer_at(__global const uchar* raw, int step, int width, int height, int y, int x)
{
    return raw[(size_t)reflect101(y, height) * step + reflect101(x, width)];
}

// Bilinear demosaic of one pixel in integer arithmetic, then gray. (ry, rx) is the parity of
// the red sites; blue sites have the opposite parity in both axes.
inline int bayer_gray(__global const uchar* raw, int step, int width, int height,
                      int y, int x, int ry, int rx)
{
    int v = bayer_at(raw, step, width, height, y, x);
    int cross = (bayer_at(raw, step, width, height, y - 1, x)
                 + bayer_at(raw, step, width, height, y + 1, x)
                 + bayer_at(raw, step, width, height, y, x - 1)
                 + bayer_at(raw, step, width, height, y, x + 1) + 2) >> 2;
    int diag = (bayer_at(raw, step, width, height, y - 1, x - 1)
                + bayer_at(raw, step, width, height, y - 1, x + 1)
                + bayer_at(raw, step, width, height, y + 1, x - 1)
                + bayer_at(raw, step, width, height, y + 1, x + 1) + 2) >> 2;
    int horiz = (bayer_at(raw, step, width, height, y, x - 1)
                 + bayer_at(raw, step, width, height, y, x + 1) + 1) >> 1;
    int vert = (bayer_at(raw, step, width, height, y - 1, x)
                + bayer_at(raw, step, width, height, y + 1, x) + 1) >> 1;
    int red_row = (y & 1) == ry;
    int red_col = (x & 1) == rx;
    if (red_row && red_col)
        return bgr_to_gray(diag, cross, v);
    if (!red_row && !red_col)
        return bgr_to_gray(v, cross, diag);
    return red_row ? bgr_to_gray(vert, v, horiz) : bgr_to_gray(horiz, v, vert);
}

__kernel void decode_gray(__global const uchar* raw, const int step, const int width,
                          const int height, const int encoding, const int swap_bytes,
                          __global float* gray)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    __global const uchar* row = raw + (size_t)y * step;
    float g = 0.0f;
    switch (encoding) {
    case ENC_MONO8:
        g = (float)row[x];
        break;
    case ENC_MONO16:
        g = (float)load_u16(row + 2 * x, swap_bytes) * INV_257;
        break;
    case ENC_BGR8:
        g = (float)bgr_to_gray(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
        break;
    case ENC_RGB8:
        g = (float)bgr_to_gray(row[3 * x + 2], row[3 * x + 1], row[3 * x]);
        break;
    case ENC_BGRA8:
        g = (float)bgr_to_gray(row[4 * x], row[4 * x + 1], row[4 * x + 2]);
        break;
    case ENC_RGBA8:
        g = (float)bgr_to_gray(row[4 * x + 2], row[4 * x + 1], row[4 * x]);
        break;
    case ENC_BAYER_RGGB8:
        g = (float)bayer_gray(raw, step, width, height, y, x, 0, 0);
        break;
    case ENC_BAYER_BGGR8:
        g = (float)bayer_gray(raw, step, width, height, y, x, 1, 1);
        break;
    case ENC_BAYER_GBRG8:
        g = (float)bayer_gray(raw, step, width, height, y, x, 1, 0);
        break;
    case ENC_BAYER_GRBG8:
        g = (float)bayer_gray(raw, step, width, height, y, x, 0, 1);
        break;
    case ENC_YUV422:  // UYVY: U Y0 V Y1
        g = (float)row[2 * x + 1];
        break;
    case ENC_YUV422_YUY2:  // YUYV: Y0 U Y1 V
        g = (float)row[2 * x];
        break;
    case ENC_32FC1: {  // NaN and infinities (a depth camera's holes) read as 0: one bad
        const float f = load_f32(row + 4 * x, swap_bytes);  // pixel must not spread
        g = isfinite(f) ? f : 0.0f;
        break;
    }
    }
    gray[(size_t)y * width + x] = g;
}

// decode_gray's values for the common camera encodings, in kernels without its switch: PoCL
// vectorises these across work-items (mono8 at 640x480: 0.07 ms against decode_gray's 0.3 on a
// 2-core CPU). decode_rgb8: 3 bytes a pixel, blue at byte `blue` (0 for bgr8, 2 for rgb8).
__kernel void decode_mono8(__global const uchar* raw, const int step, const int width,
                           const int height, __global float* gray)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    gray[(size_t)y * width + x] = (float)raw[(size_t)y * step + x];
}

__kernel void decode_rgb8(__global const uchar* raw, const int step, const int width,
                          const int height, const int blue, __global float* gray)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    __global const uchar* p = raw + (size_t)y * step + 3 * x;
    gray[(size_t)y * width + x] = (float)bgr_to_gray(p[blue], p[1], p[2 - blue]);
}

// gray * gain rounded half-to-even and saturated to 0..255 (NaN -> 0).
__kernel void gray_to_mono8(__global const float* gray, const int count, const float gain,
                            __global uchar* out)
{
    const int i = get_global_id(0);
    if (i < count)
        out[i] = convert_uchar_sat_rte(gray[i] * gain);
}

__kernel void scale_f32(__global const float* gray, const int count, const float gain,
                        __global float* out)
{
    const int i = get_global_id(0);
    if (i < count)
        out[i] = gray[i] * gain;
}

// Packs padded rows and converts elements of elem_size bytes (1, 2 or 4) to little-endian:
// reversing the bytes of a power-of-two element is an index XOR with elem_size - 1.
__kernel void repack_rows(__global const uchar* raw, const int step, const int row_bytes,
                          const int height, const int swap_mask, __global uchar* out)
{
    const int i = get_global_id(0);
    const int y = get_global_id(1);
    if (i >= row_bytes || y >= height)
        return;
    out[(size_t)y * row_bytes + i] = raw[(size_t)y * step + (i ^ swap_mask)];
}
