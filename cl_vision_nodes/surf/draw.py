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

"""Keypoints drawn on their frame: circles of the keypoint size with a radius at the angle."""
from __future__ import annotations

from cl_vision_nodes.surf.keypoints import Keypoints
import cv2
import numpy as np

POSITIVE_LAPLACIAN, NEGATIVE_LAPLACIAN = (0, 255, 0), (0, 128, 255)  # BGR: bright / dark blobs


def draw_keypoints(gray: np.ndarray, keypoints: Keypoints) -> np.ndarray:
    """Draw every keypoint on a bgr8 picture of ``gray`` (HxW, 0..255)."""
    canvas = cv2.cvtColor(np.clip(gray, 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
    radius = keypoints.size / 2
    angle = np.radians(keypoints.angle)
    tips = np.stack([keypoints.x + radius * np.cos(angle),
                     keypoints.y + radius * np.sin(angle)], axis=1)
    for (x, y), r, tip, sign in zip(keypoints.points, radius, tips, keypoints.laplacian):
        colour = POSITIVE_LAPLACIAN if sign > 0 else NEGATIVE_LAPLACIAN
        centre = (int(round(x)), int(round(y)))
        cv2.circle(canvas, centre, max(int(round(r)), 1), colour, 1, cv2.LINE_AA)
        cv2.line(canvas, centre, (int(round(tip[0])), int(round(tip[1]))), colour, 1,
                 cv2.LINE_AA)
    return canvas
