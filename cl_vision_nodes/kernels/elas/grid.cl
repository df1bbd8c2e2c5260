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

// Stage "grid" (elas/grid.py): candidate disparities per grid_size x grid_size cell
// (createGrid).

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
