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

// flow_upsample by a factor of 2, 4 or 8 (flow_upsample_by2, _by4, _by8): each fine row of the
// coarse pixel's block is one vector of 2 * factor floats, stored at once (PoCL otherwise
// scatters the per-pixel stores of neighbouring work-items: 640 x 480 from 160 x 120 took
// 0.35 ms on 2 cores, 0.07 ms so). The same operations per pixel as flow_upsample, bit for bit;
// a block cut by the right border stores its pixels one by one.
inline float4 flow_splat4(float2 v) { return (float4)(v, v); }
inline float8 flow_splat8(float2 v) { return (float8)(v, v, v, v); }
inline float16 flow_splat16(float2 v) { return (float16)(v, v, v, v, v, v, v, v); }
#define FLOW_COLUMNS4 ((float4)(0.0f, 0.0f, 1.0f, 1.0f))
#define FLOW_COLUMNS8 ((float8)(0.0f, 0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 3.0f, 3.0f))
#define FLOW_COLUMNS16 ((float16)(0.0f, 0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 3.0f, 3.0f, \
                                  4.0f, 4.0f, 5.0f, 5.0f, 6.0f, 6.0f, 7.0f, 7.0f))

// The F x F block of fine pixels of coarse pixel c from its taps: c00 its own value, c10 the
// right neighbour's, c01 the lower, c11 the diagonal (clamped at the border); flow_upsample_byF
// reads them from the coarse field, dis_densify_upsample_byF from its work-group's tile.
#define FLOW_UPSAMPLE_BY(F, N)                                                                    \
inline void flow_block_by##F(float2 c00, float2 c10, float2 c01, float2 c11, int2 c,              \
                             __global float2* fine, const int fw, const int fh)                   \
{                                                                                                 \
    const float step = 1.0f / (float)F, scale = (float)F;                                         \
    const float##N tx = FLOW_COLUMNS##N * step;                                                   \
    const float##N top = flow_splat##N(c00) * (1.0f - tx) + flow_splat##N(c10) * tx;              \
    const float##N bottom = flow_splat##N(c01) * (1.0f - tx) + flow_splat##N(c11) * tx;           \
    const int x = c.x * F;                                                                        \
    for (int b = 0; b < F; ++b) {                                                                 \
        const int y = c.y * F + b;                                                                \
        const float ty = (float)b * step;                                                         \
        const float##N v = scale * (top * (1.0f - ty) + bottom * ty);                             \
        __global float* row = (__global float*)(fine + (size_t)y * fw + x);                       \
        if (y >= fh)                                                                              \
            break;                                                                                \
        if (x + F <= fw) {                                                                        \
            vstore##N(v, 0, row);                                                                 \
        } else {                                                                                  \
            float lanes[N];                                                                       \
            vstore##N(v, 0, lanes);                                                               \
            for (int a = 0; x + a < fw; ++a)                                                      \
                vstore2(vload2(a, lanes), 0, row + 2 * a);                                        \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
__kernel void flow_upsample_by##F(__global const float2* coarse, const int cw, const int ch,      \
                                  __global float2* fine, const int fw, const int fh,              \
                                  const int factor)                                               \
{                                                                                                 \
    const int2 c = item_pixel(cw, ch);                                                            \
    const int x1 = c.x + 1 < cw ? c.x + 1 : cw - 1, y1 = c.y + 1 < ch ? c.y + 1 : ch - 1;         \
    flow_block_by##F(coarse[c.y * cw + c.x], coarse[c.y * cw + x1], coarse[y1 * cw + c.x],        \
                     coarse[y1 * cw + x1], c, fine, fw, fh);                                      \
}
FLOW_UPSAMPLE_BY(2, 4)
FLOW_UPSAMPLE_BY(4, 8)
FLOW_UPSAMPLE_BY(8, 16)
