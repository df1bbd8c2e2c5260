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

"""NumPy references of the stereo kernels the tests check them against (no device)."""
from __future__ import annotations

import numpy as np


def valid_window(disparity: np.ndarray, invalid_below: float) -> tuple[int, int, int, int]:
    """(x_offset, y_offset, width, height) of the smallest box holding every valid pixel."""
    valid = disparity >= invalid_below
    rows, cols = np.flatnonzero(valid.any(axis=1)), np.flatnonzero(valid.any(axis=0))
    if rows.size == 0:
        return 0, 0, 0, 0
    return int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


def disparity_image(disparity: np.ndarray, scale: float,
                    min_disparity: float) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """Return the pixels and valid window of DisparityImageMaker.make, computed on the host."""
    pixels = disparity.astype(np.float32) * np.float32(scale)
    valid = pixels >= np.float32(min_disparity)
    pixels[~valid] = np.float32(min_disparity) - np.float32(1.0)
    return pixels, valid_window(pixels, min_disparity)
