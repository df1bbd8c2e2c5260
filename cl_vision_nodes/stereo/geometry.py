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
The geometry of a rectified stereo pair, as stereo_image_proc's StereoCameraModel reads it.

From the left and right projection matrices P (3x4) of a calibrated, rectified pair:
``f`` = P_left[0,0], baseline ``T`` = -P_right[0,3] / P_right[0,0] (metres), the principal
points of both cameras. A disparity ``d`` (pixels, ``x_R = x_L - d``) lies at depth
``Z = fx * T / (d - (cx_left - cx_right))``; the point, in the frame of the left rectified
camera, is ``X = (u - cx) * Z / fx``, ``Y = (v - cy) * Z / fy``. Like image_geometry, the left
P's own translation is ignored (ROS puts the left camera at the origin: its Tx is 0).
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.camera.calibration import CalibrationError
import numpy as np


def _projection(matrix: np.ndarray | list[float], side: str) -> np.ndarray:
    p = np.asarray(matrix, dtype=np.float64)
    if p.size != 12:
        raise CalibrationError(f'{side} projection matrix P has {p.size} values; expected 3x4')
    p = p.reshape(3, 4)
    if not np.isfinite(p).all():
        raise CalibrationError(f'{side} projection matrix P is not finite ({p.tolist()})')
    if p[0, 0] <= 0 or p[1, 1] <= 0:
        raise CalibrationError(f'{side} projection matrix P has fx = {p[0, 0]:g}, fy = '
                               f'{p[1, 1]:g}; expected positive focal lengths (is the camera '
                               'calibrated and rectified?)')
    return p


@dataclass(frozen=True)
class StereoGeometry:
    """Focal lengths and principal points (pixels) and the baseline (metres) of a pair."""

    fx: float
    fy: float
    cx: float
    cy: float
    cx_right: float
    baseline: float

    @classmethod
    def from_projections(cls, p_left: np.ndarray | list[float],
                         p_right: np.ndarray | list[float]) -> StereoGeometry:
        """
        Return the geometry of a pair from its two P matrices (3x4, or CameraInfo's 12 values).

        CalibrationError for a non-finite P, a focal length <= 0 or a baseline <= 0 (a right P
        without translation, or a swapped pair: ELAS searches ``x_R = x_L - d``, d >= 0).
        """
        left, right = _projection(p_left, 'left'), _projection(p_right, 'right')
        if right[0, 3] == 0:
            raise CalibrationError('right projection matrix P has Tx = 0: no baseline (the '
                                   'right camera of a rectified pair has Tx = -fx * T)')
        baseline = -right[0, 3] / right[0, 0]
        if baseline < 0:
            raise CalibrationError(
                f'right projection matrix P has Tx = {right[0, 3]:g}, baseline T = '
                f'-Tx/fx = {baseline:g} m; expected T > 0 (the right camera of a rectified '
                'pair; are left and right swapped?)')
        return cls(fx=float(left[0, 0]), fy=float(left[1, 1]), cx=float(left[0, 2]),
                   cy=float(left[1, 2]), cx_right=float(right[0, 2]), baseline=float(baseline))

    @property
    def delta_cx(self) -> float:
        """cx_left - cx_right: the disparity of a point at infinity."""
        return self.cx - self.cx_right

    def scaled(self, factor: float) -> StereoGeometry:
        """
        Return the geometry of the images resized by ``factor`` about pixel (0, 0).

        Pixel (i, j) of the new image is pixel (i / factor, j / factor) of the old one (ELAS
        ``subsampling``: 0.5). The baseline does not change.
        """
        return StereoGeometry(fx=self.fx * factor, fy=self.fy * factor, cx=self.cx * factor,
                              cy=self.cy * factor, cx_right=self.cx_right * factor,
                              baseline=self.baseline)

    def q_matrix(self) -> np.ndarray:
        """
        Return the 4x4 reprojection matrix of image_geometry's StereoCameraModel.

        It is OpenCV stereoRectify's Q times fy * Tx, so fx != fy is handled: ``[X Y Z W]' = Q [u v
        d 1]'``, what ``cv2.reprojectImageTo3D`` takes.
        """
        tx = -self.baseline
        q = np.zeros((4, 4))
        q[0, 0] = self.fy * tx
        q[0, 3] = -self.fy * self.cx * tx
        q[1, 1] = self.fx * tx
        q[1, 3] = -self.fx * self.cy * tx
        q[2, 3] = self.fx * self.fy * tx
        q[3, 2] = -self.fy
        q[3, 3] = self.fy * self.delta_cx
        return q
