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

// SURF orientation and descriptors, launched by cl_vision_nodes/surf/describe.py (Describer);
// built after kernels/surf/common.cl (box sums, keypoint record, no fp contraction).
//
// Build defines (surf/describe.py): ORI_WG (orientation work-group size, from the device's
// limits), ORI_SAMPLES (orientation samples, 113), DESC_WG (descriptor work-group size, 64),
// PATCH_SZ (descriptor window side in samples, 20).
#if !defined(ORI_WG) || !defined(ORI_SAMPLES) || !defined(DESC_WG) || !defined(PATCH_SZ)
#error "surf/describe.cl: build with ORI_WG, ORI_SAMPLES, DESC_WG, PATCH_SZ (surf/describe.py)"
#endif
#define ORI_SEARCH_INC 5
#define ORI_WIN 60
#define ORI_DIRECTIONS (360 / ORI_SEARCH_INC)
#define PATCH_PTS ((PATCH_SZ + 1) * (PATCH_SZ + 1))

// Orientation: one work-group per keypoint. OpenCV's sampling: 113 points of a radius-6 disc
// scaled by s = 1.2 size / 9, Haar wavelets of side 2 round(2 s), Gaussian weights (sigma 2.5 s,
// from the table), a 60-degree window slid in 5-degree steps over the rounded sample angles.
// Work-items take the samples, then the 72 window directions, in strides of ORI_WG: each value
// is computed alone and summed in one fixed order, so any group size gives the same angles.

// OpenCV's fastAtan2 (polynomial, degrees in [0, 360]); reproduced so that the rounded sample
// angles, and so the window contents, are OpenCV's.
inline float fast_atan2_deg(float y, float x)
{
    const float p1 = 0.9997878412794807f * 57.29577951308232f;
    const float p3 = -0.3258083974640975f * 57.29577951308232f;
    const float p5 = 0.1555786518463281f * 57.29577951308232f;
    const float p7 = -0.04432655554792128f * 57.29577951308232f;
    const float eps = 2.220446049250313e-16f;
    const float ax = fabs(x), ay = fabs(y);
    float a;
    if (ax >= ay) {
        const float c = ay / (ax + eps), c2 = c * c;
        a = (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
    } else {
        const float c = ax / (ay + eps), c2 = c * c;
        a = 90.0f - (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
    }
    if (x < 0)
        a = 180.0f - a;
    if (y < 0)
        a = 360.0f - a;
    return a;
}

__kernel __attribute__((reqd_work_group_size(ORI_WG, 1, 1)))
void orientation(__global const uint* integ, const int width, const int height,
                 __global float* keypoints, const int kp_stride, __global const float4* samples,
                 const int upright)
{
    __local float sx[ORI_SAMPLES], sy[ORI_SAMPLES];
    __local int sangle[ORI_SAMPLES];
    __local float wx[ORI_DIRECTIONS], wy[ORI_DIRECTIONS];
    const int lid = get_local_id(0);
    __global float* kp = keypoints + (size_t)get_group_id(0) * kp_stride;
    const float cx = kp[KP_X], cy = kp[KP_Y];
    const float s = kp[KP_SIZE] * 1.2f / 9.0f;
    const int grad = 2 * (int)rint(2 * s);
    const size_t stride = (size_t)width + 1;
    const bool fits = height + 1 >= grad && width + 1 >= grad;

    for (int t = lid; t < ORI_SAMPLES; t += ORI_WG) {
        const float4 p = samples[t];
        const int x = (int)rint(cx + p.x * s - (float)(grad - 1) / 2);
        const int y = (int)rint(cy + p.y * s - (float)(grad - 1) / 2);
        float vx = 0.0f, vy = 0.0f;
        int angle = -1000;  // marks a sample outside the image (never inside the window)
        if (!upright && fits && y >= 0 && y < height + 1 - grad && x >= 0
            && x < width + 1 - grad) {
            const int mid = grad / 2;
            const float w = 1.0f / ((float)mid * (float)grad);
            const int left = box_sum(integ, stride, y, x, y + grad, x + mid);
            const int right = box_sum(integ, stride, y, x + mid, y + grad, x + grad);
            const int upper = box_sum(integ, stride, y, x, y + mid, x + grad);
            const int lower = box_sum(integ, stride, y + mid, x, y + grad, x + grad);
            vx = (float)(right - left) * w * p.z;
            vy = (float)(upper - lower) * w * p.z;
            angle = (int)rint(fast_atan2_deg(vy, vx));
        }
        sx[t] = vx;
        sy[t] = vy;
        sangle[t] = angle;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = lid; k < ORI_DIRECTIONS; k += ORI_WG) {
        const int dir = k * ORI_SEARCH_INC;
        float sumx = 0.0f, sumy = 0.0f;
        for (int t = 0; t < ORI_SAMPLES; ++t) {
            const int d = abs(sangle[t] - dir);
            if (sangle[t] >= 0 && (d < ORI_WIN / 2 || d > 360 - ORI_WIN / 2)) {
                sumx += sx[t];
                sumy += sy[t];
            }
        }
        wx[k] = sumx;
        wy[k] = sumy;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        bool sampled = false;
        for (int t = 0; t < ORI_SAMPLES; ++t)
            sampled = sampled || sangle[t] >= 0;
        float best = 0.0f, bestx = 0.0f, besty = 0.0f;
        for (int k = 0; k < ORI_DIRECTIONS; ++k) {
            const float mod = wx[k] * wx[k] + wy[k] * wy[k];
            if (mod > best) {
                best = mod;
                bestx = wx[k];
                besty = wy[k];
            }
        }
        // OpenCV drops a keypoint whose wavelet does not fit the image or that has no sample
        // inside it; upright keypoints get 270 degrees (its "360 - 90").
        kp[KP_ANGLE] = upright ? 270.0f : fast_atan2_deg(-besty, bestx);
        kp[KP_VALID] = (fits && (upright || sampled)) ? 1.0f : 0.0f;
    }
}

// ------------------------------------------------------------------------------------------
// Descriptor: one work-group per keypoint. A 21x21 patch of cells of side r = int(21 s) / 21
// on the grid rotated to the keypoint angle (OpenCV's window), each cell the exact mean of the
// pixel-constant image over an axis-aligned r x r square (bilinear interpolation of the integral
// image); then OpenCV's 2x2 differences weighted by a 20x20 Gaussian (sigma 3.3 s) summed over
// 4x4 subregions of 5x5 samples, L2-normalised.

// Integral of the pixel-constant image over [x0, x1] x [y0, y1] (integral-image coordinates:
// pixel (c, r) covers [c, c+1] x [r, r+1]); requires 0 <= x0 <= x1 <= width, same in y.
// Bilinear interpolation of the integral image is that integral exactly; it is evaluated as an
// integer box plus fractional strips and corners, all integer differences, so no large value
// is ever rounded to float.
inline float area_sum(__global const uint* integ, const size_t stride, int width, int height,
                      float x0, float y0, float x1, float y1)
{
    const int ix0 = min((int)floor(x0), width - 1), ix1 = min((int)floor(x1), width - 1);
    const int iy0 = min((int)floor(y0), height - 1), iy1 = min((int)floor(y1), height - 1);
    const float fx0 = x0 - ix0, fx1 = x1 - ix1, fy0 = y0 - iy0, fy1 = y1 - iy1;
    const int inner = box_sum(integ, stride, iy0, ix0, iy1, ix1);
    const int col0 = box_sum(integ, stride, iy0, ix0, iy1, ix0 + 1);
    const int col1 = box_sum(integ, stride, iy0, ix1, iy1, ix1 + 1);
    const int row0 = box_sum(integ, stride, iy0, ix0, iy0 + 1, ix1);
    const int row1 = box_sum(integ, stride, iy1, ix0, iy1 + 1, ix1);
    const int p00 = box_sum(integ, stride, iy0, ix0, iy0 + 1, ix0 + 1);
    const int p01 = box_sum(integ, stride, iy0, ix1, iy0 + 1, ix1 + 1);
    const int p10 = box_sum(integ, stride, iy1, ix0, iy1 + 1, ix0 + 1);
    const int p11 = box_sum(integ, stride, iy1, ix1, iy1 + 1, ix1 + 1);
    return (float)inner + fx1 * col1 - fx0 * col0 + fy1 * row1 - fy0 * row0
           + fx1 * fy1 * p11 - fx0 * fy1 * p10 - fx1 * fy0 * p01 + fx0 * fy0 * p00;
}

// Mean over the side x side square centred on pixel coordinates (cx, cy), shifted inside the
// image where it would cross the border (OpenCV replicates border pixels instead).
inline float cell_mean(__global const uint* integ, const size_t stride, int width, int height,
                       float cx, float cy, float side)
{
    const float sw = min(side, (float)width), sh = min(side, (float)height);
    const float x0 = clamp(cx + 0.5f - 0.5f * sw, 0.0f, (float)width - sw);
    const float y0 = clamp(cy + 0.5f - 0.5f * sh, 0.0f, (float)height - sh);
    return area_sum(integ, stride, width, height, x0, y0, x0 + sw, y0 + sh) / (sw * sh);
}

#if DESC_WG != 64
#error "descriptor: DESC_WG must be 64 (4 work-items per subregion of the 4x4 grid)"
#endif

__kernel __attribute__((reqd_work_group_size(DESC_WG, 1, 1)))
void descriptor(__global const uint* integ, const int width, const int height,
                __global float* keypoints, const int kp_stride, __global const float* gauss,
                const int extended)
{
    __local float patch[PATCH_PTS];
    __local float partial[DESC_WG][8];
    __local float vec[128];
    __local float scale;
    const int lid = get_local_id(0);
    const int key = get_group_id(0);
    const int length = extended ? 128 : 64;
    __global float* kp = keypoints + (size_t)key * kp_stride;
    const float s = kp[KP_SIZE] * 1.2f / 9.0f;
    const float cell = (float)(int)((PATCH_SZ + 1) * s) / (PATCH_SZ + 1);
    const float theta = kp[KP_ANGLE] * (M_PI_F / 180.0f);
    float cos_t;
    const float sin_t = sincos(theta, &cos_t);
    const size_t stride = (size_t)width + 1;

    for (int p = lid; p < PATCH_PTS; p += DESC_WG) {
        const float u = (p % (PATCH_SZ + 1) - PATCH_SZ / 2) * cell;  // along the angle
        const float v = (p / (PATCH_SZ + 1) - PATCH_SZ / 2) * cell;  // perpendicular to it
        patch[p] = cell_mean(integ, stride, width, height, kp[KP_X] + u * cos_t - v * sin_t,
                             kp[KP_Y] + u * sin_t + v * cos_t, cell);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // Work-item -> subregion lid / 4 (4x4 grid), and every 4th of its 25 samples.
    const int region = lid / 4;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int t = lid % 4; t < 25; t += 4) {
        const int i = (region / 4) * 5 + t / 5, j = (region % 4) * 5 + t % 5;
        const float w = gauss[i * PATCH_SZ + j];
        __local const float* row0 = patch + i * (PATCH_SZ + 1);
        __local const float* row1 = row0 + PATCH_SZ + 1;
        const float dx = (row0[j + 1] - row0[j] + row1[j + 1] - row1[j]) * w;
        const float dy = (row1[j] - row0[j] + row1[j + 1] - row0[j + 1]) * w;
        if (!extended) {
            acc[0] += dx; acc[1] += dy; acc[2] += fabs(dx); acc[3] += fabs(dy);
        } else {
            if (dy >= 0) { acc[0] += dx; acc[1] += fabs(dx); }
            else { acc[2] += dx; acc[3] += fabs(dx); }
            if (dx >= 0) { acc[4] += dy; acc[5] += fabs(dy); }
            else { acc[6] += dy; acc[7] += fabs(dy); }
        }
    }
    for (int c = 0; c < 8; ++c)
        partial[lid][c] = acc[c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int per_region = length / 16;
    for (int e = lid; e < length; e += DESC_WG) {
        const int r = e / per_region, c = e % per_region;
        vec[e] = partial[4 * r][c] + partial[4 * r + 1][c] + partial[4 * r + 2][c]
                 + partial[4 * r + 3][c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        float sq = 0.0f;
        for (int e = 0; e < length; ++e)
            sq += vec[e] * vec[e];
        scale = kp[KP_VALID] > 0.0f ? 1.0f / (sqrt(sq) + FLT_EPSILON) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < length; e += DESC_WG)
        kp[KP_FIELDS + e] = vec[e] * scale;
}
