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

// Flow as a bgr8 picture, the Middlebury colour wheel (flow/colorwheel.py, whose flow_to_color
// is the reference). Build define: WHEEL_COLOURS (55, the rows of the wheel table).

// PoCL's atan2 and hypot are library calls that made the wheel several times slower than the
// rest of it: the two below are plain arithmetic, accurate far below a grey level.

// Whether x is finite (not inf or NaN), from its exponent bits.
bool finite(const float x)
{
    return (as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

// |(u, v)|, the same float in both kernels (an explicit fma, nothing left to contract), so the
// largest pixel is exactly at the scale.
float magnitude(const float2 f)
{
    return sqrt(fma(f.x, f.x, f.y * f.y));
}

// atan2(y, x) within 3e-7 rad (0.0001 of a wheel colour): the octant by symmetry, then cephes' atanf polynomial on
// [-tan(pi/8), tan(pi/8)]. Signs as atan2's: atan2(-0, x < 0) = -pi is the wheel's seam.
float wheel_atan2(const float y, const float x)
{
    const float ax = x < 0.0f ? -x : x, ay = y < 0.0f ? -y : y;
    const float big = ax > ay ? ax : ay, small = ax > ay ? ay : ax;
    float a = big > 0.0f ? small / big : 0.0f;
    const bool upper = a > 0.41421356f;
    a = upper ? (a - 1.0f) / (a + 1.0f) : a;
    const float z = a * a;
    float r = (((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z
               - 3.33329491539e-1f) * z * a + a + (upper ? M_PI_4_F : 0.0f);
    r = ay > ax ? M_PI_2_F - r : r;
    r = x < 0.0f ? M_PI_F - r : r;
    return (as_int(y) < 0) ? -r : r;
}

// Largest finite |(u, v)| of the frame into top[0], which must be 0 before the launch. Each
// work-item strides over the frame, then one atomic_max per item on the float's bits: for
// non-negative floats the bits order as the values do. No finite pixel leaves 0 (scale 1).
__kernel void max_magnitude(__global const float2* flow, const int count, __global uint* top)
{
    uint key = 0;
    for (int p = get_global_id(0); p < count; p += get_global_size(0)) {
        const float2 f = flow[p];
        const uint bits = as_uint(magnitude(f));
        key = finite(f.x) && finite(f.y) && bits > key ? bits : key;
    }
    if (key != 0)
        atomic_max(top, key);
}

// One pixel: hue = direction, saturation = magnitude / scale, darkened (x 0.75) beyond the scale,
// black where u or v is not finite. scale = max_flow if > 0, else the frame's largest magnitude
// (top[0] from max_magnitude), else 1. wheel: WHEEL_COLOURS RGB rows, 0..255. Unknown pixels run
// the same code on (0, 0), then are written black.
__kernel void colorwheel(__global const float2* flow, const int count, const float max_flow,
                         __global const uint* top, __constant float* wheel,
                         __global uchar* bgr)
{
    const int p = get_global_id(0);
    if (p >= count)
        return;
    const float2 f = flow[p];
    const bool known = finite(f.x) && finite(f.y);
    const float2 g = known ? f : (float2)(0.0f);
    const float largest = max_flow > 0.0f ? max_flow : as_float(top[0]);
    const float scale = largest > 0.0f ? largest : 1.0f;
    const float u = g.x / scale, v = g.y / scale, length = magnitude(g);
    const float radius = length / scale;
    // inside: length <= scale, as radius <= 1 is in exact division (a GPU's may round x / x
    // above 1, which would darken the largest pixel)
    const bool inside = length <= scale;
    const float position = (wheel_atan2(-v, -u) / M_PI_F + 1.0f) * 0.5f * (WHEEL_COLOURS - 1);
    const int k = (int)position;  // position >= 0 up to rounding: truncation is floor
    const int k0 = k < WHEEL_COLOURS - 1 ? (k > 0 ? k : 0) : WHEEL_COLOURS - 1;
    const int k1 = k0 + 1 < WHEEL_COLOURS ? k0 + 1 : 0;
    const float t = position - (float)k0;
    const float3 mixed = ((1.0f - t) * vload3(k0, wheel) + t * vload3(k1, wheel)) / 255.0f;
    const float3 colour = inside ? 1.0f - radius * (1.0f - mixed) : mixed * 0.75f;
    // truncation is the reference's floor: the level is >= 0 up to rounding
    const uchar3 pixel = convert_uchar3_sat(255.0f * colour.zyx);
    vstore3(known ? pixel : (uchar3)(0), p, bgr);
}
