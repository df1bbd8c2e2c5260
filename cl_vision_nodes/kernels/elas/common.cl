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

// ELAS (Geiger, Roser, Urtasun, ACCV 2010) on the device: helpers of every ELAS program. Each
// program is this file plus the file of one host stage module (descriptor.cl beside
// elas/descriptor.py, ...). The NumPy reference of each kernel is test/oracles/elas.py;
// the stage order and the semantics (including libelas' quirks that change results) are
// described there and in cl_vision_nodes/elas/matcher.py.
//
// Portability rules followed here (PoCL on CPUs, NVIDIA, GPUs without fp64):
// - single precision only: where libelas' results need exactness, integers (int, long) or
//   float operations with a proven rounding (fdiv below; the exact Delaunay predicates and the
//   plane solve in their own files);
// - hot loops use operators only: PoCL does not inline builtins such as min/max/abs_diff, and a
//   call per byte made the SAD loops nine times slower;
// - kernels that use barrier() have no early return before the last barrier;
// - every global index is bounds-checked (global sizes are rounded up to the work-group size);
// - float arithmetic that must equal libelas' x86 float results rounds every product and
//   quotient explicitly: NVIDIA fuses a*b + c into an FMA despite FP_CONTRACT OFF and divides
//   floats approximately by default. So products pass through a volatile float (nothing is
//   fused across it) and quotients are corrected to the correctly rounded one (fdiv).
#pragma OPENCL FP_CONTRACT OFF

#define INVALID_MATCH (-1.0f)     // findMatch: no candidate
#define INVALID_FILL (-10.0f)     // not matched / rejected by a check

inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }
inline int iabs(int a) { return a < 0 ? -a : a; }
inline float fabs_op(float a) { return a < 0.0f ? -a : a; }

inline long sq_dist(int2 a, int2 b)
{
    const long dx = a.x - b.x, dy = a.y - b.y;
    return dx * dx + dy * dy;
}

// Rounded float product (x86 mulss): never fused with a following addition.
inline float fmul(float a, float b)
{
    volatile float product = a * b;
    return product;
}

// The correctly rounded a / b (x86 divss) from an approximation q within 4 ulp of it: the
// device's division may be off by 2.5 ulp (OpenCL's bound; NVIDIA divides approximately by
// default). fma is correctly rounded on every device, so r = fma(-q, b, a) has the sign of the
// exact residual a - q*b, and is that residual exactly when q is one of the two floats around
// a/b (the residual is then representable). So q steps towards a/b until the residual changes
// sign, and the nearer of the two floats around a/b wins (a quotient of floats is never halfway
// between two floats: that would need a 25-bit dividend). Exact for a == 0 and for a normal
// quotient of a finite b != 0 and |a| >= 2^-100; here a and b are integers or sums of a few
// products of disparities and weights.
inline float round_quotient(float q, float a, float b)
{
    float r = fma(-q, b, a);
    if (r == 0.0f || !isfinite(r))
        return q;
    const bool up = (r > 0.0f) == (b > 0.0f);  // a/b lies above q
    for (int k = 0; k < 5; ++k) {
        const float next = nextafter(q, up ? INFINITY : -INFINITY);
        const float rn = fma(-next, b, a);
        if (rn == 0.0f)
            return next;
        if ((rn > 0.0f) != (r > 0.0f))
            return fabs_op(r) < fabs_op(rn) ? q : next;
        q = next;
        r = rn;
    }
    return q;
}

inline float fdiv(float a, float b) { return round_quotient(a / b, a, b); }

inline uchar16 absdiff16(uchar16 a, uchar16 b)
{
    uchar16 m = as_uchar16(a > b);
    return ((a - b) & m) | ((b - a) & ~m);
}

inline int hsum16(ushort16 s)
{
    ushort8 s8 = s.lo + s.hi;
    ushort4 s4 = s8.lo + s8.hi;
    ushort2 s2 = s4.lo + s4.hi;
    return (int)s2.x + (int)s2.y;
}

inline int sad16(uchar16 a, uchar16 b) { return hsum16(convert_ushort16(absdiff16(a, b))); }

inline int texture16(uchar16 c)
{
    // sum of |byte - 128|: how far the descriptor is from a flat patch
    short16 s = convert_short16(c) - (short16)128;
    short16 m = s >> (short16)15;
    return hsum16(as_ushort16((s ^ m) - m));
}
