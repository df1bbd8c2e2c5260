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

// Full-search block matching (flow/block_matching.py); after common.cl. Built with BM_BLOCK
// (block side), BM_RADIUS (search radius) and BM_LOCAL (work-group size, a power of two >= 4,
// from the device's work-group limit; each item scans a stride of the candidates, and the
// minimum over them does not depend on the stride).
#if !defined(BM_BLOCK) || !defined(BM_RADIUS) || !defined(BM_LOCAL)
#error "block_matching.cl needs -D BM_BLOCK, BM_RADIUS and BM_LOCAL"
#endif
#define BM_SPAN (BM_BLOCK + 2 * BM_RADIUS)
#define BM_SIDE (2 * BM_RADIUS + 1)
#define BM_CANDIDATES (BM_SIDE * BM_SIDE)

// Matching cost of the candidate displaced by (dx, dy): the mean absolute difference of the
// 8-bit values over the block pixels whose match lies inside frame 1 (-1 in the tile), in
// fixed point (1/1024 grey level, exact integer arithmetic); UINT_MAX when fewer than half of
// the block's `inside` pixels have a match, so blocks at the border still find their motion.
inline uint block_cost(__local const short* ref, __local const short* area, int dx, int dy,
                       int inside)
{
    uint sad = 0;
    int count = 0;
    for (int y = 0; y < BM_BLOCK; ++y) {
        __local const short* arow = area + (y + dy + BM_RADIUS) * BM_SPAN + dx + BM_RADIUS;
        for (int x = 0; x < BM_BLOCK; ++x) {
            const int a = ref[y * BM_BLOCK + x];
            const int b = arow[x];
            if (a >= 0 && b >= 0) {
                sad += abs(a - b);
                ++count;
            }
        }
    }
    return 2 * count >= inside ? (sad << 10) / count : UINT_MAX;
}

// Vertex of the parabola through (-1, left), (0, mid), (1, right), within +-0.5 px.
inline float parabola_offset(uint left, uint mid, uint right)
{
    if (left == UINT_MAX || right == UINT_MAX)
        return 0.0f;
    const float l = (float)left, m = (float)mid, r = (float)right;
    const float curvature = l - 2.0f * m + r;
    return curvature > 0.0f ? clamp((l - r) / (2.0f * curvature), -0.5f, 0.5f) : 0.0f;
}

// One work-group per BM_BLOCK x BM_BLOCK block of frame 0 (partial blocks at the right and
// bottom use their inside pixels). Frame values are quantised to 8 bits (round to nearest).
// The block and its search area of frame 1 are cached in local memory; each work-item scans a
// stride of the (2R+1)^2 candidates; the minimum of the key (cost, |d|^2, raster index) picks
// the best cost (block_cost: SAD per matched pixel), ties going to the smallest motion, then to
// the first in raster order (d = 0 always has a cost). With `subpixel`, a parabola through the
// costs of the 4-neighbour displacements refines each axis. Every pixel of the block receives
// the block's vector.
__kernel __attribute__((reqd_work_group_size(BM_LOCAL, 1, 1)))
void bm_search(__global const float* i0, __global const float* i1, const int w, const int h,
               const int subpixel, __global float2* flow)
{
    __local short ref[BM_BLOCK * BM_BLOCK];
    __local short area[BM_SPAN * BM_SPAN];
    __local ulong keys[BM_LOCAL];
    __local uint neighbour_cost[4];
    const int lid = get_local_id(0);
    const int x0 = get_group_id(0) * BM_BLOCK, y0 = get_group_id(1) * BM_BLOCK;
    const int inside = min(BM_BLOCK, w - x0) * min(BM_BLOCK, h - y0);
    for (int k = lid; k < BM_BLOCK * BM_BLOCK; k += BM_LOCAL) {
        const int x = x0 + k % BM_BLOCK, y = y0 + k / BM_BLOCK;
        ref[k] = (x < w && y < h) ? convert_uchar_sat_rte(i0[(size_t)y * w + x]) : -1;
    }
    for (int k = lid; k < BM_SPAN * BM_SPAN; k += BM_LOCAL) {
        const int x = x0 - BM_RADIUS + k % BM_SPAN, y = y0 - BM_RADIUS + k / BM_SPAN;
        area[k] = (x >= 0 && x < w && y >= 0 && y < h)
            ? convert_uchar_sat_rte(i1[(size_t)y * w + x]) : -1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    ulong best = ULONG_MAX;
    for (int c = lid; c < BM_CANDIDATES; c += BM_LOCAL) {
        const int dx = c % BM_SIDE - BM_RADIUS, dy = c / BM_SIDE - BM_RADIUS;
        const uint cost = block_cost(ref, area, dx, dy, inside);
        if (cost != UINT_MAX)
            best = min(best, ((ulong)cost << 32) | ((ulong)(dx * dx + dy * dy) << 16) | (ulong)c);
    }
    keys[lid] = best;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BM_LOCAL / 2; stride > 0; stride >>= 1) {
        if (lid < stride)
            keys[lid] = min(keys[lid], keys[lid + stride]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ulong key = keys[0];
    const int c = (int)(key & 0xFFFF);
    const int dx = c % BM_SIDE - BM_RADIUS, dy = c / BM_SIDE - BM_RADIUS;
    if (lid < 4) {
        const int nx = dx + (lid == 0 ? -1 : lid == 1 ? 1 : 0);
        const int ny = dy + (lid == 2 ? -1 : lid == 3 ? 1 : 0);
        const int in_range = abs(nx) <= BM_RADIUS && abs(ny) <= BM_RADIUS;
        neighbour_cost[lid] = (subpixel && in_range) ? block_cost(ref, area, nx, ny, inside)
                                                     : UINT_MAX;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float2 vector = (float2)(dx, dy);
    if (subpixel) {
        const uint mid = (uint)(key >> 32);
        vector.x += parabola_offset(neighbour_cost[0], mid, neighbour_cost[1]);
        vector.y += parabola_offset(neighbour_cost[2], mid, neighbour_cost[3]);
    }
    for (int k = lid; k < BM_BLOCK * BM_BLOCK; k += BM_LOCAL) {
        const int x = x0 + k % BM_BLOCK, y = y0 + k / BM_BLOCK;
        if (x < w && y < h)
            flow[(size_t)y * w + x] = vector;
    }
}

// --- CPU formulation (DeviceLimits.formulation 'cpu'; built with BM_CPU) ------------------------
// bm_search_cpu: the same search and result (integer costs, the same key minimum, the same
// sub-pixel fit) with one work-item per block (global size: the blocks) and no barriers. Block
// rows are int8 chunks, -1 past the block or the image; the search area is held in rows padded
// by 8 with -1, so a chunk of any candidate is 8 consecutive ints. Operators instead of abs,
// min and vload8: PoCL calls its built-in functions rather than inlining them.
#ifdef BM_CPU
#define BM_CHUNKS ((BM_BLOCK + 7) / 8)
#define BM_ROW (BM_SPAN + 8)

// block_cost of the candidate (dx, dy), 8 pixels of a block row at a time.
inline __attribute__((always_inline)) uint block_cost8(const int8* ref, const int* area, int dx,
                                                       int dy, int inside)
{
    int8 sad = 0, count = 0;
    for (int y = 0; y < BM_BLOCK; ++y) {
        const int* arow = area + (y + dy + BM_RADIUS) * BM_ROW + dx + BM_RADIUS;
        for (int c = 0; c < BM_CHUNKS; ++c) {
            const int* p = arow + 8 * c;
            const int8 a = ref[y * BM_CHUNKS + c];
            const int8 b = (int8)(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
            const int8 matched = a >= 0 && b >= 0;  // -1 where both are pixels
            const int8 diff = a - b;
            sad += matched ? (diff < 0 ? -diff : diff) : (int8)(0);
            count -= matched;
        }
    }
    const uint total = (uint)(sad.s0 + sad.s1 + sad.s2 + sad.s3 + sad.s4 + sad.s5 + sad.s6
                              + sad.s7);
    const int n = count.s0 + count.s1 + count.s2 + count.s3 + count.s4 + count.s5 + count.s6
                  + count.s7;
    return 2 * n >= inside ? (total << 10) / n : UINT_MAX;
}

__kernel void bm_search_cpu(__global const float* i0, __global const float* i1, const int w,
                            const int h, const int subpixel, __global float2* flow)
{
    const int x0 = get_global_id(0) * BM_BLOCK, y0 = get_global_id(1) * BM_BLOCK;
    if (x0 >= w || y0 >= h)
        return;
    const int inside = min(BM_BLOCK, w - x0) * min(BM_BLOCK, h - y0);
    int8 ref[BM_BLOCK * BM_CHUNKS];
    int area[BM_SPAN * BM_ROW];
    for (int y = 0; y < BM_BLOCK; ++y)
        for (int k = 0; k < 8 * BM_CHUNKS; ++k) {
            const int x = x0 + k, gy = y0 + y;
            ((int*)ref)[y * 8 * BM_CHUNKS + k] = (k < BM_BLOCK && x < w && gy < h)
                ? convert_uchar_sat_rte(i0[(size_t)gy * w + x]) : -1;
        }
    for (int y = 0; y < BM_SPAN; ++y)
        for (int k = 0; k < BM_ROW; ++k) {
            const int x = x0 - BM_RADIUS + k, gy = y0 - BM_RADIUS + y;
            area[y * BM_ROW + k] = (k < BM_SPAN && x >= 0 && x < w && gy >= 0 && gy < h)
                ? convert_uchar_sat_rte(i1[(size_t)gy * w + x]) : -1;
        }
    ulong best = ULONG_MAX;
    for (int c = 0; c < BM_CANDIDATES; ++c) {
        const int dx = c % BM_SIDE - BM_RADIUS, dy = c / BM_SIDE - BM_RADIUS;
        const uint cost = block_cost8(ref, area, dx, dy, inside);
        const ulong key = ((ulong)cost << 32) | ((ulong)(dx * dx + dy * dy) << 16) | (ulong)c;
        best = cost != UINT_MAX && key < best ? key : best;
    }
    const int c = (int)(best & 0xFFFF);
    const int dx = c % BM_SIDE - BM_RADIUS, dy = c / BM_SIDE - BM_RADIUS;
    float2 vector = (float2)(dx, dy);
    if (subpixel) {
        uint neighbour_cost[4];
        for (int n = 0; n < 4; ++n) {
            const int nx = dx + (n == 0 ? -1 : n == 1 ? 1 : 0);
            const int ny = dy + (n == 2 ? -1 : n == 3 ? 1 : 0);
            const int in_range = nx >= -BM_RADIUS && nx <= BM_RADIUS && ny >= -BM_RADIUS
                                 && ny <= BM_RADIUS;
            neighbour_cost[n] = in_range ? block_cost8(ref, area, nx, ny, inside) : UINT_MAX;
        }
        const uint mid = (uint)(best >> 32);
        vector.x += parabola_offset(neighbour_cost[0], mid, neighbour_cost[1]);
        vector.y += parabola_offset(neighbour_cost[2], mid, neighbour_cost[3]);
    }
    for (int y = y0; y < min(y0 + BM_BLOCK, h); ++y)
        for (int x = x0; x < min(x0 + BM_BLOCK, w); ++x)
            flow[(size_t)y * w + x] = vector;
}
#endif
