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

// Stages after matching (elas/postprocess.py): L/R check, small segments, gap interpolation,
// adaptive mean, median and the published map.
#ifndef GAP_GROUP
#error GAP_GROUP (work-group size of elas_gap) comes from the host: elas/device.py
#endif

// leftRightConsistencyCheck on copies: d1 stays if D2 at u - d1 agrees within lr_threshold.
__kernel void elas_lr_check(__global const float* D1, __global const float* D2, const int w,
                            const int h, const int subsampling, const int lr_threshold,
                            __global float* out1, __global float* out2)
{
    const int u = get_global_id(0);
    const int v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    const float d1 = D1[i], d2 = D2[i];
    const float uw1 = (float)u - (subsampling ? 0.5f * d1 : d1);  // d / 2, exactly
    const float uw2 = (float)u + (subsampling ? 0.5f * d2 : d2);
    float r1 = INVALID_FILL, r2 = INVALID_FILL;
    if (d1 >= 0.0f && uw1 >= 0.0f && uw1 < (float)w)
        r1 = fabs_op(D2[v * w + (int)uw1] - d1) > (float)lr_threshold ? INVALID_FILL : d1;
    if (d2 >= 0.0f && uw2 >= 0.0f && uw2 < (float)w)
        r2 = fabs_op(D1[v * w + (int)uw2] - d2) > (float)lr_threshold ? INVALID_FILL : d2;
    out1[i] = r1;
    out2[i] = r2;
}

// removeSmallSegments = connected components (4-neighbours, both valid, |dd| <= threshold) with
// fewer than speckle_size pixels become invalid; lock-free union-find with atomic_min.
inline int uf_find(volatile __global int* label, int x)
{
    int p = label[x];
    while (p != x) {
        x = p;
        p = label[x];
    }
    return x;
}

inline void uf_union(volatile __global int* label, int a, int b)
{
    for (;;) {
        a = uf_find(label, a);
        b = uf_find(label, b);
        if (a == b)
            return;
        if (a > b) {
            const int t = a;
            a = b;
            b = t;
        }
        const int old = atomic_min(&label[b], a);
        if (old == b)
            return;
        b = old;
    }
}

__kernel void elas_segments_init(const int w, const int h, __global int* label,
                                 __global int* size)
{
    const int u = get_global_id(0), v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    label[i] = i;
    size[i] = 0;
}

__kernel void elas_segments_merge(__global const float* D, const int w, const int h,
                                  const float sim_threshold, volatile __global int* label)
{
    const int u = get_global_id(0), v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    const float d = D[i];
    if (d < 0.0f)
        return;
    if (u + 1 < w && D[i + 1] >= 0.0f && fabs_op(d - D[i + 1]) <= sim_threshold)
        uf_union(label, i, i + 1);
    if (v + 1 < h && D[i + w] >= 0.0f && fabs_op(d - D[i + w]) <= sim_threshold)
        uf_union(label, i, i + w);
}

__kernel void elas_segments_count(const int w, const int h, volatile __global int* label,
                                  __global int* size)
{
    const int u = get_global_id(0), v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    const int root = uf_find(label, i);
    label[i] = root;
    atomic_inc(&size[root]);
}

// An invalid pixel is a segment of its own (libelas' flood fill starts one at every pixel), so
// with speckle_size >= 2 every invalid value becomes -10.
__kernel void elas_segments_apply(__global float* D, const int w, const int h,
                                  __global const int* label, __global const int* size,
                                  const int min_size)
{
    const int u = get_global_id(0), v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    if (size[label[i]] < min_size)
        D[i] = INVALID_FILL;
}

// gapInterpolation along rows (horizontal = 1) or columns: a run of 1..gap invalid pixels with
// valid pixels on both sides and not touching the first pixel of the line gets the mean of the
// two ends (|d1 - d2| < 3) or the smaller one. With extrapolate (add_corners) the first and last
// valid values are copied up to gap pixels towards the borders (columns too: libelas' 2014
// top/bottom extrapolation, in pyelas' copy). One work-group per line; each work-item copies a
// chunk, then fills the gaps whose right end lies in its chunk.
__kernel __attribute__((reqd_work_group_size(GAP_GROUP, 1, 1)))
void elas_gap(__global const float* src, const int w, const int h, const int horizontal,
              const int gap, const int extrapolate, __global float* dst)
{
    __local int last_valid[GAP_GROUP];
    __local int first_valid[GAP_GROUP];
    const int line = get_group_id(0);
    const int lid = get_local_id(0);
    const int lines = horizontal ? h : w;
    const int len = horizontal ? w : h;
    const int stride = horizontal ? 1 : w;
    const int base = horizontal ? line * w : line;
    const bool active = line < lines;
    const int chunk = (len + GAP_GROUP - 1) / GAP_GROUP;
    const int begin = imin(lid * chunk, len), end = imin(begin + chunk, len);
    int first = -1, last = -1;
    for (int k = begin; k < end && active; ++k) {
        const float d = src[base + k * stride];
        dst[base + k * stride] = d;
        if (d >= 0.0f) {
            first = first < 0 ? k : first;
            last = k;
        }
    }
    last_valid[lid] = last;
    first_valid[lid] = first;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    int prev = -1;
    for (int k = 0; k < lid; ++k)
        prev = last_valid[k] > prev ? last_valid[k] : prev;
    for (int k = begin; k < end && active; ++k) {
        const float d2 = src[base + k * stride];
        if (d2 < 0.0f)
            continue;
        const int count = k - prev - 1;
        if (prev >= 0 && count >= 1 && count <= gap) {  // libelas: u_first = prev + 1 > 0
            const float d1 = src[base + prev * stride];
            const float fill = fabs_op(d1 - d2) < 3.0f ? 0.5f * (d1 + d2) : (d1 < d2 ? d1 : d2);
            for (int m = prev + 1; m < k; ++m)
                dst[base + m * stride] = fill;
        }
        prev = k;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (extrapolate && active && lid == 0) {
        int lo = -1, hi = -1;
        for (int k = 0; k < GAP_GROUP; ++k) {
            if (first_valid[k] >= 0 && lo < 0)
                lo = first_valid[k];
            hi = last_valid[k] > hi ? last_valid[k] : hi;
        }
        if (lo >= 0) {
            const float a = src[base + lo * stride], b = src[base + hi * stride];
            for (int m = imax(lo - gap, 0); m < lo; ++m)
                dst[base + m * stride] = a;
            for (int m = hi + 1; m <= imin(hi + gap, len - 1); ++m)
                dst[base + m * stride] = b;
        }
    }
}

// adaptiveMean: libelas' approximate bilateral filter, horizontal then vertical, 8 taps
// [x-4, x+3] (4 taps [x-2, x+1] with subsampling) with weight max(0, 4 - m(|t - centre|)).
// libelas' SSE "abs" masks with _mm_set1_ps(0x7FFFFFFF), i.e. the bits of the float 2^31, which
// keep only exponent bits: m(x) is tiny below 2, 2 below 8 and >= 8 above, so the weights are
// 4, 2 and 0. Sums follow its lane order (lane j = taps j and j + 4, lanes added 0+1+2+3).
inline float am_weight(float t, float centre)
{
    const float m = as_float(as_uint(t - centre) & 0x4F000000u);
    const float wgt = 4.0f - m;
    return wgt > 0.0f ? wgt : 0.0f;
}

inline float am_clean(float d) { return d < 0.0f ? INVALID_FILL : d; }

// One tap window: taps at base + p*stride for p in [first, first + n), n = 8 or 4. libelas keeps
// them in a ring buffer val[p % n]; lane j of its SSE sums holds the taps with p % 4 == j (two
// of them when n = 8, added to each other: order-free), and the lanes are added 0+1+2+3.
inline float am_tap(__global const float* src, int base, int stride, int first, int n, int j,
                    float centre, float* factor)
{
    const int p = first + ((j - first) & 3);
    const float t = am_clean(src[base + p * stride]);
    float wgt = am_weight(t, centre);
    *factor = fmul(t, wgt);
    if (n == 8) {
        const float t2 = am_clean(src[base + (p + 4) * stride]);
        const float w2 = am_weight(t2, centre);
        wgt = wgt + w2;
        *factor = *factor + fmul(t2, w2);
    }
    return wgt;
}

inline bool am_window(__global const float* src, int base, int stride, int first, int n,
                      float centre, float* out)
{
    float f0, f1, f2, f3;
    const float w0 = am_tap(src, base, stride, first, n, 0, centre, &f0);
    const float w1 = am_tap(src, base, stride, first, n, 1, centre, &f1);
    const float w2 = am_tap(src, base, stride, first, n, 2, centre, &f2);
    const float w3 = am_tap(src, base, stride, first, n, 3, centre, &f3);
    const float wsum = ((w0 + w1) + w2) + w3;
    const float fsum = ((f0 + f1) + f2) + f3;
    if (!(wsum > 0.0f))
        return false;
    *out = fdiv(fsum, wsum);
    return *out >= 0.0f;
}

__kernel void elas_adaptive_mean_h(__global const float* D, const int w, const int h,
                                   const int subsampling, __global float* tmp)
{
    const int x = get_global_id(0), v = get_global_id(1);
    if (x >= w || v >= h)
        return;
    const int n = subsampling ? 4 : 8;
    const int back = subsampling ? 2 : 4;  // taps x-back .. x-back+n-1
    float value = am_clean(D[v * w + x]);
    float filtered;
    if (v >= 3 && v < h - 3 && x - back >= 0 && x - back + n - 1 < w
        && am_window(D, v * w, 1, x - back, n, value, &filtered))
        value = filtered;
    tmp[v * w + x] = value;
}

__kernel void elas_adaptive_mean_v(__global const float* D, __global const float* tmp,
                                   const int w, const int h, const int subsampling,
                                   __global float* out)
{
    const int u = get_global_id(0), y = get_global_id(1);
    if (u >= w || y >= h)
        return;
    const int n = subsampling ? 4 : 8;
    const int back = subsampling ? 2 : 4;
    float value = D[y * w + u];
    float filtered;
    if (u >= 3 && u < w - 3 && y - back >= 0 && y - back + n - 1 < h
        && am_window(tmp, u, w, y - back, n, tmp[y * w + u], &filtered))
        value = filtered;
    out[y * w + u] = value;
}

// median: 7-tap horizontal then vertical median at valid pixels of the interior
// [3, w-4] x [3, h-4]; the horizontal result is 0 outside the interior (libelas' calloc), which
// the vertical pass reads near the top and bottom.
#define SORT2(a, b)              \
    {                            \
        const float lo = a < b ? a : b; \
        b = a < b ? b : a;       \
        a = lo;                  \
    }

// Median of seven values (libelas sorts them by insertion; the median value is the same): a
// branch-free 16-comparator sorting network, so PoCL vectorises it across work-items.
inline float median7(float a0, float a1, float a2, float a3, float a4, float a5, float a6)
{
    SORT2(a0, a6) SORT2(a2, a3) SORT2(a4, a5)
    SORT2(a0, a2) SORT2(a1, a4) SORT2(a3, a6)
    SORT2(a0, a1) SORT2(a2, a5) SORT2(a3, a4)
    SORT2(a1, a2) SORT2(a4, a6)
    SORT2(a2, a3) SORT2(a4, a5)
    SORT2(a1, a2) SORT2(a3, a4)
    SORT2(a5, a6)
    return a3;
}

__kernel void elas_median_h(__global const float* D, const int w, const int h,
                            __global float* tmp)
{
    const int u = get_global_id(0), v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    float value = 0.0f;
    if (u >= 3 && u < w - 3 && v >= 3 && v < h - 3) {
        value = D[i];
        if (value >= 0.0f)
            value = median7(D[i - 3], D[i - 2], D[i - 1], D[i], D[i + 1], D[i + 2], D[i + 3]);
    }
    tmp[i] = value;
}

__kernel void elas_median_v(__global const float* D, __global const float* tmp, const int w,
                            const int h, __global float* out)
{
    const int u = get_global_id(0), v = get_global_id(1);
    if (u >= w || v >= h)
        return;
    const int i = v * w + u;
    float value = D[i];
    if (u >= 3 && u < w - 3 && v >= 3 && v < h - 3 && value >= 0.0f)
        value = median7(tmp[i - 3 * w], tmp[i - 2 * w], tmp[i - w], tmp[i], tmp[i + w],
                        tmp[i + 2 * w], tmp[i + 3 * w]);
    out[i] = value;
}

// The published map: every invalid value (libelas' -1 and -10) becomes -1.
__kernel void elas_finalize(__global const float* D, const int count, __global float* out)
{
    const int i = get_global_id(0);
    if (i < count)
        out[i] = D[i] < 0.0f ? INVALID_MATCH : D[i];
}
