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
