// ELAS (Geiger, Roser, Urtasun, ACCV 2010) on the device, every stage of libelas' Elas::process.
// The NumPy reference of each kernel is cl_vision_nodes/elas/reference.py; the stage order and
// the semantics (including libelas' quirks that change results) are described there and in
// cl_vision_nodes/elas/matcher.py.
//
// Portability rules followed here (PoCL on CPUs and NVIDIA):
// - hot loops use operators only: PoCL does not inline builtins such as min/max/abs_diff, and a
//   call per byte made the SAD loops nine times slower;
// - kernels that use barrier() have no early return before the last barrier;
// - every global index is bounds-checked (global sizes are rounded up to the work-group size);
// - float arithmetic that must equal libelas' x86 float results rounds every product and
//   quotient explicitly: NVIDIA fuses a*b + c into an FMA despite FP_CONTRACT OFF and divides
//   floats approximately by default, and LLVM turns a double product or quotient rounded to
//   float back into a float operation. So products pass through a volatile float (nothing is
//   fused across it) and quotients are computed in a volatile double, then rounded (for float
//   operands that is the correctly rounded float quotient).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

#define INVALID_MATCH (-1.0f)     // findMatch: no candidate
#define INVALID_FILL (-10.0f)     // not matched / rejected by a check

inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }
inline int iabs(int a) { return a < 0 ? -a : a; }
inline float fabs_op(float a) { return a < 0.0f ? -a : a; }
inline double dmin(double a, double b) { return a < b ? a : b; }
inline double dmax(double a, double b) { return a > b ? a : b; }
inline double dabs(double a) { return a < 0.0 ? -a : a; }

// floor(x) as int for |x| < 2^31 (clamped to +-1e9 first).
inline int ifloor(double x)
{
    x = dmin(dmax(x, -1e9), 1e9);
    const int i = (int)x;
    return (double)i > x ? i - 1 : i;
}

// Rounded float product and quotient (x86 mulss, divss): the product is never fused with a
// following addition, the quotient is correct whatever the device's float division accuracy.
inline float fmul(float a, float b)
{
    volatile float product = a * b;
    return product;
}

inline float fdiv(float a, float b)
{
    volatile double quotient = (double)a / (double)b;
    return (float)quotient;
}

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

// ---------------------------------------------------------------------------------------------
// descriptor: libelas' 3x3 Sobel (filter::sobel3x3) and the 16-byte descriptor
// ---------------------------------------------------------------------------------------------

// Gray 0..255 float -> libelas' 8-bit input: round half to even and saturate, the semantics of
// the image program's gray_to_mono8 (exact for mono8 input), but with operators only: PoCL
// calls convert_uchar_sat_rte per pixel, four times slower.
__kernel void elas_gray_u8(__global const float* gray, const int count, __global uchar* out)
{
    const int i = get_global_id(0);
    if (i >= count)
        return;
    const float g = gray[i];
    const float c = g > 0.0f ? (g < 255.0f ? g : 255.0f) : 0.0f;  // NaN -> 0
    const int q = (int)(c + 0.5f);
    out[i] = (uchar)(((float)q - c == 0.5f && (q & 1)) ? q - 1 : q);
}

inline uchar sat_u8(int x) { return (uchar)(x < 0 ? 0 : (x > 255 ? 255 : x)); }

// du = ((s(x-1) - s(x+1)) >> 2) + 128 with s = [1 2 1] down the column; dv = ([1 2 1] along the
// row of (top - bottom)) >> 2, + 128; both saturated to 0..255 (filter::sobel3x3; the shift is
// an arithmetic one, i.e. floor division by 4, written for a positive operand). Rows 0 and
// H-1 and columns 0 and W-1 are never read by a descriptor and are set to 128. Reads are
// clamped instead of branching around the border, so PoCL vectorises the kernel.
__kernel void elas_sobel(__global const uchar* img, const int W, const int H,
                         __global uchar* du, __global uchar* dv)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= W || y >= H)
        return;
    const int xl = x > 0 ? x - 1 : x, xr = x < W - 1 ? x + 1 : x;
    __global const uchar* up = img + (y > 0 ? y - 1 : y) * W;
    __global const uchar* mid = img + y * W;
    __global const uchar* down = img + (y < H - 1 ? y + 1 : y) * W;
    const int ul = up[xl], uc = up[x], ur = up[xr];
    const int ml = mid[xl], mr = mid[xr];
    const int dl = down[xl], dc = down[x], dr = down[xr];
    const int sl = ul + 2 * ml + dl, sr = ur + 2 * mr + dr;
    const int t = (ul - dl) + 2 * (uc - dc) + (ur - dr);
    const bool inside = x >= 1 && y >= 1 && x <= W - 2 && y <= H - 2;
    const int i = y * W + x;
    du[i] = inside ? sat_u8(((sl - sr + 1024) >> 2) - 256 + 128) : (uchar)128;
    dv[i] = inside ? sat_u8(((t + 1024) >> 2) - 256 + 128) : (uchar)128;
}

// Descriptor of (u, v): 12 du and 4 dv samples around the pixel (descriptor.cpp). Defined for
// u in [3, W-4], v in [3, H-4] (with subsampling only even v >= 4); zero elsewhere, which is what
// libelas' uninitialised buffer holds on its first call (the dense matcher reads there).
__kernel void elas_descriptor(__global const uchar* du, __global const uchar* dv, const int W,
                              const int H, const int subsampling, __global uchar16* desc)
{
    const int u = get_global_id(0);
    const int v = get_global_id(1);
    if (u >= W || v >= H)
        return;
    const bool rows_ok = subsampling ? (v >= 4 && v < H - 3 && (v & 1) == 0)
                                     : (v >= 3 && v < H - 3);
    if (!rows_ok || u < 3 || u >= W - 3) {
        desc[v * W + u] = (uchar16)0;
        return;
    }
    __global const uchar* a = du + v * W + u;
    __global const uchar* b = dv + v * W + u;
    uchar16 d;
    d.s0 = a[-2 * W];
    d.s1 = a[-W - 2];
    d.s2 = a[-W];
    d.s3 = a[-W + 2];
    d.s4 = a[-1];
    d.s5 = a[0];
    d.s6 = a[0];
    d.s7 = a[1];
    d.s8 = a[W - 2];
    d.s9 = a[W];
    d.sa = a[W + 2];
    d.sb = a[2 * W];
    d.sc = b[-W];
    d.sd = b[-1];
    d.se = b[1];
    d.sf = b[W];
    desc[v * W + u] = d;
}

// ---------------------------------------------------------------------------------------------
// support matches: candidate lattice, left/right check, removal of inconsistent and redundant
// ---------------------------------------------------------------------------------------------

// computeMatchingDisparity: 4 descriptors at (u+-2, v+-2), best and second best (with demotion)
// over every valid disparity, uniqueness ratio. ref is the image the point lies in; dir is -1
// when it is the left image (match at u - d), +1 for the right image (u + d).
inline int support_match(__global const uchar16* ref, __global const uchar16* tgt, const int u,
                         const int v, const int dir, const int W, const int H, const int disp_min,
                         const int disp_max, const int support_texture,
                         const float support_threshold)
{
    if (u < 5 || u > W - 6 || v < 5 || v > H - 6)
        return -1;
    if (texture16(ref[v * W + u]) < support_texture)
        return -1;
    const int d_lo = imax(disp_min, 0);
    const int d_hi = imin(disp_max, dir < 0 ? u - 5 : W - u - 5);
    if (d_hi - d_lo < 10)
        return -1;
    __global const uchar16* top = ref + (v - 2) * W + u;
    __global const uchar16* bottom = ref + (v + 2) * W + u;
    const uchar16 a1 = top[-2], a2 = top[2], a3 = bottom[-2], a4 = bottom[2];
    __global const uchar16* t_top = tgt + (v - 2) * W + u;
    __global const uchar16* t_bottom = tgt + (v + 2) * W + u;
    int min1 = 32767, min1_d = -1, min2 = 32767, min2_d = -1;
    for (int d = d_lo; d <= d_hi; ++d) {
        const int o = dir * d;
        ushort16 acc = convert_ushort16(absdiff16(a1, t_top[o - 2]))
                       + convert_ushort16(absdiff16(a2, t_top[o + 2]))
                       + convert_ushort16(absdiff16(a3, t_bottom[o - 2]))
                       + convert_ushort16(absdiff16(a4, t_bottom[o + 2]));
        const int e = hsum16(acc);
        if (e < min1) {
            min2 = min1;
            min2_d = min1_d;
            min1 = e;
            min1_d = d;
        } else if (e < min2) {
            min2 = e;
            min2_d = d;
        }
    }
    if (min1_d >= 0 && min2_d >= 0 && (float)min1 < support_threshold * (float)min2)
        return min1_d;
    return -1;
}

// One lattice cell (u_can, v_can) -> its disparity or -1. Row 0 and column 0 are never matched
// and hold 0, as in libelas (calloc'ed D_can): they take part in both removal steps.
__kernel void elas_support_candidates(__global const uchar16* desc_l,
                                      __global const uchar16* desc_r, const int W, const int H,
                                      const int lat_w, const int lat_h,
                                      const int step, const int disp_min, const int disp_max,
                                      const int support_texture, const float support_threshold,
                                      const int lr_threshold, __global int* dcan)
{
    const int uc = get_global_id(0);
    const int vc = get_global_id(1);
    if (uc >= lat_w || vc >= lat_h)
        return;
    int result = 0;
    if (uc > 0 && vc > 0) {
        const int u = uc * step, v = vc * step;
        result = -1;
        const int d = support_match(desc_l, desc_r, u, v, -1, W, H, disp_min, disp_max,
                                    support_texture, support_threshold);
        if (d >= 0) {
            const int d2 = support_match(desc_r, desc_l, u - d, v, 1, W, H, disp_min, disp_max,
                                         support_texture, support_threshold);
            if (d2 >= 0 && iabs(d - d2) <= lr_threshold)
                result = d;
        }
    }
    dcan[vc * lat_w + uc] = result;
}

// removeInconsistentSupportPoints runs in place in u-major order, so a point's count sees the
// final state of the points before it and the original state of those after it. That order is
// reproduced exactly by a monotone fixed point: round 0 counts on the original lattice; a point
// removed in round k decrements the counts of the later points it supported, and a count that
// crosses below incon_min_support removes that point in round k + 1.
// state: -2 not a support point, -1 kept so far, k >= 0 removed in round k.
__kernel void elas_incon_init(__global const int* dcan, const int lat_w, const int lat_h,
                              const int win, const int thr, const int min_support,
                              __global int* count, __global int* state)
{
    const int uc = get_global_id(0);
    const int vc = get_global_id(1);
    if (uc >= lat_w || vc >= lat_h)
        return;
    const int i = vc * lat_w + uc;
    const int d = dcan[i];
    if (d < 0) {
        state[i] = -2;
        count[i] = 0;
        return;
    }
    int n = 0;
    for (int v2 = imax(vc - win, 0); v2 <= imin(vc + win, lat_h - 1); ++v2)
        for (int u2 = imax(uc - win, 0); u2 <= imin(uc + win, lat_w - 1); ++u2) {
            const int d2 = dcan[v2 * lat_w + u2];
            n += (d2 >= 0 && iabs(d - d2) <= thr) ? 1 : 0;
        }
    count[i] = n;
    state[i] = n < min_support ? 0 : -1;
}

__kernel void elas_incon_round(__global const int* dcan, const int lat_w, const int lat_h,
                               const int win, const int thr, const int min_support,
                               const int round, __global int* count, __global int* state,
                               __global int* pending)
{
    const int uc = get_global_id(0);
    const int vc = get_global_id(1);
    if (uc >= lat_w || vc >= lat_h)
        return;
    const int i = vc * lat_w + uc;
    if (state[i] != round - 1)
        return;
    const int d = dcan[i];
    // later points: u2 > uc (any v2), or u2 == uc and v2 > vc
    for (int u2 = uc; u2 <= imin(uc + win, lat_w - 1); ++u2)
        for (int v2 = imax(vc - win, 0); v2 <= imin(vc + win, lat_h - 1); ++v2) {
            if (u2 == uc && v2 <= vc)
                continue;
            const int j = v2 * lat_w + u2;
            const int d2 = dcan[j];
            if (d2 < 0 || iabs(d - d2) > thr)
                continue;
            if (atomic_dec(&count[j]) == min_support && min_support > 0) {
                state[j] = round;
                pending[0] = round;
            }
        }
}

// Removed points become -1. If the fixed point did not converge within the rounds run (pending
// still names the last round), work-item 0 redoes the step sequentially exactly as libelas.
__kernel void elas_incon_apply(__global const int* dcan_in, const int lat_w, const int lat_h,
                               const int win, const int thr, const int min_support,
                               const int last_round, __global const int* state,
                               __global const int* pending, __global int* dcan_out)
{
    const int uc = get_global_id(0);
    const int vc = get_global_id(1);
    if (uc >= lat_w || vc >= lat_h)
        return;
    const int i = vc * lat_w + uc;
    if (pending[0] < last_round) {
        dcan_out[i] = state[i] >= 0 ? -1 : dcan_in[i];
        return;
    }
    if (i != 0)
        return;
    for (int k = 0; k < lat_w * lat_h; ++k)
        dcan_out[k] = dcan_in[k];
    for (int u = 0; u < lat_w; ++u)
        for (int v = 0; v < lat_h; ++v) {
            const int d = dcan_out[v * lat_w + u];
            if (d < 0)
                continue;
            int n = 0;
            for (int u2 = imax(u - win, 0); u2 <= imin(u + win, lat_w - 1); ++u2)
                for (int v2 = imax(v - win, 0); v2 <= imin(v + win, lat_h - 1); ++v2) {
                    const int d2 = dcan_out[v2 * lat_w + u2];
                    n += (d2 >= 0 && iabs(d - d2) <= thr) ? 1 : 0;
                }
            if (n < min_support)
                dcan_out[v * lat_w + u] = -1;
        }
}

// removeRedundantSupportPoints(5, 1): a point with a neighbour of similar disparity (|dd| <= 1)
// within 5 lattice steps on both sides along the line is dropped, in place in u-major order:
// vertical pass = one work-item per column walking down, horizontal = one per row walking right.
inline bool redundant_side(__global const int* dcan, int i, int stride, int steps, int d)
{
    for (int j = 1; j <= steps; ++j) {
        const int d2 = dcan[i + j * stride];
        if (d2 >= 0 && iabs(d - d2) <= 1)
            return true;
    }
    return false;
}

__kernel void elas_redundant(__global int* dcan, const int lat_w, const int lat_h,
                             const int vertical)
{
    const int line = get_global_id(0);
    const int lines = vertical ? lat_w : lat_h;
    if (line >= lines)
        return;
    const int len = vertical ? lat_h : lat_w;
    const int stride = vertical ? lat_w : 1;
    const int base = vertical ? line : line * lat_w;
    for (int k = 0; k < len; ++k) {
        const int i = base + k * stride;
        const int d = dcan[i];
        if (d < 0)
            continue;
        if (redundant_side(dcan, i, -stride, imin(5, k), d)
            && redundant_side(dcan, i, stride, imin(5, len - 1 - k), d))
            dcan[i] = -1;
    }
}

// ---------------------------------------------------------------------------------------------
// support point list, image corners and the per-row point tables of both views (one work-group)
// ---------------------------------------------------------------------------------------------

// Exclusive prefix sum of a[0..n) in place by the whole work-group; returns the total.
inline int group_scan(__global int* a, const int n, __local int* partial)
{
    const int lid = get_local_id(0), lsz = get_local_size(0);
    const int chunk = (n + lsz - 1) / lsz;
    const int begin = imin(lid * chunk, n), end = imin(begin + chunk, n);
    int sum = 0;
    for (int k = begin; k < end; ++k)
        sum += a[k];
    partial[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {
        int run = 0;
        for (int k = 0; k < lsz; ++k) {
            const int t = partial[k];
            partial[k] = run;
            run += t;
        }
        partial[lsz] = run;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int run = partial[lid];
    for (int k = begin; k < end; ++k) {
        const int t = a[k];
        a[k] = run;
        run += t;
    }
    const int total = partial[lsz];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    return total;
}

inline long sq_dist(int2 a, int2 b)
{
    const long dx = a.x - b.x, dy = a.y - b.y;
    return dx * dx + dy * dy;
}

// Sort the slots [begin, begin + n) by (x, point) and drop repeated x (the earlier point stays,
// as Triangle ignores duplicate vertices); unused slots get point -1. Returns the new length.
inline int sort_row(__global int4* slots, const int begin, const int n)
{
    for (int k = begin + 1; k < begin + n; ++k) {
        const int4 item = slots[k];
        int j = k - 1;
        while (j >= begin
               && (slots[j].x > item.x || (slots[j].x == item.x && slots[j].z > item.z))) {
            slots[j + 1] = slots[j];
            --j;
        }
        slots[j + 1] = item;
    }
    int len = 0;
    for (int k = begin; k < begin + n; ++k) {
        if (len > 0 && slots[begin + len - 1].x == slots[k].x)
            continue;
        slots[begin + len] = slots[k];
        ++len;
    }
    for (int k = begin + len; k < begin + n; ++k)
        slots[k] = (int4)(0, 0, -1, -1);
    return len;
}

// points[i] = (u, v, d, 0) in libelas order (u-major lattice order, then the corners);
// meta[0] = number of points. Rows of both views: row 0 holds the corners at y = 0, rows
// 1..lat_h-1 the lattice rows, row lat_h the corners at y = H-1; slot = (x, y, point, row) with
// x = u (left view) or u - d (right view), sorted by x within the row.
__kernel void elas_support_points(__global const int* dcan, const int lat_w, const int lat_h,
                                  const int step, const int W, const int H, const int add_corners,
                                  __global int* col_base, __global int* cell_point,
                                  __global int* row_start, __global int* row_y,
                                  __global int* row_len_l, __global int* row_len_r,
                                  __global int4* points, __global int4* slots_l,
                                  __global int4* slots_r, __global int* meta,
                                  __local int* partial, __local long* best_dist,
                                  __local int* best_index)
{
    const int lid = get_local_id(0), lsz = get_local_size(0);
    const int rows = lat_h + 1;
    for (int c = lid; c < lat_w; c += lsz) {
        int n = 0;
        for (int vc = 1; vc < lat_h && c > 0; ++vc)
            n += dcan[vc * lat_w + c] >= 0 ? 1 : 0;
        col_base[c] = n;
    }
    for (int r = lid; r < rows; r += lsz) {
        int n = (r == 0 || r == lat_h) && add_corners ? 3 : 0;
        for (int uc = 1; uc < lat_w && r > 0 && r < lat_h; ++uc)
            n += dcan[r * lat_w + uc] >= 0 ? 1 : 0;
        row_start[r] = n;
        row_y[r] = r == 0 ? 0 : (r == lat_h ? H - 1 : r * step);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    const int n_lattice = group_scan(col_base, lat_w, partial);
    const int n_slots = group_scan(row_start, rows, partial);
    for (int c = lid; c < lat_w; c += lsz) {
        int k = col_base[c];
        for (int vc = 1; vc < lat_h && c > 0; ++vc) {
            const int i = vc * lat_w + c;
            const int d = dcan[i];
            cell_point[i] = d >= 0 ? k : -1;
            if (d >= 0)
                points[k++] = (int4)(c * step, vc * step, d, 0);
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // addCornerSupportPoints: disparity of the nearest support point (the first one on ties)
    for (int corner = 0; corner < 4 && add_corners; ++corner) {
        const int2 at = (int2)(corner < 2 ? 0 : W - 1, (corner & 1) ? H - 1 : 0);
        long best = 10000000;
        int index = -1;
        for (int k = lid; k < n_lattice; k += lsz) {
            const long dist = sq_dist(at, points[k].xy);
            if (dist < best) {
                best = dist;
                index = k;
            }
        }
        best_dist[lid] = best;
        best_index[lid] = index;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            for (int k = 1; k < lsz; ++k)
                if (best_index[k] >= 0 && (best_dist[k] < best_dist[0]
                    || (best_dist[k] == best_dist[0] && best_index[k] < best_index[0]))) {
                    best_dist[0] = best_dist[k];
                    best_index[0] = best_index[k];
                }
            const int d = best_index[0] >= 0 ? points[best_index[0]].z : 0;
            points[n_lattice + corner] = (int4)(at, d, 0);
            if (corner >= 2)  // the extra right-image corners (W - 1 + d, v, d)
                points[n_lattice + corner + 2] = (int4)(at.x + d, at.y, d, 0);
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    const int n_points = n_lattice + (add_corners ? 6 : 0);
    for (int r = lid; r < rows; r += lsz) {
        const int begin = row_start[r];
        const int n = (r + 1 < rows ? row_start[r + 1] : n_slots) - begin;
        int k = begin;
        if (r == 0 || r == lat_h) {
            for (int c = 0; c < 3 && add_corners; ++c) {
                // corners at y = 0: points 0, 2, 4 after the lattice ones; at y = H-1: 1, 3, 5
                const int p = n_lattice + 2 * c + (r == 0 ? 0 : 1);
                const int4 pt = points[p];
                slots_l[k] = (int4)(pt.x, pt.y, p, r);
                slots_r[k] = (int4)(pt.x - pt.z, pt.y, p, r);
                ++k;
            }
        } else {
            for (int uc = 1; uc < lat_w; ++uc) {
                const int p = cell_point[r * lat_w + uc];
                if (p < 0)
                    continue;
                const int4 pt = points[p];
                slots_l[k] = (int4)(pt.x, pt.y, p, r);
                slots_r[k] = (int4)(pt.x - pt.z, pt.y, p, r);
                ++k;
            }
        }
        row_len_l[r] = sort_row(slots_l, begin, n);
        row_len_r[r] = sort_row(slots_r, begin, n);
    }
    if (lid == 0) {
        meta[0] = n_points;
        meta[1] = n_slots;
    }
}

// ---------------------------------------------------------------------------------------------
// delaunay: every point computes its own star (gift wrapping with exact integer predicates)
// ---------------------------------------------------------------------------------------------
// The Delaunay triangulation of lattice points is not unique (co-circular squares). Ties are
// broken by Simulation of Simplicity: the lifted coordinate x^2 + y^2 of point i is raised by
// eps^(i+1) (i = libelas point order), which defines one triangulation that every point computes
// identically. A triangle is stored by the vertex opposite its longest edge (its largest angle,
// >= 60 degrees, so a point stores at most 5 triangles); ties go to the lowest slot.

#define MAX_OWNED 6

inline long orient2(int2 a, int2 b, int2 c)
{
    return (long)(b.x - a.x) * (long)(c.y - a.y) - (long)(b.y - a.y) * (long)(c.x - a.x);
}

inline long incircle_det(int2 a, int2 b, int2 c, int2 d)
{
    const long adx = a.x - d.x, ady = a.y - d.y;
    const long bdx = b.x - d.x, bdy = b.y - d.y;
    const long cdx = c.x - d.x, cdy = c.y - d.y;
    const long ad = adx * adx + ady * ady, bd = bdx * bdx + bdy * bdy, cd = cdx * cdx + cdy * cdy;
    return adx * (bdy * cd - bd * cdy) - ady * (bdx * cd - bd * cdx) + ad * (bdx * cdy - bdy * cdx);
}

// Is d inside the circle through a, b, c (counter-clockwise, orient2 > 0) after perturbation?
inline bool inside_circle(int2 a, int2 b, int2 c, int2 d, int ra, int rb, int rc, int rd)
{
    const long det = incircle_det(a, b, c, d);
    if (det != 0)
        return det > 0;
    // det' = det + e_a*orient(b,c,d) + e_b*orient(c,a,d) + e_c*orient(a,b,d) - e_d*orient(a,b,c):
    // the term of the lowest rank decides
    long coef[4] = {orient2(b, c, d), orient2(c, a, d), orient2(a, b, d), -orient2(a, b, c)};
    int rank[4] = {ra, rb, rc, rd};
    for (int pass = 0; pass < 4; ++pass) {
        int k = -1;
        for (int j = 0; j < 4; ++j)
            if (rank[j] >= 0 && (k < 0 || rank[j] < rank[k]))
                k = j;
        if (coef[k] != 0)
            return coef[k] > 0;
        rank[k] = -1;
    }
    return false;
}

// The circles through a and b: the current best apex c and the in-circle determinant of c as a
// linear form in (x, y, x^2 + y^2) relative to a, so that testing a candidate costs five
// products: incircle_det(a, b, c, s) = -(k.x sx + k.y sy + k.z (sx^2 + sy^2)).
typedef struct {
    int2 a, b, c;
    int ra, rb, rc;
    long3 k;
} Pencil;

inline void pencil_set(Pencil* p, int2 c, int rc)
{
    const long bx = p->b.x - p->a.x, by = p->b.y - p->a.y;
    const long cx = c.x - p->a.x, cy = c.y - p->a.y;
    const long bz = bx * bx + by * by, cz = cx * cx + cy * cy;
    p->c = c;
    p->rc = rc;
    p->k = (long3)(by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx);
}

// Is s (left of a -> b) inside the current circle, ties broken as inside_circle does?
inline bool pencil_inside(const Pencil* p, int2 s, int rs)
{
    const long sx = s.x - p->a.x, sy = s.y - p->a.y;
    const long det = -(p->k.x * sx + p->k.y * sy + p->k.z * (sx * sx + sy * sy));
    if (det != 0)
        return det > 0;
    return inside_circle(p->a, p->b, p->c, s, p->ra, p->rb, p->rc, rs);
}

typedef struct {
    __global const int4* slots;
    __global const int* row_start;
    __global const int* row_len;
    __global const int* row_y;
    int rows;
} RowTable;

// First slot of row r whose x is >= x.
inline int row_lower_bound(const RowTable* t, int r, int x)
{
    int lo = t->row_start[r], hi = lo + t->row_len[r];
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (t->slots[mid].x < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// First row whose y is >= y.
inline int first_row_from(const RowTable* t, double y)
{
    int lo = 0, hi = t->rows;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if ((double)t->row_y[mid] < y)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

typedef struct {
    double cx, cy, r2;
} Circle;

inline Circle circumcircle(int2 a, int2 b, int2 c)
{
    const double bx = b.x - a.x, by = b.y - a.y, cx = c.x - a.x, cy = c.y - a.y;
    const double d = 2.0 * (bx * cy - by * cx);
    const double b2 = bx * bx + by * by, c2 = cx * cx + cy * cy;
    const double ux = (cy * b2 - by * c2) / d, uy = (bx * c2 - cx * b2) / d;
    Circle k = {a.x + ux, a.y + uy, ux * ux + uy * uy};
    return k;
}

// Replace *best by s if s lies left of a->b and inside the current best circle.
inline bool improve(const RowTable* t, int sa, int sb, int s, int* best, Pencil* p)
{
    if (s == sa || s == sb || s == *best)
        return false;
    const int4 rec = t->slots[s];
    if (orient2(p->a, p->b, rec.xy) <= 0)
        return false;
    if (*best >= 0 && !pencil_inside(p, rec.xy, rec.z))
        return false;
    *best = s;
    pencil_set(p, rec.xy, rec.z);
    return true;
}

// Clip [*lo, *hi] to the part of row y left of a -> b (orient2 > 0), with a margin of one pixel
// (improve() decides exactly); false if nothing is left.
inline bool left_span(int2 A, int2 B, int y, double* lo, double* hi)
{
    const long ex = B.x - A.x, ey = B.y - A.y;
    const long rhs = ex * (long)(y - A.y);  // orient2 = rhs - ey * (x - A.x)
    if (ey == 0)
        return rhs > 0;
    const double x_t = (double)A.x + (double)rhs / (double)ey;
    if (ey > 0)
        *hi = dmin(*hi, x_t + 1.0);
    else
        *lo = dmax(*lo, x_t - 1.0);
    return *lo <= *hi;
}

// Offer the slots of row r with x in [lo, hi] (at most `limit` of them) to improve().
inline void offer_row(const RowTable* t, int r, double lo, double hi, int limit, int sa, int sb,
                      int* best, Pencil* p)
{
    const int end = t->row_start[r] + t->row_len[r];
    const int first = row_lower_bound(t, r, ifloor(lo));
    for (int s = first; s < end && s < first + limit && (double)t->slots[s].x <= hi; ++s)
        improve(t, sa, sb, s, best, p);
}

// The Delaunay apex of the directed edge sa -> sb (on its left), or -1 on the convex hull.
inline int apex(const RowTable* t, int sa, int sb)
{
    const int4 ra4 = t->slots[sa], rb4 = t->slots[sb];
    const int2 A = ra4.xy, B = rb4.xy;
    int best = -1;
    Pencil p;
    p.a = A;
    p.b = B;
    p.ra = ra4.z;
    p.rb = rb4.z;
    // a first candidate: in the rows around the edge, the left slots nearest to its bisector
    const double mx = 0.5 * (A.x + B.x), my = 0.5 * (A.y + B.y);
    const int ex = B.x - A.x, ey = B.y - A.y;
    for (int r = imax(imin(ra4.w, rb4.w) - 1, 0); r <= imin(imax(ra4.w, rb4.w) + 1, t->rows - 1);
         ++r) {
        const int y = t->row_y[r];
        const double target = ex != 0 ? mx - (y - my) * (double)ey / (double)ex : (double)A.x;
        double lo = target - 2.0 * iabs(ex) - 2.0 * iabs(ey) - 1.0, hi = 2.0 * target - lo;
        if (left_span(A, B, y, &lo, &hi))
            offer_row(t, r, lo, hi, 3, sa, sb, &best, &p);
    }
    if (best < 0) {
        // any point left of the line: the row ends are the extreme points of each row
        for (int r = 0; r < t->rows; ++r) {
            const int n = t->row_len[r];
            if (n == 0)
                continue;
            const int first = t->row_start[r];
            improve(t, sa, sb, first, &best, &p);
            improve(t, sa, sb, first + n - 1, &best, &p);
        }
        if (best < 0)
            return -1;
    }
    // exact check of the circle; every improvement shrinks its part left of the edge, so one
    // sweep over the rows of the first circle, with ranges updated on the way, is enough
    Circle k = circumcircle(A, B, p.c);
    double rad = sqrt(k.r2);
    for (int r = first_row_from(t, k.cy - rad - 1.0); r < t->rows; ++r) {
        const int y = t->row_y[r];
        if ((double)y > k.cy + rad + 1.0)
            break;
        const double dy = (double)y - k.cy;
        if (dabs(dy) > rad + 1.0)
            continue;
        const double h = sqrt(dmax(k.r2 - dy * dy, 0.0));
        double lo = k.cx - h - 1.0, hi = k.cx + h + 1.0;
        if (!left_span(A, B, y, &lo, &hi))
            continue;
        const int end = t->row_start[r] + t->row_len[r];
        for (int s = row_lower_bound(t, r, ifloor(lo)); s < end; ++s) {
            if ((double)t->slots[s].x > hi)
                break;
            if (improve(t, sa, sb, s, &best, &p)) {
                k = circumcircle(A, B, p.c);
                rad = sqrt(k.r2);
                const double dy2 = ((double)y - k.cy) * ((double)y - k.cy);
                hi = dmin(hi, k.cx + sqrt(dmax(k.r2 - dy2, 0.0)) + 1.0);
            }
        }
    }
    return best;
}

inline int nearest_slot(const RowTable* t, int s)
{
    const int4 p = t->slots[s];
    long best_d = LONG_MAX;
    int best = -1;
    for (int dir = -1; dir <= 1; dir += 2) {
        for (int r = dir < 0 ? p.w : p.w + 1; r >= 0 && r < t->rows; r += dir) {
            const long dy = t->row_y[r] - p.y;
            if (dy * dy > best_d)
                break;
            const int pos = row_lower_bound(t, r, p.x);
            const int lo = imax(pos - 1, t->row_start[r]);
            const int hi = imin(pos + 2, t->row_start[r] + t->row_len[r]);
            for (int q = lo; q < hi; ++q) {
                if (q == s)
                    continue;
                const long dist = sq_dist(p.xy, t->slots[q].xy);
                if (dist < best_d || (dist == best_d && q < best)) {
                    best_d = dist;
                    best = q;
                }
            }
        }
    }
    return best;
}

// Owner of triangle (a, b, c): the vertex opposite the longest edge, lowest slot on ties.
inline int triangle_owner(const RowTable* t, int a, int b, int c)
{
    const int2 A = t->slots[a].xy, B = t->slots[b].xy, C = t->slots[c].xy;
    const long la = sq_dist(B, C), lb = sq_dist(C, A), lc = sq_dist(A, B);
    const long m = la > lb ? (la > lc ? la : lc) : (lb > lc ? lb : lc);
    int owner = INT_MAX;
    if (la == m)
        owner = a;
    if (lb == m && b < owner)
        owner = b;
    if (lc == m && c < owner)
        owner = c;
    return owner;
}

inline void emit(const RowTable* t, int s, int a, int b, int c, __global int4* tri, int* n)
{
    if (triangle_owner(t, a, b, c) != s || *n >= MAX_OWNED)
        return;
    tri[s * MAX_OWNED + *n] = (int4)(t->slots[a].z, t->slots[b].z, t->slots[c].z, 0);
    ++*n;
}

// Both views in one launch (dimension 1 = view), for twice the parallelism of one view.
__kernel void elas_triangulate(__global const int4* slots_l, __global const int4* slots_r,
                               __global const int* row_start, __global const int* row_len_l,
                               __global const int* row_len_r, __global const int* row_y,
                               const int rows, __global const int* meta, const int max_slots,
                               __global int4* tri_l, __global int4* tri_r,
                               __global int* tri_count_l, __global int* tri_count_r)
{
    const int s = get_global_id(0);
    const int right = get_global_id(1);
    if (s >= max_slots || right > 1)
        return;
    __global const int4* slots = right ? slots_r : slots_l;
    __global int4* tri = right ? tri_r : tri_l;
    int n = 0;
    const RowTable t = {slots, row_start, right ? row_len_r : row_len_l, row_y, rows};
    if (s < meta[1] && slots[s].z >= 0) {
        const int q0 = nearest_slot(&t, s);
        if (q0 >= 0) {
            const int limit = meta[1];
            int q = q0;
            bool closed = false;
            for (int it = 0; it < limit; ++it) {  // counter-clockwise around s
                const int r = apex(&t, s, q);
                if (r < 0)
                    break;
                emit(&t, s, s, q, r, tri, &n);
                q = r;
                if (q == q0) {
                    closed = true;
                    break;
                }
            }
            q = q0;
            for (int it = 0; it < limit && !closed; ++it) {  // clockwise from q0 to the hull
                const int r = apex(&t, q, s);
                if (r < 0)
                    break;
                emit(&t, s, s, r, q, tri, &n);
                q = r;
            }
        }
    }
    (right ? tri_count_r : tri_count_l)[s] = n;
}

// ---------------------------------------------------------------------------------------------
// disparity planes: d = a*u + b*v + c through the corners, in the view's own coordinates
// ---------------------------------------------------------------------------------------------

// Cramer's rule on the integer 3x3 system; libelas' double Gauss-Jordan rounded to float gives
// the same floats. A singular system gives (0, 0, 0), as libelas' failed solve.
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
    return (float3)((float)((double)na / (double)det), (float)((double)nb / (double)det),
                    (float)((double)nc / (double)det));
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
        const bool valid = (double)fabs_op(own.x) < 0.7 && (double)fabs_op(other_a) < 0.7;
        planes[k] = (float4)(own, valid ? 1.0f : 0.0f);
    }
}

// ---------------------------------------------------------------------------------------------
// grid: candidate disparities per grid_size x grid_size cell (createGrid)
// ---------------------------------------------------------------------------------------------

// Every support point marks d-1, d, d+1 in its cell (bit masks of `words` uints per cell).
__kernel void elas_grid_mark(__global const int4* points, __global const int* meta,
                             const int max_points, const int right_view, const int grid_size,
                             const int grid_w, const int grid_h, const int words,
                             const int disp_max, __global uint* marks)
{
    const int i = get_global_id(0);
    if (i >= max_points || i >= meta[0])
        return;
    const int4 p = points[i];
    const int x = right_view ? (int)floor(fdiv((float)(p.x - p.z), (float)grid_size))
                             : p.x / grid_size;
    const int y = (int)floor(fdiv((float)p.y, (float)grid_size));
    if (x < 0 || x >= grid_w || y < 0 || y >= grid_h)
        return;
    for (int d = imax(p.z - 1, 0); d <= imin(p.z + 1, disp_max); ++d)
        atomic_or(&marks[(y * grid_w + x) * words + (d >> 5)], 1u << (d & 31));
}

// 3x3 OR diffusion and the list [count, d_1 < d_2 < ...] per cell. libelas diffuses with a flat
// pointer walk: cells grid_w+1 .. n-grid_w-2 (flat index) get the OR of the flat neighbours
// (wrapping across rows at the left/right edges); every other cell gets no candidates.
__kernel void elas_grid_lists(__global const uint* marks, const int grid_w, const int grid_h,
                              const int words, const int disp_max, __global int* lists)
{
    const int c = get_global_id(0);
    const int n = grid_w * grid_h;
    if (c >= n)
        return;
    __global int* list = lists + c * (disp_max + 2);
    int count = 0;
    if (c >= grid_w + 1 && c <= n - grid_w - 2) {
        for (int w = 0; w < words; ++w) {
            uint bits = 0;
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx)
                    bits |= marks[(c + dy * grid_w + dx) * words + w];
            for (int b = 0; bits != 0; ++b, bits >>= 1)
                if (bits & 1u)
                    list[1 + count++] = w * 32 + b;
        }
    }
    list[0] = count;
}

// ---------------------------------------------------------------------------------------------
// matching: scan conversion of the triangles, then findMatch per pixel
// ---------------------------------------------------------------------------------------------

inline void raster_span(int u_from, int u_to, float a1, float b1, float a2, float b2, int key,
                        int lane, int lanes, int W, int H, int out_w, int subsampling,
                        __global int* owner)
{
    for (int u = imax(u_from, 0); u < imin(u_to, W); ++u) {
        if (u % lanes != lane || (subsampling && (u & 1)))
            continue;
        const int v1 = (int)(fmul(a1, (float)u) + b1);
        const int v2 = (int)(fmul(a2, (float)u) + b2);
        for (int v = imax(imin(v1, v2), 0); v < imin(imax(v1, v2), H); ++v) {
            if (subsampling && (v & 1))
                continue;
            const int i = subsampling ? (v / 2) * out_w + u / 2 : v * out_w + u;
            atomic_max(&owner[i], key);
        }
    }
}

// computeDisparity's scan conversion: corners sorted by u, columns [A_u, B_u) between lines AC
// and AB, then [B_u, C_u) between AC and BC, rows [min(v1, v2), max(v1, v2)), all in float as
// libelas. Later triangles win on shared pixels: the owner map keeps the largest key
// (slot * MAX_OWNED + j). Work-item (s, lane) rasterises the columns u = lane (mod lanes).
__kernel void elas_raster(__global const int4* points, __global const int4* tri,
                          __global const int* tri_count, const int max_slots, const int right_view,
                          const int W, const int H, const int out_w, const int subsampling,
                          __global int* owner)
{
    const int s = get_global_id(0);
    const int lane = get_global_id(1), lanes = get_global_size(1);
    if (s >= max_slots)
        return;
    for (int j = 0; j < tri_count[s]; ++j) {
        const int k = s * MAX_OWNED + j;
        const int4 t = tri[k];
        const int4 p[3] = {points[t.x], points[t.y], points[t.z]};
        float tu[3], tv[3];
        for (int c = 0; c < 3; ++c) {
            tu[c] = (float)(right_view ? p[c].x - p[c].z : p[c].x);
            tv[c] = (float)p[c].y;
        }
        for (int c = 1; c < 3; ++c)  // libelas' exchange sort (stable for equal u)
            for (int e = 0; e < c; ++e)
                if (tu[e] > tu[c]) {
                    float x = tu[c]; tu[c] = tu[e]; tu[e] = x;
                    x = tv[c]; tv[c] = tv[e]; tv[e] = x;
                }
        const int au = (int)tu[0], bu = (int)tu[1], cu = (int)tu[2];
        const float ab_a = au != bu ? fdiv(tv[0] - tv[1], tu[0] - tu[1]) : 0.0f;
        const float ac_a = au != cu ? fdiv(tv[0] - tv[2], tu[0] - tu[2]) : 0.0f;
        const float bc_a = bu != cu ? fdiv(tv[1] - tv[2], tu[1] - tu[2]) : 0.0f;
        const float ab_b = tv[0] - fmul(ab_a, tu[0]);
        const float ac_b = tv[0] - fmul(ac_a, tu[0]);
        const float bc_b = tv[1] - fmul(bc_a, tu[1]);
        if (au != bu)
            raster_span(au, bu, ac_a, ac_b, ab_a, ab_b, k, lane, lanes, W, H, out_w, subsampling,
                        owner);
        if (bu != cu)
            raster_span(bu, cu, ac_a, ac_b, bc_a, bc_b, k, lane, lanes, W, H, out_w, subsampling,
                        owner);
    }
}

// findMatch: the plane prior's band [d_plane - r, d_plane + r] (SAD + P[|d - d_plane|] when
// the plane is valid) and the cell's grid candidates outside the band (SAD only); the lowest
// energy wins, the first one on ties. One descriptor (16 bytes) per pixel; rows 0, 1 and H-2,
// H-1 use the descriptors of rows 2 and H-3. dir = -1 for the left image (u - d), +1 right.
__kernel void elas_match(__global const uchar16* ref, __global const uchar16* tgt,
                         __global const int* owner, __global const float4* planes,
                         __global const int* lists, __global const int* prior, const int W,
                         const int H, const int out_w, const int out_h, const int subsampling,
                         const int dir, const int grid_size, const int grid_w, const int disp_max,
                         const int plane_radius, const int match_texture, __global float* D)
{
    const int i = get_global_id(0);
    const int j = get_global_id(1);
    if (i >= out_w || j >= out_h)
        return;
    const int u = subsampling ? 2 * i : i;
    const int v = subsampling ? 2 * j : j;
    const int key = owner[j * out_w + i];
    float result = INVALID_FILL;
    if (key >= 0 && u >= 2 && u < W - 2) {
        const int line = imax(imin(v, H - 3), 2);
        __global const uchar16* row = tgt + line * W;
        const uchar16 c = ref[line * W + u];
        if (texture16(c) >= match_texture) {
            const float4 pl = planes[key];
            const int d_plane = (int)((fmul(pl.x, (float)u) + fmul(pl.y, (float)v)) + pl.z);
            const int lo = imax(d_plane - plane_radius, 0);
            const int hi = imin(d_plane + plane_radius, disp_max);
            __global const int* list =
                lists + ((v / grid_size) * grid_w + u / grid_size) * (disp_max + 2);
            int min_val = 10000, min_d = -1;
            const int n = list[0];
            for (int k = 1; k <= n; ++k) {
                const int d = list[k];
                if (d >= lo && d <= hi)
                    continue;
                const int uw = u + dir * d;
                if (uw < 2 || uw >= W - 2)
                    continue;
                const int val = sad16(c, row[uw]);
                if (val < min_val) {
                    min_val = val;
                    min_d = d;
                }
            }
            const bool valid = pl.w != 0.0f;
            for (int d = lo; d <= hi; ++d) {
                const int uw = u + dir * d;
                if (uw < 2 || uw >= W - 2)
                    continue;
                const int val = sad16(c, row[uw]) + (valid ? prior[iabs(d - d_plane)] : 0);
                if (val < min_val) {
                    min_val = val;
                    min_d = d;
                }
            }
            result = min_d >= 0 ? (float)min_d : INVALID_MATCH;
        }
    }
    D[j * out_w + i] = result;
}

// ---------------------------------------------------------------------------------------------
// post-processing
// ---------------------------------------------------------------------------------------------

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
    const float uw1 = (float)u - (subsampling ? d1 / 2.0f : d1);
    const float uw2 = (float)u + (subsampling ? d2 / 2.0f : d2);
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
#define GAP_GROUP 64
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
            const float fill = fabs_op(d1 - d2) < 3.0f ? (d1 + d2) / 2.0f : (d1 < d2 ? d1 : d2);
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
