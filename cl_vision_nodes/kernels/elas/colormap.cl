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

// A disparity map as a bgr8 jet picture (elas/colormap.py, whose disparity_to_color is the
// reference). Build define: MIN_SPAN, the smallest colour range (the reference's 1e-6).

// The range and scale below are computed exactly as written: no fused multiply-add (NVIDIA fuses
// despite the pragma, so the one product that must be rounded passes through a volatile).
#pragma OPENCL FP_CONTRACT OFF

// Finite (exponent bits not all set) and not below invalid_below.
bool valid(const float d, const float invalid_below)
{
    return (as_uint(d) & 0x7f800000u) != 0x7f800000u && d >= invalid_below;
}

// A float as a uint that orders as the floats do (negative ones included): atomic_max on it is
// a float max. No finite float maps to 0, which therefore means "no value".
uint order_key(const float value)
{
    const uint bits = as_uint(value);
    return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

float from_key(const uint key)
{
    return as_float((key & 0x80000000u) ? key & 0x7fffffffu : ~key);
}

// Smallest and largest valid disparity into range[0] (as ~key: a max of it is the min) and
// range[1]; both must be 0 before the launch and stay 0 if no pixel is valid. Each work-item
// strides over the map, then two atomic_max per item.
__kernel void valid_range(__global const float* disparity, const int count,
                          const float invalid_below, __global uint* range)
{
    uint low = 0, high = 0;
    for (int p = get_global_id(0); p < count; p += get_global_size(0)) {
        const float d = disparity[p];
        const uint key = order_key(d);
        const bool ok = valid(d, invalid_below);
        low = ok && ~key > low ? ~key : low;
        high = ok && key > high ? key : high;
    }
    if (high != 0) {
        atomic_max(range, low);
        atomic_max(range + 1, high);
    }
}

// c * (hi - lo) - 255, with the span as the exact pair s + e, far more accurately than the
// quotient's steps change it: p - 255 is exact (p is within a factor 2 of 255) and fma(c, s, -p)
// is the product's rounding error.
float scale_residual(const float c, const float s, const float e)
{
    volatile float rounded = c * s;
    const float p = rounded;
    return (p - 255.0f) + (fma(c, s, -p) + c * e);
}

// 255 / max(hi - lo, MIN_SPAN) rounded once to float, as the host's double division is: the
// span is kept exactly (two-sum) and the float quotient moved to the float nearest to the true
// one (OpenCL's float division may be off by ulps). Why so exact: a level is trunc((d - lo) *
// scale), and one level off where a boundary falls is a jet step of up to 5 grey levels.
float reference_scale(const float lo, const float hi, const float degenerate_scale)
{
    const float s = hi - lo;
    if (s < MIN_SPAN)
        return degenerate_scale;
    const float b = s - hi;
    const float e = (hi - (s - b)) + (-lo - b);
    float q = 255.0f / s;
    for (int step = 0; step < 4; ++step) {
        const float r = fabs(scale_residual(q, s, e));
        const float up = nextafter(q, INFINITY), down = nextafter(q, 0.0f);
        if (fabs(scale_residual(up, s, e)) < r)
            q = up;
        else if (fabs(scale_residual(down, s, e)) < r)
            q = down;
        else
            break;
    }
    return q;
}

// The range valid_range found as floats: followed[0] = lo, followed[1] = the scale (0 and 1 when
// no pixel is valid). One work-item, so that no pixel repeats the exact division.
__kernel void follow_scale(__global const uint* range, const float degenerate_scale,
                           __global float* followed)
{
    if (get_global_id(0) != 0)
        return;
    const bool any = range[1] != 0;
    const float lo = any ? from_key(~range[0]) : 0.0f;
    followed[0] = lo;
    followed[1] = any ? reference_scale(lo, from_key(range[1]), degenerate_scale) : 1.0f;
}

// One pixel: black if invalid (not finite or below invalid_below), else table[level] with level
// = trunc(clamp((d - lo) * scale, 0, 255)): lo and scale as given (follow = 0; the host computes
// them as the reference does) or from follow_scale (follow = 1).
__kernel void jet(__global const float* disparity, const int count, const float invalid_below,
                  const int follow, const float low, const float scale,
                  __global const float* followed, __constant uchar* table,
                  __global uchar* bgr)
{
    const int p = get_global_id(0);
    if (p >= count)
        return;
    const float d = disparity[p];
    const bool ok = valid(d, invalid_below);
    const float lo = follow ? followed[0] : low, s = follow ? followed[1] : scale;
    uchar3 pixel = (uchar3)(0);
    if (ok)
        pixel = vload3((int)clamp((d - lo) * s, 0.0f, 255.0f), table);
    vstore3(pixel, p, bgr);
}
