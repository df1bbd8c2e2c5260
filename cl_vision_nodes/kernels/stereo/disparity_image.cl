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

// The map a stereo_msgs/DisparityImage carries, made where the matcher left it: disparities
// scaled to the published pixels, invalid ones (below min_disparity, or NaN) set to
// min_disparity - 1 (DisparityImage's convention), and the bounding box of the valid pixels
// (valid_window), reduced per work-group in local memory, then once per group in box.
//
// box holds x0, y0, x1, y1 and must start as INT_MAX, INT_MAX, -1, -1 (x1 < 0: nothing valid).
// Every work-item reaches both barriers; those outside the map only skip the pixel.
__kernel void disparity_image(__global const float *map, const int width, const int height,
                              const float scale, const float min_disparity,
                              __global float *out, volatile __global int *box)
{
    volatile __local int group_box[4];
    const int x = get_global_id(0), y = get_global_id(1);
    const int first = get_local_id(0) == 0 && get_local_id(1) == 0;
    if (first) {
        group_box[0] = INT_MAX;
        group_box[1] = INT_MAX;
        group_box[2] = -1;
        group_box[3] = -1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (x < width && y < height) {
        const int i = y * width + x;
        const float d = map[i] * scale;
        const int valid = d >= min_disparity;
        out[i] = valid ? d : min_disparity - 1.0f;
        if (valid) {
            atomic_min(&group_box[0], x);
            atomic_min(&group_box[1], y);
            atomic_max(&group_box[2], x);
            atomic_max(&group_box[3], y);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (first && group_box[2] >= 0) {
        atomic_min(&box[0], group_box[0]);
        atomic_min(&box[1], group_box[1]);
        atomic_max(&box[2], group_box[2]);
        atomic_max(&box[3], group_box[3]);
    }
}
