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
Disparity error measures: KITTI 2015's D1 and the Middlebury bad-N pixel rate.

One validity rule for every caller (``cl-vision eval``, the accuracy tests, benchmarks):

- Ground truth is known where it is finite. The readers in ``dataio.formats`` turn the 0 that
  KITTI and Middlebury PNGs store for "unknown" into NaN; a caller scores a region (e.g. a
  non-occlusion mask) by setting the truth outside it to NaN.
- An estimate is valid where it is finite and ``>= min_disparity``: stereo_msgs/DisparityImage
  marks invalid pixels by values below its ``min_disparity``, and every producer complies with
  the default range 0..: ElasMatcher writes -1, libelas -10, OpenCV's SGBM -1, a PFM inf. So a
  map is scored the same from a node's message (its ``min_disparity``) and from the library.

Each measure gives three numbers over the known pixels, so that density cannot be traded for
accuracy unnoticed: ``all`` (an invalid estimate counts as an error), ``est`` (errors among the
valid estimates only, as libelas' own figures) and ``density`` (share with a valid estimate).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KITTI_D1_PIXELS = 3.0
KITTI_D1_RELATIVE = 0.05


@dataclass(frozen=True)
class DisparityErrors:
    all: float  # noqa: A003 (KITTI's D1-all, a field only)
    """Share of known pixels whose estimate is an outlier or invalid."""
    est: float
    """Share of the valid estimates that are outliers (NaN without any valid estimate)."""
    density: float
    """Share of known pixels with a valid estimate."""
    scored: int
    """Number of known pixels."""


def valid_disparity(estimate: np.ndarray, min_disparity: float = 0.0) -> np.ndarray:
    """Where ``estimate`` holds a disparity: finite and not below ``min_disparity``."""
    return np.isfinite(estimate) & (estimate >= min_disparity)


def d1_errors(estimate: np.ndarray, truth: np.ndarray,
              min_disparity: float = 0.0) -> DisparityErrors:
    """KITTI 2015's D1: an outlier is off by more than 3 px AND more than 5 % of the truth."""
    return _error_rates(estimate, truth, KITTI_D1_PIXELS, KITTI_D1_RELATIVE, min_disparity)


def bad_pixel_errors(estimate: np.ndarray, truth: np.ndarray, pixels: float,
                     min_disparity: float = 0.0) -> DisparityErrors:
    """Middlebury's bad-N: an outlier is off by more than ``pixels``."""
    return _error_rates(estimate, truth, pixels, 0.0, min_disparity)


def _error_rates(estimate: np.ndarray, truth: np.ndarray, pixels: float, relative: float,
                 min_disparity: float) -> DisparityErrors:
    if estimate.shape != truth.shape or estimate.ndim != 2:
        raise ValueError(f'disparity maps must both be HxW, got {estimate.shape} and '
                         f'{truth.shape}')
    known = np.isfinite(truth)
    est, gt = estimate[known].astype(np.float64), truth[known].astype(np.float64)
    valid = valid_disparity(est, min_disparity)
    error = np.abs(est[valid] - gt[valid])
    outliers = int(np.count_nonzero((error > pixels) & (error > relative * gt[valid])))
    scored, estimated = gt.size, int(np.count_nonzero(valid))
    if scored == 0:
        return DisparityErrors(float('nan'), float('nan'), 0.0, 0)
    return DisparityErrors(all=(outliers + scored - estimated) / scored,
                           est=outliers / estimated if estimated else float('nan'),
                           density=estimated / scored, scored=scored)
