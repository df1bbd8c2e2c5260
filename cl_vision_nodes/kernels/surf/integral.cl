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

// SURF integral image, launched by cl_vision_nodes/surf/integral.py (DeviceIntegral): (H+1)x(W+1)
// uint32, row 0 and column 0 zero, exact for 8-bit input while 255*W*H < 2^32. Blocked scan in
// three kernels (seed 002): each work-group scans one block of INT_WG columns x INT_STRIP rows
// locally; the carries of the blocks to the left (per row) and of the strips above (per column)
// are scanned next; a last pass adds them.
//
// Build defines (surf/integral.py): INT_WG (columns per block = work-group size, chosen from
// the device's limits), INT_STRIP (rows per block).
#if !defined(INT_WG) || !defined(INT_STRIP)
#error "surf/integral.cl: build with INT_WG and INT_STRIP (cl_vision_nodes/surf/integral.py)"
#endif

inline uint gray_level(float g)
{
    // Intensities are integers 0..255 (OpenCV SURF takes 8-bit images); NaN becomes 0.
    return min(convert_uint_sat_rte(g), 255u);
}

__kernel __attribute__((reqd_work_group_size(INT_WG, 1, 1)))
void integral_blocks(__global const float* gray, const int width, const int height,
                     __global uint* integ, __global uint* row_totals)
{
    __local uint scan[INT_WG];
    const int lx = get_local_id(0);
    const int block = get_group_id(0);
    const int blocks = get_num_groups(0);
    const int x = block * INT_WG + lx;
    const int y0 = get_group_id(1) * INT_STRIP;
    const int rows = min(INT_STRIP, height - y0);  // the same for the whole group
    const size_t stride = (size_t)width + 1;
    uint column = 0;  // this column's sum over the strip's rows so far
    for (int r = 0; r < rows; ++r) {
        const int y = y0 + r;
        column += x < width ? gray_level(gray[(size_t)y * width + x]) : 0u;
        scan[lx] = column;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int offset = 1; offset < INT_WG; offset <<= 1) {  // Hillis-Steele inclusive scan
            const uint left = lx >= offset ? scan[lx - offset] : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[lx] += left;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (x < width)
            integ[(size_t)(y + 1) * stride + x + 1] = scan[lx];
        if (lx == 0)
            row_totals[(size_t)y * blocks + block] = scan[INT_WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE);  // scan[] is rewritten by the next row
    }
}

__kernel void integral_carries(__global const uint* integ, __global const uint* row_totals,
                               const int width, const int height, const int blocks,
                               __global uint* row_carry, __global uint* strip_carry)
{
    const int id = get_global_id(0);
    if (id < height) {
        // Row id: exclusive prefix of the block totals, i.e. the sum of the strip's rows up to
        // id over all columns left of each block.
        uint acc = 0;
        for (int b = 0; b < blocks; ++b) {
            row_carry[(size_t)id * blocks + b] = acc;
            acc += row_totals[(size_t)id * blocks + b];
        }
    } else if (id < height + width) {
        // Column x: exclusive prefix over strips of the strip's full sum over columns 0..x.
        const int x = id - height;
        const int block = x / INT_WG;
        const int strips = (height + INT_STRIP - 1) / INT_STRIP;
        uint acc = 0;
        for (int s = 0; s < strips; ++s) {
            strip_carry[(size_t)s * width + x] = acc;
            const int last = min((s + 1) * INT_STRIP, height) - 1;
            acc += integ[(size_t)(last + 1) * ((size_t)width + 1) + x + 1];
            for (int b = 0; b < block; ++b)
                acc += row_totals[(size_t)last * blocks + b];
        }
    }
}

__kernel void integral_combine(__global uint* integ, __global const uint* row_carry,
                               __global const uint* strip_carry, const int width,
                               const int height, const int blocks)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x > width || y > height)
        return;
    const size_t at = (size_t)y * ((size_t)width + 1) + x;
    if (x == 0 || y == 0) {
        integ[at] = 0u;
        return;
    }
    integ[at] += row_carry[(size_t)(y - 1) * blocks + (x - 1) / INT_WG]
                 + strip_carry[(size_t)((y - 1) / INT_STRIP) * width + x - 1];
}
