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
Rectification maps of a calibration: for each rectified pixel, where to sample the raw image.

Computed once per calibration on the host, in float64 like OpenCV, and stored as float32: the
same numbers as ``cv2.initUndistortRectifyMap(K, D, R, P, size, CV_32FC1)`` (plumb_bob,
rational_polynomial, none) and ``cv2.fisheye.initUndistortRectifyMap`` (equidistant), with the
output size the image size and P[:, :3] the new camera matrix, as image_proc. Like OpenCV, the
skew K[0, 1] is ignored.

A rectified pixel (j, i) is taken back through (P[:, :3] R)^-1 to a ray (x, y, w) of the raw
camera, normalised (x/w, y/w), distorted by the model and projected with K's fx, fy, cx, cy.
"""
from __future__ import annotations

from cl_vision_nodes.camera.calibration import CameraCalibration, EQUIDISTANT
import numpy as np


def _rays(cal: CameraCalibration) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, w) = (P[:, :3] R)^-1 (j, i, 1) for every output pixel, HxW float64 each."""
    inverse = np.linalg.inv(cal.P[:, :3] @ cal.R)
    j = np.arange(cal.width, dtype=np.float64)[None, :]
    i = np.arange(cal.height, dtype=np.float64)[:, None]
    return tuple(i * inverse[row, 1] + inverse[row, 2] + j * inverse[row, 0]
                 for row in range(3))


def _pinhole(cal: CameraCalibration, x: np.ndarray, y: np.ndarray,
             w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Apply OpenCV's radial-tangential model: rational radial factor, then tangential terms."""
    k1, k2, p1, p2, k3, k4, k5, k6 = np.pad(cal.D, (0, 8 - cal.D.size))
    with np.errstate(divide='ignore', invalid='ignore'):
        inv_w = 1.0 / w
        x, y = x * inv_w, y * inv_w
        x2, y2 = x * x, y * y
        r2 = x2 + y2
        xy2 = 2 * x * y
        kr = (1 + ((k3 * r2 + k2) * r2 + k1) * r2) / (1 + ((k6 * r2 + k5) * r2 + k4) * r2)
        xd = x * kr + p1 * xy2 + p2 * (r2 + 2 * x2)
        yd = y * kr + p1 * (r2 + 2 * y2) + p2 * xy2
    return xd, yd


def _equidistant(cal: CameraCalibration, x: np.ndarray, y: np.ndarray,
                 w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Apply Kannala-Brandt as cv::fisheye: theta_d = theta (1 + k1 theta^2 + ... + k4 theta^8).

    Rays behind the camera (w <= 0) map to infinity, away from the image.
    """
    k1, k2, k3, k4 = cal.D
    behind = w <= 0
    with np.errstate(divide='ignore', invalid='ignore'):
        nx, ny = x / w, y / w
        r = np.sqrt(nx * nx + ny * ny)
        theta = np.arctan(r)
        t2 = theta * theta
        t4 = t2 * t2
        theta_d = theta * (1 + k1 * t2 + k2 * t4 + k3 * t4 * t2 + k4 * t4 * t4)
        scale = np.where(r == 0, 1.0, theta_d / r)
        xd, yd = nx * scale, ny * scale
    return (np.where(behind, np.where(x > 0, -np.inf, np.inf), xd),
            np.where(behind, np.where(y > 0, -np.inf, np.inf), yd))


def rectify_maps(cal: CameraCalibration) -> tuple[np.ndarray, np.ndarray]:
    """(map_x, map_y): HxW float32 raw-image coordinates of every rectified pixel."""
    x, y, w = _rays(cal)
    model = _equidistant if cal.distortion_model == EQUIDISTANT else _pinhole
    xd, yd = model(cal, x, y, w)
    fx, fy, cx, cy = cal.K[0, 0], cal.K[1, 1], cal.K[0, 2], cal.K[1, 2]
    with np.errstate(invalid='ignore', over='ignore'):
        return (fx * xd + cx).astype(np.float32), (fy * yd + cy).astype(np.float32)
