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

// SURF on the device: what the programs that read the integral image share. Built first, before
// kernels/surf/detector.cl or kernels/surf/describe.cl. Semantics follow OpenCV's surf.cpp
// (opencv_contrib, xfeatures2d); the module docstrings of cl_vision_nodes/surf/*.py list where and
// why this code deviates.
//
// Contraction into fma is off so that the detector's float arithmetic (responses, the Newton
// step, orientation sample positions and fastAtan2) rounds like OpenCV's C++ code, which has no
// fma either. With the filter weights divided on the host, the responses are OpenCV's bit for
// bit on PoCL and on NVIDIA (test_surf_kernels checks them against the NumPy reference).
#pragma OPENCL FP_CONTRACT OFF

// Keypoint record: KP_FIELDS floats (x, y, size, angle, response, octave, laplacian, valid at
// indices KP_X ... KP_VALID), then the descriptor (64 or 128 floats); `kp_stride` arguments give
// the record length. The layout is defined once, by RECORD_FIELDS in cl_vision_nodes/surf/
// keypoints.py, which passes it as build defines.
#if !defined(KP_FIELDS) || !defined(KP_X) || !defined(KP_Y) || !defined(KP_SIZE) \
    || !defined(KP_ANGLE) || !defined(KP_RESPONSE) || !defined(KP_OCTAVE) \
    || !defined(KP_LAPLACIAN) || !defined(KP_VALID)
#error "surf/common.cl: build with surf.keypoints.record_defines() (the keypoint record layout)"
#endif

// Box sums on the integral image. Differences of uint32 wrap exactly, so a box sum is exact even
// where the corner values themselves exceed 2^24 (where float would round).
inline int box_sum(__global const uint* integ, const size_t stride, int top, int left,
                   int bottom, int right)
{
    return (int)(integ[bottom * stride + right] - integ[top * stride + right]
                 - integ[bottom * stride + left] + integ[top * stride + left]);
}
