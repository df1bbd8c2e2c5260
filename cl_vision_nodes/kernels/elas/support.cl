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

// Stage "support matches" (elas/support.py): candidate lattice, left/right check, removal of
// inconsistent and redundant points, then the support point list with the image corners and the
// per-row point tables of both views that the triangulation searches.

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

// --- support point list, image corners and the per-row point tables of both views -----------
// (one work-group of any size: the results do not depend on it)

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
