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
NumPy reference of the remap kernel (kernels/camera/rectify.cl).

It works operation for operation in float32, so the device result can be checked bit for bit.

It follows cv2.remap of OpenCV 5 with float maps and BORDER_CONSTANT: nearest at rint (half to
even), linear as two lerps at the exact coordinate, cubic with Keys' a = -0.75 at the exact
coordinate, neighbours outside the image read ``border``, integer results rounded half to even
and saturated.
"""
from __future__ import annotations

import numpy as np

FAR_OUTSIDE = 4.0  # the kernel's FAR_OUTSIDE: farther coordinates read only the border


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    a = np.float32(-0.75)
    one = np.float32(1)
    c0 = ((a * (t + one) - 5 * a) * (t + one) + 8 * a) * (t + one) - 4 * a
    c1 = ((a + 2) * t - (a + 3)) * t * t + one
    c2 = ((a + 2) * (one - t) - (a + 3)) * (one - t) * (one - t) + one
    return [c0, c1, c2, one - c0 - c1 - c2]


def remap_reference(image: np.ndarray, map_x: np.ndarray, map_y: np.ndarray,
                    interpolation: str, border: float = 0.0) -> np.ndarray:
    """
    Sample ``image`` at the float32 maps, in the image's dtype.

    ``image`` is HxW or HxWxC; uint8, uint16 or float32.
    """
    pixels = image.astype(np.float32)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width = pixels.shape[:2]
    sx, sy = map_x.astype(np.float32), map_y.astype(np.float32)
    near = ((sx > -FAR_OUTSIDE) & (sx < width + FAR_OUTSIDE)
            & (sy > -FAR_OUTSIDE) & (sy < height + FAR_OUTSIDE))
    sx, sy = np.where(near, sx, 0), np.where(near, sy, 0)
    fill = np.float32(border)

    def at(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
        inside = near & (ix >= 0) & (iy >= 0) & (ix < width) & (iy < height)
        found = pixels[np.clip(iy, 0, height - 1), np.clip(ix, 0, width - 1)]
        return np.where(inside[..., None], found, fill)

    if interpolation == 'nearest':
        value = at(np.rint(sx).astype(np.int64), np.rint(sy).astype(np.int64))
    else:
        fx0, fy0 = np.floor(sx), np.floor(sy)
        ix, iy = fx0.astype(np.int64), fy0.astype(np.int64)
        tx, ty = (sx - fx0)[..., None], (sy - fy0)[..., None]
        if interpolation == 'linear':
            p00, p01 = at(ix, iy), at(ix + 1, iy)
            p10, p11 = at(ix, iy + 1), at(ix + 1, iy + 1)
            v0 = p00 + tx * (p01 - p00)
            v1 = p10 + tx * (p11 - p10)
            value = v0 + ty * (v1 - v0)
        elif interpolation == 'cubic':
            wx, wy = _cubic_weights(tx), _cubic_weights(ty)
            rows = []
            for r in range(4):
                taps = [at(ix + k - 1, iy + r - 1) for k in range(4)]
                rows.append(wx[0] * taps[0] + wx[1] * taps[1] + wx[2] * taps[2] + wx[3] * taps[3])
            value = wy[0] * rows[0] + wy[1] * rows[1] + wy[2] * rows[2] + wy[3] * rows[3]
        else:
            raise ValueError(f'unknown interpolation {interpolation!r}')
    value = np.where(near[..., None], value, fill).reshape(map_x.shape + image.shape[2:])
    if image.dtype == np.float32:
        return value
    top = np.iinfo(image.dtype).max
    return np.rint(np.clip(np.nan_to_num(value, nan=0.0), 0, top)).astype(image.dtype)
