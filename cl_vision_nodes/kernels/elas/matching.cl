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

// Stage "matching" (elas/matching.py): scan conversion of the triangles, then findMatch per
// pixel.
#ifndef MAX_OWNED
#error MAX_OWNED (triangles stored per point) comes from the host: elas/device.py
#endif

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
