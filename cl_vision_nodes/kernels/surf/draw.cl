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

// Keypoints drawn on their frame as a bgr8 picture (surf/draw.py). Build defines: the record
// layout (KP_X ... KP_VALID, keypoints.record_defines) and the colours POSITIVE_COLOUR and
// NEGATIVE_COLOUR (0xRRGGBB) of keypoints with a positive and a non-positive Laplacian.

// The frame's gray in all three channels, truncated to 0..255 as the host's
// np.clip(gray, 0, 255).astype(np.uint8).
__kernel void gray_to_bgr(__global const float* gray, const int count, __global uchar* bgr)
{
    const int p = get_global_id(0);
    if (p >= count)
        return;
    vstore3((uchar3)(convert_uchar_sat(gray[p])), p, bgr);
}

void plot(__global uchar* bgr, const int width, const int height, const int x, const int y,
          const uchar3 colour)
{
    if (x >= 0 && x < width && y >= 0 && y < height)
        vstore3(colour, (size_t)y * width + x, bgr);
}

// One keypoint per row of work-items: a one-pixel circle of radius max(rint(size / 2), 1) around
// the rounded centre and the radius from the centre to the angle, as draw_keypoints places them
// (Python's round is rint's half to even), without anti-aliasing. The lanes of a row (dimension
// 0) share the keypoint's pixels, so that no work-item walks a whole circle: each takes every
// lanes-th row of the circle's first octant, |y| <= |x| with x = rint(sqrt(r^2 - y^2)) (one
// pixel per row there: 8-connected, no gaps), mirrored 8 ways, and every lanes-th point of the
// radius. One launch draws the keypoints of one Laplacian sign (``positive``): a pixel is three
// bytes, written byte by byte, so two colours in one launch could mix into a third where circles
// cross; of one colour, a pixel of several keypoints is that colour, and the second launch's
// colour wins over the first's. Records that are not valid, not finite or far outside the
// picture are skipped; the radius is capped at width + height.
__kernel void draw_keypoints(__global const float* records, const int count, const int stride,
                             const int width, const int height, const int positive,
                             __global uchar* bgr)
{
    const int lane = get_global_id(0), lanes = get_global_size(0), k = get_global_id(1);
    if (k >= count)
        return;
    __global const float* record = records + (size_t)k * stride;
    const float x = record[KP_X], y = record[KP_Y];
    const float size = record[KP_SIZE], angle = record[KP_ANGLE];
    if (!(record[KP_VALID] > 0.0f) || !isfinite(x) || !isfinite(y) || !isfinite(size)
        || !isfinite(angle) || fabs(x) > 2 * width || fabs(y) > 2 * height
        || (record[KP_LAPLACIAN] > 0.0f) != (positive != 0))
        return;
    const uint rgb = positive ? POSITIVE_COLOUR : NEGATIVE_COLOUR;
    const uchar3 colour = (uchar3)(rgb & 0xff, (rgb >> 8) & 0xff, rgb >> 16);
    const float radius = min(size * 0.5f, (float)(width + height));
    const int cx = (int)rint(x), cy = (int)rint(y);
    const int r = max((int)rint(radius), 1);
    for (int dy = lane; dy <= r; dy += lanes) {
        const int dx = (int)rint(sqrt((float)(r * r - dy * dy)));
        if (dy > dx)
            break;
        plot(bgr, width, height, cx + dx, cy + dy, colour);
        plot(bgr, width, height, cx - dx, cy + dy, colour);
        plot(bgr, width, height, cx + dx, cy - dy, colour);
        plot(bgr, width, height, cx - dx, cy - dy, colour);
        plot(bgr, width, height, cx + dy, cy + dx, colour);
        plot(bgr, width, height, cx - dy, cy + dx, colour);
        plot(bgr, width, height, cx + dy, cy - dx, colour);
        plot(bgr, width, height, cx - dy, cy - dx, colour);
    }
    const float theta = radians(angle);
    const int ex = (int)rint(x + radius * cos(theta)) - cx;
    const int ey = (int)rint(y + radius * sin(theta)) - cy;
    const int steps = max(abs(ex), abs(ey));
    for (int t = lane; t <= steps; t += lanes) {
        const float along = steps > 0 ? (float)t / (float)steps : 0.0f;
        plot(bgr, width, height, cx + (int)rint(along * ex), cy + (int)rint(along * ey), colour);
    }
}
