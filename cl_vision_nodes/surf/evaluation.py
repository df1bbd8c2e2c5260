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
Measures for keypoints: fidelity to OpenCV, repeatability, matching score, rotation.

Definitions (all one-to-one: candidate pairs are taken greedily by increasing distance, each
keypoint used at most once):

- Correspondence under a homography H (img1 -> img2): keypoint a of img1 and b of img2 correspond
  when |H(a) - b| <= 1.5 px and |size_b / size_a' - 1| <= 0.25, where size_a' = size_a times
  sqrt(|det J_H(a)|), the local scale of H at a. Only keypoints in the common part count: a with
  H(a) inside img2, b with H^-1(b) inside img1 (n1, n2 of them).
- Repeatability (the simple published variant, not the overlap-error one): common-part
  keypoints of img1 with at least one corresponding keypoint in img2, over min(n1, n2). This
  is the definition behind the anchor figures (OpenCV SURF 0.279 / 0.160 on graf 1->2 / 1->3:
  OpenCV's own keypoints give exactly these here). The stricter one-to-one variant
  (correspondences / min(n1, n2)) is reported too.
- Matching score: every common-part keypoint of img1 is matched to its nearest neighbour (L2
  descriptor distance) among the common-part keypoints of img2; correct if that pair
  corresponds; score = correct / min(n1, n2).
- Mutual nearest-neighbour rate (rotation test): among corresponding pairs, the fraction whose
  descriptors are each other's nearest neighbours.
- Fidelity to OpenCV: a reference keypoint is reproduced by one of ours within ``position_tol``
  px and ``size_tol`` relative size; extra = our unpaired keypoints / reference count; angle
  agreement = paired keypoints whose angles differ by at most ``angle_tol`` degrees (circular).

ORB's binary descriptors can be compared by these functions once unpacked to 0/1 floats: the
squared L2 distance of such vectors is their Hamming distance.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path

from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.surf.keypoints import Keypoints
import numpy as np

POSITION_TOL = 1.5
SCALE_TOL = 0.25
_CHUNK = 1024


def read_opencv_keypoints(path: str | os.PathLike[str]) -> Keypoints:
    """
    Read rows ``x y size angle response octave class_id`` (class_id = laplacian sign).

    As written for ../shared/data/features/opencv_surf_thr100; no descriptors (N x 0).
    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise DataFormatError(f'{path}: cannot read ({exc.strerror or exc})') from None
    try:
        rows = np.array([[float(v) for v in line.split()] for line in text.splitlines()
                         if line.strip()], np.float64).reshape(-1, 7)
    except ValueError:
        raise DataFormatError(f'{path}: expected rows of 7 numbers '
                              '(x y size angle response octave class_id)') from None
    f = rows.astype(np.float32)
    return Keypoints(f[:, 0], f[:, 1], f[:, 2], f[:, 3], f[:, 4], rows[:, 5].astype(np.int32),
                     rows[:, 6].astype(np.int8), np.zeros((len(rows), 0), np.float32))


def pairs_within(a: np.ndarray, b: np.ndarray, radius: float) -> tuple[np.ndarray, ...]:
    """All (i, j, distance) with |a_i - b_j| <= radius for N x 2 point sets (chunked)."""
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for start in range(0, len(a), _CHUNK):
        block = a[start:start + _CHUNK]
        dist = np.sqrt(((block[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
        i, j = np.nonzero(dist <= radius)
        found.append((i + start, j, dist[i, j]))
    if not found:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))


def greedy_one_to_one(i: np.ndarray, j: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, ...]:
    """Keep candidate pairs by increasing cost while both ends are unused."""
    used_i: set[int] = set()
    used_j: set[int] = set()
    keep = []
    for k in np.argsort(cost, kind='stable'):
        a, b = int(i[k]), int(j[k])
        if a not in used_i and b not in used_j:
            used_i.add(a)
            used_j.add(b)
            keep.append(k)
    chosen = np.array(keep, int)
    return i[chosen], j[chosen]


def nearest_neighbours(desc_a: np.ndarray, desc_b: np.ndarray) -> np.ndarray:
    """Index into ``desc_b`` of the L2-nearest descriptor of every row of ``desc_a``."""
    a = desc_a.astype(np.float64)
    b = desc_b.astype(np.float64)
    b_sq = (b * b).sum(axis=1)
    out = np.empty(len(a), int)
    for start in range(0, len(a), _CHUNK):
        block = a[start:start + _CHUNK]
        out[start:start + len(block)] = np.argmin(b_sq[None, :] - 2 * block @ b.T, axis=1)
    return out


def apply_homography(h: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map N x 2 points and the local scale factor sqrt(|det J|) of H at each point."""
    homogeneous = np.c_[points, np.ones(len(points))] @ h.T
    w = homogeneous[:, 2]
    mapped = homogeneous[:, :2] / w[:, None]
    # d(mapped)/d(point) = (A - mapped * g^T) / w with A = h[:2, :2], g = h[2, :2]
    a = h[:2, :2][None, :, :] - mapped[:, :, None] * h[2, :2][None, None, :]
    det = np.abs(np.linalg.det(a)) / (w * w)
    return mapped, np.sqrt(det)


def _inside(points: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    height, width = shape
    return ((points[:, 0] >= 0) & (points[:, 0] <= width - 1)
            & (points[:, 1] >= 0) & (points[:, 1] <= height - 1))


@dataclass(frozen=True)
class Correspondence:
    """
    Common-part keypoint indices of both images, their one-to-one pairs, and all correct pairs.

    The one-to-one corresponding pairs are indices into the common-part lists; the keys i1 *
    len(common2) + i2 are those of every pair that meets the criterion (for matching, any such pair
    is correct, not only those kept one to one).
    """

    common1: np.ndarray
    common2: np.ndarray
    pairs1: np.ndarray
    pairs2: np.ndarray
    criterion_keys: np.ndarray

    def is_pair(self, i1: np.ndarray, i2: np.ndarray) -> np.ndarray:
        """Whether common-part keypoints (i1[k], i2[k]) meet the criterion."""
        return np.isin(i1 * len(self.common2) + i2, self.criterion_keys)


def correspond(kp1: Keypoints, kp2: Keypoints, h: np.ndarray, shape1: tuple[int, int],
               shape2: tuple[int, int], position_tol: float = POSITION_TOL,
               scale_tol: float = SCALE_TOL) -> Correspondence:
    """
    Find the common parts and one-to-one correspondences of two keypoint sets.

    See the module docstring.
    """
    mapped, scale = apply_homography(h, kp1.points)
    back, _ = apply_homography(np.linalg.inv(h), kp2.points)
    common1 = np.nonzero(_inside(mapped, shape2))[0]
    common2 = np.nonzero(_inside(back, shape1))[0]
    i, j, dist = pairs_within(mapped[common1], kp2.points[common2], position_tol)
    expected = kp1.size[common1][i] * scale[common1][i]
    ok = np.abs(kp2.size[common2][j] / expected - 1) <= scale_tol
    i, j, dist = i[ok], j[ok], dist[ok]
    p1, p2 = greedy_one_to_one(i, j, dist)
    return Correspondence(common1, common2, p1, p2, i * len(common2) + j)


@dataclass(frozen=True)
class PairScores:
    """Repeatability and matching score of one image pair."""

    n1: int
    n2: int
    repeated: int
    correspondences: int
    correct_matches: int

    @property
    def repeatability(self) -> float:
        return self.repeated / max(min(self.n1, self.n2), 1)

    @property
    def one_to_one_repeatability(self) -> float:
        return self.correspondences / max(min(self.n1, self.n2), 1)

    @property
    def matching_score(self) -> float:
        return self.correct_matches / max(min(self.n1, self.n2), 1)


def pair_scores(kp1: Keypoints, kp2: Keypoints, h: np.ndarray, shape1: tuple[int, int],
                shape2: tuple[int, int]) -> PairScores:
    """Repeatability and nearest-neighbour matching score (module docstring)."""
    c = correspond(kp1, kp2, h, shape1, shape2)
    correct = 0
    if len(c.common1) and len(c.common2):
        nn = nearest_neighbours(kp1.descriptor[c.common1], kp2.descriptor[c.common2])
        correct = int(c.is_pair(np.arange(len(c.common1)), nn).sum())
    repeated = len(np.unique(c.criterion_keys // max(len(c.common2), 1)))
    return PairScores(len(c.common1), len(c.common2), repeated, len(c.pairs1), correct)


def mutual_nearest_rate(kp1: Keypoints, kp2: Keypoints, h: np.ndarray,
                        shape1: tuple[int, int], shape2: tuple[int, int]) -> tuple[float, int]:
    """
    Fraction of corresponding pairs whose descriptors are mutual nearest neighbours.

    Among the common-part keypoints; and the number of pairs.
    """
    c = correspond(kp1, kp2, h, shape1, shape2)
    if len(c.pairs1) == 0:
        return 0.0, 0
    d1, d2 = kp1.descriptor[c.common1], kp2.descriptor[c.common2]
    nn12 = nearest_neighbours(d1, d2)
    nn21 = nearest_neighbours(d2, d1)
    mutual = (nn12[c.pairs1] == c.pairs2) & (nn21[c.pairs2] == c.pairs1)
    return float(mutual.mean()), len(c.pairs1)


@dataclass(frozen=True)
class Fidelity:
    """How well ``ours`` reproduces a reference keypoint set."""

    reference: int
    ours: int
    reproduced: int
    angle_agreeing: int

    @property
    def reproduced_fraction(self) -> float:
        return self.reproduced / max(self.reference, 1)

    @property
    def extra_fraction(self) -> float:
        return (self.ours - self.reproduced) / max(self.reference, 1)

    @property
    def angle_fraction(self) -> float:
        return self.angle_agreeing / max(self.reproduced, 1)


def fidelity(ours: Keypoints, reference: Keypoints, position_tol: float = 1.0,
             size_tol: float = 0.10, angle_tol: float = 5.0) -> Fidelity:
    """Pair ours with the reference one to one (module docstring)."""
    i, j, dist = pairs_within(reference.points, ours.points, position_tol)
    ok = np.abs(ours.size[j] - reference.size[i]) <= size_tol * reference.size[i]
    i, j = greedy_one_to_one(i[ok], j[ok], dist[ok])
    diff = np.abs((ours.angle[j] - reference.angle[i] + 180.0) % 360.0 - 180.0)
    return Fidelity(len(reference), len(ours), len(i), int((diff <= angle_tol).sum()))
