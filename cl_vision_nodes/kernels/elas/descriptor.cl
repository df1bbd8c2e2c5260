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

// Stage "descriptor" (elas/descriptor.py): libelas' 3x3 Sobel (filter::sobel3x3) and the
// 16-byte descriptor per pixel.

// Gray 0..255 float -> libelas' 8-bit input: round half to even and saturate, the semantics of
// the image program's gray_to_mono8 (exact for mono8 input), but with operators only: PoCL
// calls convert_uchar_sat_rte per pixel, four times slower.
__kernel void elas_gray_u8(__global const float* gray, const int count, __global uchar* out)
{
    const int i = get_global_id(0);
    if (i >= count)
        return;
    const float g = gray[i];
    const float c = g > 0.0f ? (g < 255.0f ? g : 255.0f) : 0.0f;  // NaN -> 0
    const int q = (int)(c + 0.5f);
    out[i] = (uchar)(((float)q - c == 0.5f && (q & 1)) ? q - 1 : q);
}

inline uchar sat_u8(int x) { return (uchar)(x < 0 ? 0 : (x > 255 ? 255 : x)); }

// du = ((s(x-1) - s(x+1)) >> 2) + 128 with s = [1 2 1] down the column; dv = ([1 2 1] along the
// row of (top - bottom)) >> 2, + 128; both saturated to 0..255 (filter::sobel3x3; the shift is
// an arithmetic one, i.e. floor division by 4, written for a positive operand). Rows 0 and
// H-1 and columns 0 and W-1 are never read by a descriptor and are set to 128. Reads are
// clamped instead of branching around the border, so PoCL vectorises the kernel.
__kernel void elas_sobel(__global const uchar* img, const int W, const int H,
                         __global uchar* du, __global uchar* dv)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= W || y >= H)
        return;
    const int xl = x > 0 ? x - 1 : x, xr = x < W - 1 ? x + 1 : x;
    __global const uchar* up = img + (y > 0 ? y - 1 : y) * W;
    __global const uchar* mid = img + y * W;
    __global const uchar* down = img + (y < H - 1 ? y + 1 : y) * W;
    const int ul = up[xl], uc = up[x], ur = up[xr];
    const int ml = mid[xl], mr = mid[xr];
    const int dl = down[xl], dc = down[x], dr = down[xr];
    const int sl = ul + 2 * ml + dl, sr = ur + 2 * mr + dr;
    const int t = (ul - dl) + 2 * (uc - dc) + (ur - dr);
    const bool inside = x >= 1 && y >= 1 && x <= W - 2 && y <= H - 2;
    const int i = y * W + x;
    du[i] = inside ? sat_u8(((sl - sr + 1024) >> 2) - 256 + 128) : (uchar)128;
    dv[i] = inside ? sat_u8(((t + 1024) >> 2) - 256 + 128) : (uchar)128;
}

// Descriptor of (u, v): 12 du and 4 dv samples around the pixel (descriptor.cpp). Defined for
// u in [3, W-4], v in [3, H-4] (with subsampling only even v >= 4); zero elsewhere, which is what
// libelas' uninitialised buffer holds on its first call (the dense matcher reads there).
__kernel void elas_descriptor(__global const uchar* du, __global const uchar* dv, const int W,
                              const int H, const int subsampling, __global uchar16* desc)
{
    const int u = get_global_id(0);
    const int v = get_global_id(1);
    if (u >= W || v >= H)
        return;
    const bool rows_ok = subsampling ? (v >= 4 && v < H - 3 && (v & 1) == 0)
                                     : (v >= 3 && v < H - 3);
    if (!rows_ok || u < 3 || u >= W - 3) {
        desc[v * W + u] = (uchar16)0;
        return;
    }
    __global const uchar* a = du + v * W + u;
    __global const uchar* b = dv + v * W + u;
    uchar16 d;
    d.s0 = a[-2 * W];
    d.s1 = a[-W - 2];
    d.s2 = a[-W];
    d.s3 = a[-W + 2];
    d.s4 = a[-1];
    d.s5 = a[0];
    d.s6 = a[0];
    d.s7 = a[1];
    d.s8 = a[W - 2];
    d.s9 = a[W];
    d.sa = a[W + 2];
    d.sb = a[2 * W];
    d.sc = b[-W];
    d.sd = b[-1];
    d.se = b[1];
    d.sf = b[W];
    desc[v * W + u] = d;
}
