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
A camera's calibration (sensor_msgs/CameraInfo's K, D, R, P) without ROS, checked once.

Two sources build it: the fields of a CameraInfo message (``CameraCalibration.from_fields``, what
the ROS layer calls) and the calibration YAML that ROS camera drivers store
(``read_calibration_yaml``, camera_calibration_parsers' layout), so a node and the CLI rectify
with the same numbers. Everything the rectification maps need is validated here, so a bad
calibration is one clear error before any map or kernel work.

Distortion models (sensor_msgs/distortion_models.hpp) and the coefficients each uses:
``plumb_bob`` k1 k2 p1 p2 k3, ``rational_polynomial`` k1 k2 p1 p2 k3 k4 k5 k6 (OpenCV's
``initUndistortRectifyMap``) and ``equidistant`` k1 k2 k3 k4 (``cv::fisheye``). A shorter D is
padded with zeros; ``none`` (or an empty model name) means no distortion and an empty or all-zero
D. Calibrations compare by value: a node rebuilds its maps only when the numbers change.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
from typing import Any, Sequence

from cl_vision_nodes.errors import DataFormatError
import numpy as np
import yaml

PLUMB_BOB = 'plumb_bob'
RATIONAL_POLYNOMIAL = 'rational_polynomial'
EQUIDISTANT = 'equidistant'
NO_DISTORTION = 'none'
COEFFICIENTS: dict[str, int] = {PLUMB_BOB: 5, RATIONAL_POLYNOMIAL: 8, EQUIDISTANT: 4,
                                NO_DISTORTION: 0}
"""Distortion coefficients each model uses (D is padded with zeros to this length)."""


class CalibrationError(DataFormatError):
    """A calibration that cannot rectify: unknown model, non-finite or singular matrices."""


def _matrix(name: str, values: Any, shape: tuple[int, int]) -> np.ndarray:
    """``values`` (a flat sequence, as in CameraInfo) as a read-only float64 matrix."""
    try:
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise CalibrationError(f'{name} must be numbers, got {values!r}') from None
    count = shape[0] * shape[1]
    if flat.size != count:
        raise CalibrationError(f'{name} has {flat.size} values; expected {count} '
                               f'({shape[0]}x{shape[1]})')
    if not np.isfinite(flat).all():
        raise CalibrationError(f'{name} has non-finite values: {flat.tolist()}')
    matrix = flat.reshape(shape)
    matrix.setflags(write=False)
    return matrix


def _distortion(model: str, d: Sequence[float]) -> tuple[str, np.ndarray]:
    """Return the canonical model name and D padded to the model's coefficient count."""
    name = model.strip() or NO_DISTORTION
    if name not in COEFFICIENTS:
        raise CalibrationError(f'unsupported distortion model {model!r}; expected '
                               f'{", ".join(COEFFICIENTS)}')
    count = COEFFICIENTS[name]
    try:
        coeffs = np.asarray(d, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise CalibrationError(f'D must be numbers, got {d!r}') from None
    if not np.isfinite(coeffs).all():
        raise CalibrationError(f'D has non-finite values: {coeffs.tolist()}')
    if coeffs.size > count and coeffs[count:].any():
        raise CalibrationError(f'distortion model {name} uses {count} coefficients; D '
                               f'{coeffs.tolist()} has non-zero ones beyond them')
    padded = np.zeros(count)
    padded[:min(count, coeffs.size)] = coeffs[:count]
    padded.setflags(write=False)
    return name, padded


@dataclass(frozen=True, eq=False)
class CameraCalibration:
    """
    K (3x3), D (the model's coefficients), R (3x3) and P (3x4) of one camera and image size.

    Built only through ``from_fields`` (or ``read_calibration_yaml``), which validate: the arrays
    are float64, read-only and finite; fx, fy of K are positive; P[:, :3] @ R is invertible.
    """

    width: int
    height: int
    distortion_model: str
    D: np.ndarray
    K: np.ndarray
    R: np.ndarray
    P: np.ndarray
    camera_name: str = ''

    @classmethod
    def from_fields(cls, width: int, height: int, distortion_model: str, d: Sequence[float],
                    k: Sequence[float], r: Sequence[float], p: Sequence[float],
                    camera_name: str = '') -> CameraCalibration:
        """
        Build a calibration from CameraInfo's fields; CalibrationError names the problem.

        ``d``, ``k``, ``r`` and ``p`` are flat row-major sequences.
        """
        if isinstance(width, bool) or isinstance(height, bool) \
                or not isinstance(width, (int, np.integer)) \
                or not isinstance(height, (int, np.integer)) or width < 1 or height < 1:
            raise CalibrationError(f'image size {width!r}x{height!r}: expected positive integers')
        model, coeffs = _distortion(str(distortion_model), d)
        K = _matrix('K', k, (3, 3))
        R = _matrix('R', r, (3, 3))
        P = _matrix('P', p, (3, 4))
        if not (K[0, 0] > 0 and K[1, 1] > 0):
            raise CalibrationError(f'K has fx={K[0, 0]:g}, fy={K[1, 1]:g}; both must be > 0 '
                                   '(an all-zero K means the camera is not calibrated)')
        if not (P[0, 0] > 0 and P[1, 1] > 0):
            raise CalibrationError(f"P has fx'={P[0, 0]:g}, fy'={P[1, 1]:g}; both must be > 0")
        if np.linalg.cond(P[:, :3] @ R) > 1e12:
            raise CalibrationError('P[:, :3] @ R is singular (is R a rotation?): the '
                                   'rectified pixels cannot be mapped back to the raw image')
        return cls(int(width), int(height), model, coeffs, K, R, P, str(camera_name))

    def key(self) -> tuple:
        """
        Return the numbers of the calibration as a hashable value.

        This is what equality compares; the camera name does not change a map.
        """
        return (self.width, self.height, self.distortion_model, self.D.tobytes(),
                self.K.tobytes(), self.R.tobytes(), self.P.tobytes())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CameraCalibration):
            return NotImplemented
        return self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def describe(self) -> str:
        """One line naming the camera for messages."""
        name = f'{self.camera_name!r} ' if self.camera_name else ''
        return f'calibration {name}({self.width}x{self.height}, {self.distortion_model})'


# --- camera_calibration_parsers YAML ---------------------------------------------------------

YAML_MATRICES = {'camera_matrix': (3, 3), 'rectification_matrix': (3, 3),
                 'projection_matrix': (3, 4)}


def _yaml_matrix(path: os.PathLike[str] | str, doc: dict, key: str) -> list[float]:
    """Return the ``data`` of a ``{rows, cols, data}`` node, checked against its rows and cols."""
    node = doc.get(key)
    if not isinstance(node, dict) or not {'rows', 'cols', 'data'} <= node.keys():
        raise DataFormatError(f'{path}: {key} must be a mapping with rows, cols and data')
    rows, cols, data = node['rows'], node['cols'], node['data']
    if not isinstance(rows, int) or not isinstance(cols, int) or not isinstance(data, list):
        raise DataFormatError(f'{path}: {key} needs integer rows and cols and a data list')
    if rows * cols != len(data):
        raise DataFormatError(f'{path}: {key} is {rows}x{cols} but has {len(data)} values')
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data):
        raise DataFormatError(f'{path}: {key} data must be numbers')
    if key in YAML_MATRICES and (rows, cols) != YAML_MATRICES[key]:
        expected = 'x'.join(map(str, YAML_MATRICES[key]))
        raise DataFormatError(f'{path}: {key} is {rows}x{cols}; expected {expected}')
    return [float(v) for v in data]


def read_calibration_yaml(path: os.PathLike[str] | str) -> CameraCalibration:
    """
    Read a camera calibration YAML in camera_calibration_parsers' layout.

    That is what ``camera_calibration`` writes and camera drivers load: image_width, image_height,
    camera_name, camera_matrix, distortion_model (default plumb_bob, as the parser),
    distortion_coefficients, rectification_matrix, projection_matrix.

    DataFormatError (one line naming the file) if it is missing, not YAML, incomplete or its
    calibration is invalid.
    """
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise DataFormatError(f'{path}: no such file') from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f'{path}: cannot read ({getattr(exc, "strerror", None) or exc})') \
            from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f' at line {mark.line + 1}' if mark is not None else ''
        raise DataFormatError(f'{path}: not valid YAML{where} '
                              f'({getattr(exc, "problem", None) or "parse error"})') from None
    if not isinstance(doc, dict):
        raise DataFormatError(f'{path}: not a camera calibration (expected a YAML mapping)')
    required = ('image_width', 'image_height', 'camera_matrix', 'distortion_coefficients',
                'rectification_matrix', 'projection_matrix')
    missing = [key for key in required if key not in doc]
    if missing:
        raise DataFormatError(f'{path}: not a camera calibration, missing {", ".join(missing)}')
    model = doc.get('distortion_model', PLUMB_BOB)
    if not isinstance(model, str):
        raise DataFormatError(f'{path}: distortion_model must be a string, got {model!r}')
    try:
        return CameraCalibration.from_fields(
            doc['image_width'], doc['image_height'], model,
            _yaml_matrix(path, doc, 'distortion_coefficients'),
            _yaml_matrix(path, doc, 'camera_matrix'),
            _yaml_matrix(path, doc, 'rectification_matrix'),
            _yaml_matrix(path, doc, 'projection_matrix'),
            str(doc.get('camera_name') or ''))
    except CalibrationError as exc:
        raise DataFormatError(f'{path}: {exc}') from None
