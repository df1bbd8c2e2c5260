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

// Stage "disparity planes" (elas/planes.py): d = a*u + b*v + c through the corners of every
// triangle, in the view's own coordinates (computeDisparityPlanes).
#ifndef MAX_OWNED
#error MAX_OWNED (triangles stored per point) comes from the host: elas/device.py
#endif

// n / d correctly rounded to float (to nearest, ties to even) for d != 0 and |d| < 2^38, by long
// division: scaled by 2^-e, the quotient's integer part Q has 24 bits (2^23 <= Q < 2^24) and
// the remainder decides the rounding; Q (at most 2^24 after rounding) times 2^e is exact.
inline float long_quotient(long n, long d)
{
    if (n == 0)
        return 0.0f;
    const long a = n < 0 ? -n : n, b = d < 0 ? -d : d;
    // a / b lies in [2^(k-1), 2^(k+1)) with k = bits(a) - bits(b) = clz(b) - clz(a): try
    // e = k - 24, and e = k - 23 if that left 25 bits
    int e = (int)(clz(b) - clz(a)) - 25;
    long num, den, q;
    do {
        ++e;
        num = e < 0 ? a << -e : a;  // at most bits(b) + 24 <= 62 bits
        den = e > 0 ? b << e : b;   // at most bits(a) - 23 bits
        q = num / den;
    } while (q >= (1L << 24));
    const long rem = num - q * den;
    if (rem > den - rem || (rem == den - rem && (q & 1)))
        ++q;
    const float magnitude = ldexp((float)q, e);
    return (n < 0) != (d < 0) ? -magnitude : magnitude;
}

// Cramer's rule on the integer 3x3 system, each quotient of exact long determinants correctly
// rounded to float: libelas' double Gauss-Jordan rounded to float gives the same floats. A
// singular system gives (0, 0, 0), as libelas' failed solve. With view coordinates below 2^15
// and disparities below 2^9, |det| < 2^31 and the numerators stay below 2^42.
inline float3 plane_through(int3 u, int3 v, int3 d)
{
    const long det = (long)u.x * (v.y - v.z) + (long)u.y * (v.z - v.x) + (long)u.z * (v.x - v.y);
    if (det == 0)
        return (float3)(0.0f);
    const long na = (long)d.x * (v.y - v.z) + (long)d.y * (v.z - v.x) + (long)d.z * (v.x - v.y);
    const long nb = (long)u.x * (d.y - d.z) + (long)u.y * (d.z - d.x) + (long)u.z * (d.x - d.y);
    const long nc = (long)u.x * ((long)v.y * d.z - (long)v.z * d.y)
                    + (long)u.y * ((long)v.z * d.x - (long)v.x * d.z)
                    + (long)u.z * ((long)v.x * d.y - (long)v.y * d.x);
    return (float3)(long_quotient(na, det), long_quotient(nb, det), long_quotient(nc, det));
}

// planes[k] = (a, b, c, prior valid) of the view (right_view: u - d coordinates); the prior is
// used only if the plane and its projection into the other view slant less than 0.7.
__kernel void elas_planes(__global const int4* points, __global const int4* tri,
                          __global const int* tri_count, const int max_slots, const int right_view,
                          __global float4* planes)
{
    const int s = get_global_id(0);
    if (s >= max_slots)
        return;
    for (int j = 0; j < tri_count[s]; ++j) {
        const int k = s * MAX_OWNED + j;
        const int4 t = tri[k];
        const int4 p0 = points[t.x], p1 = points[t.y], p2 = points[t.z];
        const int3 v = (int3)(p0.y, p1.y, p2.y), d = (int3)(p0.z, p1.z, p2.z);
        const int3 ul = (int3)(p0.x, p1.x, p2.x);
        const float3 left = plane_through(ul, v, d);
        const float3 right = plane_through(ul - d, v, d);
        const float3 own = right_view ? right : left;
        const float other_a = right_view ? left.x : right.x;
        // libelas compares the float slope with the double 0.7: below it are exactly the floats
        // up to 0.7f (0.7 rounds down to float)
        const bool valid = fabs_op(own.x) <= 0.7f && fabs_op(other_a) <= 0.7f;
        planes[k] = (float4)(own, valid ? 1.0f : 0.0f);
    }
}
