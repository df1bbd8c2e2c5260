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

"""Disparity maps as pictures: a jet colour map over [min, max], invalid pixels black."""
from __future__ import annotations

import cv2
import numpy as np


def disparity_to_color(disparity: np.ndarray, d_min: float, d_max: float) -> np.ndarray:
    """bgr8 HxWx3 picture; pixels below ``d_min`` or not finite (invalid) are black."""
    valid = np.isfinite(disparity) & (disparity >= d_min)
    scale = 255.0 / max(d_max - d_min, 1e-6)
    levels = np.clip((np.where(valid, disparity, d_min) - d_min) * scale, 0, 255)
    picture = cv2.applyColorMap(levels.astype(np.uint8), cv2.COLORMAP_JET)
    picture[~valid] = 0
    return picture
