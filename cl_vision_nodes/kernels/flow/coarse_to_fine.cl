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

// Flow between pyramid levels (flow/coarse_to_fine.py); after common.cl.

// Coarse-to-fine prolongation by ``factor`` (a power of two: 2 between neighbouring levels, 4 or 8
// from a finest searched level straight to full resolution): fine pixel (x, y) lies at coarse
// (x/factor, y/factor) (see pyr_down); bilinear, and the vectors grow with the pixel size. A
// work-item takes one coarse pixel and writes its factor x factor fine pixels: its four taps are
// loads that neighbouring work-items make at neighbouring addresses (PoCL vectorises them; a
// work-item per fine pixel gathered), and each weight a / factor is exact, so factor 2 gives the
// values of a per-pixel bilinear sample bit for bit.
__kernel void flow_upsample(__global const float2* coarse, const int cw, const int ch,
                            __global float2* fine, const int fw, const int fh, const int factor)
{
    const int2 c = item_pixel(cw, ch);
    const int x1 = c.x + 1 < cw ? c.x + 1 : cw - 1, y1 = c.y + 1 < ch ? c.y + 1 : ch - 1;
    const float2 c00 = coarse[c.y * cw + c.x], c10 = coarse[c.y * cw + x1];
    const float2 c01 = coarse[y1 * cw + c.x], c11 = coarse[y1 * cw + x1];
    const float step = 1.0f / (float)factor, scale = (float)factor;
    for (int b = 0; b < factor; ++b) {
        const int y = c.y * factor + b;
        const float ty = (float)b * step;
        for (int a = 0; a < factor; ++a) {
            const int x = c.x * factor + a;
            const float tx = (float)a * step;
            const float2 top = c00 * (1.0f - tx) + c10 * tx;
            const float2 bottom = c01 * (1.0f - tx) + c11 * tx;
            if (x < fw && y < fh)
                fine[(size_t)y * fw + x] = scale * (top * (1.0f - ty) + bottom * ty);
        }
    }
}
