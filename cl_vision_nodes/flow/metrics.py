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
Optical-flow error measures of the Middlebury benchmark (Baker et al. 2011).

NaN policy: a pixel is scored when the ground truth is known (finite, and inside the optional
mask) AND the estimate is finite. EPE and AAE are means over scored pixels; ``density`` (scored
/ known) reports how much of the known flow the estimate covers, so a method that leaves
unconfident pixels NaN (lk) is judged on both numbers, never on a silently filled field.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FlowErrors:
    epe: float
    """Mean end-point error, pixels."""
    aae: float
    """Mean angular error (Barron: angle between (u, v, 1) and (ug, vg, 1)), degrees."""
    density: float
    """Fraction of known ground-truth pixels that the estimate covers (finite)."""
    scored: int
    """Number of pixels in the means."""


def endpoint_error(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per-pixel |estimate - truth| of HxWx2 fields (NaN where either is NaN)."""
    diff = estimate.astype(np.float64) - truth.astype(np.float64)
    return np.sqrt(np.sum(diff * diff, axis=2))


def angular_error(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per-pixel Barron angular error in degrees (NaN where either is NaN)."""
    u, v = estimate[..., 0].astype(np.float64), estimate[..., 1].astype(np.float64)
    ug, vg = truth[..., 0].astype(np.float64), truth[..., 1].astype(np.float64)
    cosine = (u * ug + v * vg + 1.0) / np.sqrt((u * u + v * v + 1.0) * (ug * ug + vg * vg + 1.0))
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))


def flow_errors(estimate: np.ndarray, truth: np.ndarray,
                mask: np.ndarray | None = None) -> FlowErrors:
    """EPE, AAE and density of ``estimate`` against ``truth`` (both HxWx2, NaN = unknown)."""
    if estimate.shape != truth.shape or estimate.ndim != 3 or estimate.shape[2] != 2:
        raise ValueError(f'flow fields must both be HxWx2, got {estimate.shape} and {truth.shape}')
    known = np.isfinite(truth).all(axis=2)
    if mask is not None:
        known &= mask
    scored = known & np.isfinite(estimate).all(axis=2)
    count = int(scored.sum())
    if count == 0:
        return FlowErrors(float('nan'), float('nan'), 0.0, 0)
    return FlowErrors(epe=float(endpoint_error(estimate, truth)[scored].mean()),
                      aae=float(angular_error(estimate, truth)[scored].mean()),
                      density=count / int(known.sum()), scored=count)
