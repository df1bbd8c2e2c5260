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

// Coarse-to-fine prolongation: fine pixel (x, y) lies at coarse (x/2, y/2) (see pyr_down);
// bilinear, and the vectors double with the pixel size.
__kernel void flow_upsample(__global const float2* coarse, const int cw, const int ch,
                            __global float2* fine, const int fw, const int fh)
{
    const int2 p = item_pixel(fw, fh);
    fine[(size_t)p.y * fw + p.x] = 2.0f * bilinear2(coarse, cw, ch, 0.5f * p.x, 0.5f * p.y);
}
