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

// Depth images and point clouds from a disparity map (stereo_image_proc's point_cloud_node on
// the device), with the colours of the left image packed as PointCloud2's rgb field.
//
// Built after imaging/device_image.cl, whose pixel readers (load_u16, bayer_at) it uses.
// Build defines: ENC_<NAME> = encoding ids from cl_vision_nodes/imaging/encodings.py;
// SCAN_GROUP = work-items per group of the block kernels (one block of pixels per group).
//
// A disparity d is valid where min_disparity <= d < inf (NaN is not). Its depth is
// f_baseline / (d - delta_cx): +inf where d == delta_cx (a point at infinity, REP 117's "too
// far"), NaN where d < delta_cx (no point in front of the camera). A point exists where the
// depth is finite; elsewhere x, y and z are NaN.

inline float depth_of(const float d, const float min_disparity, const float delta_cx,
                      const float f_baseline)
{
    if (!(d >= min_disparity && d < INFINITY))
        return NAN;
    const float shifted = d - delta_cx;
    if (shifted > 0.0f)
        return f_baseline / shifted;
    return shifted == 0.0f ? INFINITY : NAN;
}

__kernel void depth_map(__global const float* disparity, const int count,
                        const float min_disparity, const float delta_cx,
                        const float f_baseline, __global float* depth)
{
    const int i = get_global_id(0);
    if (i < count)
        depth[i] = depth_of(disparity[i], min_disparity, delta_cx, f_baseline);
}

inline uint pack_rgb(const uint r, const uint g, const uint b)
{
    return (r << 16) | (g << 8) | b;
}

// Bilinear demosaic of one pixel as decode_gray does it (device_image.cl), as packed colour.
// (ry, rx) is the parity of the red sites; blue sites have the opposite parity in both axes.
inline uint bayer_rgb(__global const uchar* raw, const int step, const int width,
                      const int height, const int y, const int x, const int ry, const int rx)
{
    const uint v = bayer_at(raw, step, width, height, y, x);
    const uint n = bayer_at(raw, step, width, height, y - 1, x);
    const uint s = bayer_at(raw, step, width, height, y + 1, x);
    const uint w = bayer_at(raw, step, width, height, y, x - 1);
    const uint e = bayer_at(raw, step, width, height, y, x + 1);
    const uint cross = (n + s + w + e + 2) >> 2;
    const uint diag = (bayer_at(raw, step, width, height, y - 1, x - 1)
                       + bayer_at(raw, step, width, height, y - 1, x + 1)
                       + bayer_at(raw, step, width, height, y + 1, x - 1)
                       + bayer_at(raw, step, width, height, y + 1, x + 1) + 2) >> 2;
    const uint horiz = (w + e + 1) >> 1;
    const uint vert = (n + s + 1) >> 1;
    const int red_row = (y & 1) == ry;
    const int red_col = (x & 1) == rx;
    if (red_row && red_col)
        return pack_rgb(v, cross, diag);
    if (!red_row && !red_col)
        return pack_rgb(diag, cross, v);
    return red_row ? pack_rgb(horiz, v, vert) : pack_rgb(vert, v, horiz);
}

// 0x00RRGGBB of pixel (x, y) of a raw image: grey replicated for mono (mono16 as
// round(v / 257), the mono8 grey level of the gray decoder), colour channels reordered,
// Bayer demosaiced.
inline uint color_at(__global const uchar* raw, const int step, const int width,
                     const int height, const int encoding, const int swap_bytes,
                     const int x, const int y)
{
    __global const uchar* row = raw + (size_t)y * step;
    switch (encoding) {
    case ENC_MONO8:
        return pack_rgb(row[x], row[x], row[x]);
    case ENC_MONO16: {
        const uint g = (load_u16(row + 2 * x, swap_bytes) + 128) / 257;
        return pack_rgb(g, g, g);
    }
    case ENC_BGR8:
        return pack_rgb(row[3 * x + 2], row[3 * x + 1], row[3 * x]);
    case ENC_RGB8:
        return pack_rgb(row[3 * x], row[3 * x + 1], row[3 * x + 2]);
    case ENC_BGRA8:
        return pack_rgb(row[4 * x + 2], row[4 * x + 1], row[4 * x]);
    case ENC_RGBA8:
        return pack_rgb(row[4 * x], row[4 * x + 1], row[4 * x + 2]);
    case ENC_BAYER_RGGB8:
        return bayer_rgb(raw, step, width, height, y, x, 0, 0);
    case ENC_BAYER_BGGR8:
        return bayer_rgb(raw, step, width, height, y, x, 1, 1);
    case ENC_BAYER_GBRG8:
        return bayer_rgb(raw, step, width, height, y, x, 1, 0);
    case ENC_BAYER_GRBG8:
        return bayer_rgb(raw, step, width, height, y, x, 0, 1);
    }
    return 0;
}

// Exclusive prefix sum of ``value`` over the work-group (SCAN_GROUP items, Hillis-Steele in
// ``buf``); ``*total`` is the group's sum. Every work-item must call it.
inline int group_exclusive_scan(__local int* buf, const int value, int* total)
{
    const int lid = get_local_id(0);
    buf[lid] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < SCAN_GROUP; offset <<= 1) {
        const int add = lid >= offset ? buf[lid - offset] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        buf[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *total = buf[SCAN_GROUP - 1];
    const int inclusive = buf[lid];
    barrier(CLK_LOCAL_MEM_FENCE);  // buf may be reused once everyone has read it
    return inclusive - value;
}

// The organised cloud: one point of point_words 32-bit words per map pixel (x, y, z, then rgb
// at word rgb_word unless it is -1, other words 0), and the number of points of each block of
// SCAN_GROUP pixels for the dense layout. Map pixel (col, row) is image pixel
// (col * pixel_step, row * pixel_step); geometry and colours are those of the image.
__kernel __attribute__((reqd_work_group_size(SCAN_GROUP, 1, 1)))
void point_cloud(__global const float* disparity, const int width, const int count,
                 const int pixel_step, const float min_disparity, const float delta_cx,
                 const float f_baseline, const float fx, const float fy, const float cx,
                 const float cy, __global const uchar* image, const int image_step,
                 const int image_width, const int image_height, const int encoding,
                 const int swap_bytes, const int point_words, const int rgb_word,
                 __global uint* cloud, __global int* block_counts)
{
    __local int scan[SCAN_GROUP];
    const int i = get_global_id(0);
    int valid = 0;
    if (i < count) {
        const int u = (i % width) * pixel_step;
        const int v = (i / width) * pixel_step;
        const float z = depth_of(disparity[i], min_disparity, delta_cx, f_baseline);
        valid = isfinite(z);
        __global uint* point = cloud + (size_t)i * point_words;
        point[0] = as_uint(valid ? ((float)u - cx) * z / fx : NAN);
        point[1] = as_uint(valid ? ((float)v - cy) * z / fy : NAN);
        point[2] = as_uint(valid ? z : NAN);
        for (int word = 3; word < point_words; ++word)
            point[word] = word == rgb_word
                ? color_at(image, image_step, image_width, image_height, encoding,
                           swap_bytes, u, v)
                : 0u;
    }
    int total;
    group_exclusive_scan(scan, valid, &total);
    if (get_local_id(0) == 0)
        block_counts[get_group_id(0)] = total;
}

// offsets[b] = points in the blocks before b, offsets[blocks] = all points: one work-group,
// each work-item sums a run of blocks, the group scans the runs, each writes its run's.
__kernel __attribute__((reqd_work_group_size(SCAN_GROUP, 1, 1)))
void scan_blocks(__global const int* block_counts, const int blocks, __global int* offsets)
{
    __local int scan[SCAN_GROUP];
    const int lid = get_local_id(0);
    const int run = (blocks + SCAN_GROUP - 1) / SCAN_GROUP;
    const int first = min(lid * run, blocks);
    const int last = min(first + run, blocks);
    int sum = 0;
    for (int b = first; b < last; ++b)
        sum += block_counts[b];
    int total;
    int at = group_exclusive_scan(scan, sum, &total);
    for (int b = first; b < last; ++b) {
        offsets[b] = at;
        at += block_counts[b];
    }
    if (lid == 0)
        offsets[blocks] = total;
}

// The dense cloud: the points with a finite z, in map order.
__kernel __attribute__((reqd_work_group_size(SCAN_GROUP, 1, 1)))
void compact_points(__global const uint* cloud, const int count, const int point_words,
                    __global const int* offsets, __global uint* dense)
{
    __local int scan[SCAN_GROUP];
    const int i = get_global_id(0);
    __global const uint* point = cloud + (size_t)i * point_words;
    const int valid = i < count && isfinite(as_float(point[2]));
    int total;
    const int at = offsets[get_group_id(0)] + group_exclusive_scan(scan, valid, &total);
    if (valid)
        for (int word = 0; word < point_words; ++word)
            dense[(size_t)at * point_words + word] = point[word];
}
