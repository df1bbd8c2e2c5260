# Copyright 2026 cl_vision_nodes maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Orientation and descriptors on the device, one work-group per keypoint.

Orientation is OpenCV's (``SURFInvoker`` in surf.cpp) operation for operation: the 113 points
(i, j), i^2 + j^2 <= 36, scaled by s = 1.2 size / 9, Haar wavelets of side 2 cvRound(2 s) on the
integral image weighted by the product of two ``getGaussianKernel(13, 2.5)`` taps, angles by
OpenCV's fastAtan2 rounded to degrees, a 60-degree window slid in 5-degree steps, the first
longest sum wins, angle = fastAtan2(-sum_y, sum_x) in degrees. Keypoints whose wavelet exceeds
the image or that get no sample inside it are dropped, as OpenCV drops them. The angles are
OpenCV's bit for bit where float division is correctly rounded (PoCL); OpenCL lets a GPU round
a quotient within 2.5 ulp (NVIDIA's), which can move a sample angle across a rounding boundary
in rare cases (the fidelity figures are the same on an H200). ``upright``:
angle 270 (OpenCV's ``360 - 90``), and the descriptor is taken on the grid at 270 degrees,
which is OpenCV's upright window.

Descriptor: OpenCV's layout (a window of int(21 s) pixels rotated to the angle, reduced to 21x21
cells; 2x2 cell differences dx, dy weighted by a 20x20 Gaussian of sigma 3.3 cells; per 4x4
subregion of 5x5 samples sum dx, sum dy, sum |dx|, sum |dy|, or the 8 sign-split sums when
``extended``; L2-normalised with OpenCV's + FLT_EPSILON). Deviation: OpenCV samples the rotated
window pixel by pixel with bilinear interpolation (rounded to uint8) and shrinks it with
``INTER_AREA``; here each cell is the exact mean of the image over an axis-aligned square of the
cell's side around the rotated cell centre, from 16 integral-image reads. It costs 441 cell
means per keypoint instead of int(21 s)^2 pixel samples (up to 500k at the largest scales),
keeps the anti-aliasing of the area reduction, and is exactly invariant to rotations by
multiples of 90 degrees. Descriptors are therefore not OpenCV's value for value (neither are
those of OpenCV's own CUDA/OpenCL SURF, whose tests accept 60 % agreement with the CPU one).
Near the border a cell square is shifted inside the image, where OpenCV replicates the border
pixels.
"""
from __future__ import annotations

from cl_vision_nodes.errors import DeviceError
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.keypoints import KP_FIELDS, record_defines
import numpy as np
import pyopencl as cl

KERNELS = ('surf/common.cl', 'surf/describe.cl')
ORI_WG = 128
"""Preferred orientation work-group (one per keypoint, work-items stride over the samples)."""
DESC_WG = 64
"""Exactly 64: 4 work-items per subregion of the descriptor's 4x4 grid (every device we support
allows 64 work-items per group)."""
ORI_SAMPLES = 113
"""Integer points (i, j) with i^2 + j^2 <= 6^2: OpenCV's orientation samples."""
ORI_RADIUS = 6
ORI_SIGMA = 2.5
DESC_SIGMA = 3.3
PATCH_SZ = 20


def gaussian_kernel(size: int, sigma: float) -> np.ndarray:
    """
    Return the sampled Gaussian of ``size`` taps, computed in float64, sum 1, as float32.

    This equals ``cv2.getGaussianKernel(size, sigma, CV_32F)`` for odd sizes (the 13-tap
    orientation weights). For even sizes (the 20-tap descriptor weights) OpenCV's bit-exact
    kernel differs by up to 1e-3 (it treats the two middle taps as if at offset 0, opencv issue
    15856); this is the true Gaussian, as the NumPy reference (test/oracles/surf.py) is.
    """
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2
    taps = np.exp(-x * x / (2 * sigma * sigma))
    return (taps / taps.sum()).astype(np.float32)


def orientation_samples() -> np.ndarray:
    """ORI_SAMPLES x 4 float32 (i, j, weight, 0) in OpenCV's order (i outer, j inner)."""
    taps = gaussian_kernel(2 * ORI_RADIUS + 1, ORI_SIGMA)
    rows = [(i, j, taps[i + ORI_RADIUS] * taps[j + ORI_RADIUS], 0.0)
            for i in range(-ORI_RADIUS, ORI_RADIUS + 1)
            for j in range(-ORI_RADIUS, ORI_RADIUS + 1) if i * i + j * j <= ORI_RADIUS ** 2]
    table = np.array(rows, np.float32)
    assert len(table) == ORI_SAMPLES
    return table


def descriptor_weights() -> np.ndarray:
    """PATCH_SZ x PATCH_SZ float32 Gaussian (OpenCV's ``DW``), row-major."""
    taps = gaussian_kernel(PATCH_SZ, DESC_SIGMA)
    return np.outer(taps, taps).astype(np.float32)


class Describer:
    """
    Enqueues orientation and descriptors for a device keypoint list (kernels/surf/describe.cl).

    The constant sample and weight tables are uploaded once, here.
    """

    def __init__(self, runtime: ClRuntime):
        if not runtime.limits.fits((DESC_WG,)):
            raise DeviceError(f'SURF descriptors need work-groups of {DESC_WG} work-items; '
                              f'{runtime.entry.name} allows {runtime.limits.max_group}')
        self.ori_group = runtime.limits.group(ORI_WG)
        program = runtime.program(KERNELS, {**record_defines(), 'ORI_WG': self.ori_group,
                                            'ORI_SAMPLES': ORI_SAMPLES, 'DESC_WG': DESC_WG,
                                            'PATCH_SZ': PATCH_SZ})
        self._orientation = program.kernel('orientation')
        self._descriptor = program.kernel('descriptor')
        self._samples = runtime.constant(orientation_samples())
        self._weights = runtime.constant(descriptor_weights())

    def describe(self, integ: cl.Buffer, height: int, width: int, keypoints: cl.Buffer,
                 count: int, upright: bool, extended: bool) -> None:
        """
        Write angle, validity and descriptor into the first ``count`` records of ``keypoints``.

        Each record holds KP_FIELDS + 64 or 128 floats.
        """
        stride = np.int32(KP_FIELDS + (128 if extended else 64))
        w, h = np.int32(width), np.int32(height)
        self._orientation((count * self.ori_group,),
                          (integ, w, h, keypoints, stride, self._samples, np.int32(upright)),
                          'orientation', (self.ori_group,))
        self._descriptor((count * DESC_WG,),
                         (integ, w, h, keypoints, stride, self._weights, np.int32(extended)),
                         'descriptor', (DESC_WG,))
