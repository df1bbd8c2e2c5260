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
Quality of the nodes' answers without ground truth, one frame (or pair of frames) at a time.

What an evaluator of a robot's bag has: the input images and the nodes' answers. Each measure
below uses only those, says which pixels it scores and reports that share as ``coverage``, so that
a method cannot look good by answering less. Images are HxW intensities (0..255), flows HxWx2
``(u, v)`` px from the first frame to the second on the first frame's grid (flow_node's
output), disparity maps HxW with ``x_R = x_L - d`` and invalid pixels below ``min_disparity``
(stereo_msgs/DisparityImage, ``elas.metrics.valid_disparity``). A mean over no pixels is NaN.

Flow (flow_node answers with forward flows only):

- Photometric error: mean |I1(p + w(p)) - I0(p)| over the pixels p with a finite estimate whose
  target lies inside I1 (bilinear samples). Occlusions and lighting changes raise it even for the
  true flow, so it is reported beside ``unwarped``, the same mean with w = 0: the share of the
  frame difference the flow explains.
- Forward-backward consistency, when a backward flow B (I1 -> I0) is at hand, e.g. computed by the
  evaluator with ``FlowEstimator.estimate(frame1, frame0)``: e(p) = |w(p) + B(p + w(p))|, zero
  for a consistent pair; mean e and the share of scored pixels with e <= ``tolerance``.

Disparity (disparity_node answers with the left map):

- Photometric left-right agreement: mean |R(x - d, y) - L(x, y)| over valid pixels whose match lies
  inside R; it rises when the right image does not show what the disparity claims.
- Left-right consistency, when a right map is at hand (``ElasMatcher.compute_both``, libelas'
  convention ``x_L = x_R + d_R``): |d_L(x) - d_R(round(x - d_L(x)))|; a valid left pixel is
  consistent when its right pixel is valid and the two differ by at most ``tolerance``.
- Density: the share of valid pixels.
- Temporal stability: mean |d_t(p) - d_t-1(p)| over the pixels where the flow from t-1 to t says
  the scene stands still (|w(p)| < ``static_px``) and both maps are valid; 0 for a steady map.

SURF (surf_node answers with keypoints and descriptors):

- Match rate: nearest-neighbour matches (L2 on descriptors, same Laplacian sign, Lowe's ratio
  test) that a RANSAC model (OpenCV's, deterministic) accepts as inliers, over min(n1, n2) as
  ``surf.evaluation``'s matching score. The fundamental matrix fits any rigid scene; the
  homography only a plane or a camera that only rotates.
- Repeatability under a correspondence field: keypoint a of frame 1 is repeated when a keypoint
  of frame 2 lies within ``position_tol`` of a + w(a) with a size within ``scale_tol`` of a's size
  times the local scale of w (``surf.evaluation``'s criteria with the flow in place of a
  homography), over min(n1, n2) of the keypoints in the common part: a where w(a) is known and
  lands inside frame 2, and those of frame 2 in the region the known flow covers. With a
  ground-truth flow (e.g. the depth-based warp of ``dataio.motorcycle``) this is the true
  repeatability of a 3-D scene; with the flow node's estimate it measures how well SURF and flow
  agree. With a homography (truth, or ``Matching.model`` fitted as one), ``surf.evaluation``'s
  ``pair_scores`` applies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cl_vision_nodes.elas.metrics import valid_disparity
from cl_vision_nodes.flow.reference import bilinear
from cl_vision_nodes.surf.evaluation import pairs_within, POSITION_TOL, SCALE_TOL
from cl_vision_nodes.surf.keypoints import Keypoints
import cv2
import numpy as np

Model = Literal['fundamental', 'homography']
RATIO = 0.8
RANSAC_THRESHOLD_PX = 1.5
MINIMAL_SAMPLE = {'fundamental': 8, 'homography': 4}
_CHUNK = 1024


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float('nan')


def _inside(x: np.ndarray, y: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    height, width = shape[:2]
    return (x >= 0) & (x <= width - 1) & (y >= 0) & (y <= height - 1)


def _grid(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    columns, rows = np.arange(shape[1], dtype=np.float64), np.arange(shape[0], dtype=np.float64)
    return np.meshgrid(columns, rows)


def _sample_known(field: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear samples of a field with NaN holes: NaN where a tap of non-zero weight is NaN."""
    known = np.isfinite(field)
    values = bilinear(np.where(known, field, 0.0).astype(np.float64), x, y)
    weight = bilinear(known.astype(np.float64), x, y)
    return np.where(weight > 1.0 - 1e-9, values, np.nan)


# --- flow --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Photometric:
    """Mean absolute intensity difference of the matched pixels, and of the same pixels unmoved."""

    error: float
    """Grey levels, over the scored pixels."""
    unwarped: float
    """The same mean without the motion: |I1(p) - I0(p)|."""
    coverage: float
    """Share of the pixels scored."""


def _photometric(reference: np.ndarray, other: np.ndarray, x: np.ndarray, y: np.ndarray,
                 scored: np.ndarray) -> Photometric:
    """Compare ``reference`` with ``other`` sampled at (x, y), over ``scored``."""
    reference, other = reference.astype(np.float64), other.astype(np.float64)
    warped = bilinear(other, np.where(scored, x, 0.0), np.where(scored, y, 0.0))
    return Photometric(_mean(np.abs(warped - reference)[scored]),
                       _mean(np.abs(other - reference)[scored]), float(scored.mean()))


def flow_photometric_error(frame0: np.ndarray, frame1: np.ndarray,
                           flow: np.ndarray) -> Photometric:
    """Score ``flow`` (frame0 -> frame1) by how well it maps frame0 onto frame1."""
    x, y = _grid(flow.shape)
    tx, ty = x + flow[..., 0], y + flow[..., 1]
    scored = np.isfinite(flow).all(axis=2) & _inside(tx, ty, flow.shape)
    return _photometric(frame0, frame1, tx, ty, scored)


@dataclass(frozen=True)
class Consistency:
    """A check of one map against another (forward-backward flow, left-right disparity)."""

    error: float
    """Mean disagreement, px, over the pixels where both maps answer."""
    consistent: float
    """Share of the pixels the first map answers that agree within the tolerance."""
    coverage: float
    """Share of the pixels where both maps answer."""


def forward_backward(forward: np.ndarray, backward: np.ndarray,
                     tolerance: float = 1.0) -> Consistency:
    """Score a forward flow (I0 -> I1) by the backward flow (I1 -> I0) at its targets."""
    x, y = _grid(forward.shape)
    tx, ty = x + forward[..., 0], y + forward[..., 1]
    answered = np.isfinite(forward).all(axis=2)
    target = answered & _inside(tx, ty, forward.shape)
    back = _sample_known(backward, np.where(target, tx, 0.0), np.where(target, ty, 0.0))
    error = np.hypot(forward[..., 0] + back[..., 0], forward[..., 1] + back[..., 1])
    both = target & np.isfinite(error)
    return Consistency(_mean(error[both]),
                       float((error[both] <= tolerance).sum() / max(answered.sum(), 1)),
                       float(both.mean()))


# --- disparity ---------------------------------------------------------------------------------


def disparity_photometric_error(left: np.ndarray, right: np.ndarray, disparity: np.ndarray,
                                min_disparity: float = 0.0) -> Photometric:
    """Score a left disparity map by how well it maps the left image onto the right one."""
    x, y = _grid(disparity.shape)
    tx = x - np.where(np.isfinite(disparity), disparity, 0.0)
    scored = valid_disparity(disparity, min_disparity) & _inside(tx, y, disparity.shape)
    return _photometric(left, right, tx, y, scored)


def left_right_consistency(left: np.ndarray, right: np.ndarray, tolerance: float = 1.0,
                           min_disparity: float = 0.0) -> Consistency:
    """Check a left map against the right map (``x_L = x_R + d_R``) at each left pixel's match."""
    x, y = _grid(left.shape)
    answered = valid_disparity(left, min_disparity)
    tx = np.rint(x - np.where(answered, left, 0.0))
    target = answered & _inside(tx, y, left.shape)
    d_right = np.where(target, right[y.astype(int), np.clip(tx, 0, left.shape[1] - 1)
                                     .astype(int)], np.nan)
    both = target & valid_disparity(d_right, min_disparity)
    error = np.abs(left - d_right)[both]
    return Consistency(_mean(error), float((error <= tolerance).sum() / max(answered.sum(), 1)),
                       float(both.mean()))


def disparity_density(disparity: np.ndarray, min_disparity: float = 0.0) -> float:
    """Share of the pixels with a valid disparity."""
    return float(valid_disparity(disparity, min_disparity).mean())


@dataclass(frozen=True)
class Stability:
    """How much a disparity map changes where the scene stands still."""

    change: float
    """Mean |d_t - d_t-1|, px, over the static pixels valid in both maps."""
    coverage: float
    """Share of the pixels that are static and valid in both maps."""


def temporal_stability(previous: np.ndarray, current: np.ndarray, flow: np.ndarray,
                       static_px: float = 0.5, min_disparity: float = 0.0) -> Stability:
    """Compare consecutive disparity maps where the flow (previous -> current) says static."""
    static = np.hypot(flow[..., 0], flow[..., 1]) < static_px  # NaN compares False
    scored = (static & valid_disparity(previous, min_disparity)
              & valid_disparity(current, min_disparity))
    return Stability(_mean(np.abs(current - previous)[scored]), float(scored.mean()))


# --- SURF --------------------------------------------------------------------------------------


def ratio_matches(kp1: Keypoints, kp2: Keypoints,
                  ratio: float = RATIO) -> tuple[np.ndarray, np.ndarray]:
    """
    Index pairs (i, j): kp2[j] is kp1[i]'s nearest neighbour and passes Lowe's ratio test.

    Only keypoints of the same Laplacian sign are compared (a bright blob never matches a dark
    one); the nearest must be closer than ``ratio`` times the second nearest.
    """
    if len(kp1) == 0 or len(kp2) < 2:
        return np.zeros(0, int), np.zeros(0, int)
    b = kp2.descriptor.astype(np.float64)
    b_sq = (b * b).sum(axis=1)
    found_i, found_j = [], []
    for start in range(0, len(kp1), _CHUNK):
        a = kp1.descriptor[start:start + _CHUNK].astype(np.float64)
        squared = np.maximum((a * a).sum(axis=1)[:, None] + b_sq[None, :] - 2 * a @ b.T, 0.0)
        squared[kp1.laplacian[start:start + _CHUNK, None] != kp2.laplacian[None, :]] = np.inf
        two = np.partition(squared, 1, axis=1)[:, :2]
        keep = np.nonzero(np.sqrt(two[:, 0]) < ratio * np.sqrt(two[:, 1]))[0]
        found_i.append(keep + start)
        found_j.append(np.argmin(squared[keep], axis=1))
    return np.concatenate(found_i), np.concatenate(found_j)


@dataclass(frozen=True)
class Matching:
    """Descriptor matches between two keypoint sets and the RANSAC inliers among them."""

    n1: int
    n2: int
    matches: int
    inliers: int
    model: np.ndarray | None
    """The fitted 3x3 matrix (img1 -> img2), None with too few matches."""

    @property
    def match_rate(self) -> float:
        """Inliers over min(n1, n2)."""
        return self.inliers / max(min(self.n1, self.n2), 1)

    @property
    def inlier_ratio(self) -> float:
        """Inliers over matches (NaN without matches)."""
        return self.inliers / self.matches if self.matches else float('nan')


def geometric_matches(kp1: Keypoints, kp2: Keypoints, model: Model = 'fundamental',
                      ratio: float = RATIO,
                      threshold_px: float = RANSAC_THRESHOLD_PX) -> Matching:
    """Match kp1 to kp2 (``ratio_matches``) and keep those a RANSAC ``model`` explains."""
    i, j = ratio_matches(kp1, kp2, ratio)
    if model not in MINIMAL_SAMPLE:
        raise ValueError(f'unknown model {model!r}; expected one of {sorted(MINIMAL_SAMPLE)}')
    fitted, inliers = None, 0
    if len(i) >= MINIMAL_SAMPLE[model]:
        p1 = kp1.points[i].astype(np.float32)
        p2 = kp2.points[j].astype(np.float32)
        if model == 'fundamental':
            fitted, mask = cv2.findFundamentalMat(p1, p2, cv2.FM_RANSAC, threshold_px, 0.999)
        else:
            fitted, mask = cv2.findHomography(p1, p2, cv2.RANSAC, threshold_px)
        if fitted is not None and fitted.shape == (3, 3):
            inliers = int(mask.sum())
        else:
            fitted = None
    return Matching(len(kp1), len(kp2), len(i), inliers, fitted)


@dataclass(frozen=True)
class Repeatability:
    """Keypoints of the common part and how many of frame 1's recur in frame 2."""

    n1: int
    n2: int
    repeated: int

    @property
    def rate(self) -> float:
        """Repeated over min(n1, n2)."""
        return self.repeated / max(min(self.n1, self.n2), 1)


def _local_scale(flow: np.ndarray) -> np.ndarray:
    """sqrt|det J| of p -> p + w(p) per pixel; 1 where w has no known neighbours to tell."""
    du_dy, du_dx = np.gradient(flow[..., 0].astype(np.float64))
    dv_dy, dv_dx = np.gradient(flow[..., 1].astype(np.float64))
    scale = np.sqrt(np.abs((1 + du_dx) * (1 + dv_dy) - du_dy * dv_dx))
    return np.where(np.isfinite(scale), scale, 1.0)


def _covered(flow: np.ndarray) -> np.ndarray:
    """Pixels of frame 2 within one pixel of where a known flow vector lands."""
    x, y = _grid(flow.shape)
    tx, ty = np.rint(x + flow[..., 0]), np.rint(y + flow[..., 1])
    lands = np.isfinite(flow).all(axis=2) & _inside(tx, ty, flow.shape)
    hit = np.zeros(flow.shape[:2], bool)
    hit[ty[lands].astype(int), tx[lands].astype(int)] = True
    padded = np.pad(hit, 1)
    height, width = hit.shape
    return np.logical_or.reduce([padded[r:r + height, c:c + width]
                                 for r in range(3) for c in range(3)])


def flow_repeatability(kp1: Keypoints, kp2: Keypoints, flow: np.ndarray,
                       position_tol: float = POSITION_TOL,
                       scale_tol: float = SCALE_TOL) -> Repeatability:
    """Repeatability of kp1 in kp2 under the correspondence field ``flow`` (frame 1 -> 2)."""
    height, width = flow.shape[:2]
    column = np.clip(np.rint(kp1.x), 0, width - 1).astype(int)
    row = np.clip(np.rint(kp1.y), 0, height - 1).astype(int)
    mapped = kp1.points + flow[row, column].astype(np.float64)
    common1 = np.nonzero(np.isfinite(mapped).all(axis=1)
                         & _inside(mapped[:, 0], mapped[:, 1], flow.shape))[0]
    covered = _covered(flow)
    common2 = np.nonzero(covered[np.clip(np.rint(kp2.y), 0, height - 1).astype(int),
                                 np.clip(np.rint(kp2.x), 0, width - 1).astype(int)])[0]
    i, j, _ = pairs_within(mapped[common1], kp2.points[common2], position_tol)
    expected = kp1.size[common1][i] * _local_scale(flow)[row, column][common1][i]
    same_size = np.abs(kp2.size[common2][j] / expected - 1) <= scale_tol
    return Repeatability(len(common1), len(common2), len(np.unique(i[same_size])))
