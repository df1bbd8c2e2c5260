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
Accuracy against the ground truth of a dataset bag (bag_layout), per frame.

Flow: EPE, AAE and density against /camera/ground_truth/flow (flow.metrics). Disparity: KITTI
D1 (|d - gt| > 3 px and > 5 %, invalid counted as an error), bad > 2 px and density against
/camera/ground_truth/disparity (elas.metrics). SURF: keypoints per frame, and repeatability and
matching score of every frame against the first under the homography ground truth
(surf.evaluation). A frame without the truth topic is not scored.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cl_vision_nodes.bags import layout
from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.elas.metrics import bad_pixel_errors, d1_errors
from cl_vision_nodes.evaluation.frames import BagFrame, deserialize, image_array, message_image
from cl_vision_nodes.evaluation.player import mean, Scorer
from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.flow.metrics import flow_errors
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_keypoints
from cl_vision_nodes.surf.evaluation import pair_scores
import numpy as np

BAD_PIXELS = 2.0  # the report's bad-N, beside KITTI's D1
CLOUD_TYPE = 'sensor_msgs/msg/PointCloud2'
DISPARITY_TYPE = 'stereo_msgs/msg/DisparityImage'


class FlowScorer:
    """EPE/AAE/density of each flow against /camera/ground_truth/flow (flow.metrics)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.last: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        if layout.GT_FLOW not in frame.messages:
            return
        estimate, truth = image_array(answer), frame.array(layout.GT_FLOW)
        if estimate.shape != truth.shape:
            return
        errors = flow_errors(estimate, truth)
        self.rows.append({'frame': frame.index, 'epe': errors.epe, 'aae': errors.aae,
                          'density': errors.density})
        self.last = (estimate, truth)

    def summary(self) -> dict[str, Any]:
        return {'frames_scored': len(self.rows),
                **{k: mean([r[k] for r in self.rows]) for k in ('epe', 'aae', 'density')},
                'per_frame': self.rows}

    def pictures(self, out: Path) -> dict[str, str]:
        """
        Draw the estimate | ground truth on the same colour scale.

        The node's own flow/color scales each frame by its own maximum, which hides a wrong
        magnitude.
        """
        if self.last is None:
            return {}
        estimate, truth = self.last
        scale = float(np.nanmax(np.hypot(truth[..., 0], truth[..., 1]), initial=0.0))
        write_png(out / 'flow_vs_truth.png', np.hstack([flow_to_color(estimate, scale),
                                                       flow_to_color(truth, scale)]))
        return {'flow estimate | ground truth (same scale)': 'flow_vs_truth.png'}


def disparity_errors(estimate: np.ndarray, truth: np.ndarray,
                     min_disparity: float) -> dict[str, float]:
    """
    Return the report's row: KITTI D1, bad > 2 px and density over the pixels with ground truth.

    elas.metrics: an invalid estimate, below the message's min_disparity, is an error.
    """
    d1 = d1_errors(estimate, truth, min_disparity)
    bad = bad_pixel_errors(estimate, truth, BAD_PIXELS, min_disparity)
    return {'d1': d1.all, 'bad2': bad.all, 'density': d1.density}


class DisparityScorer:
    """
    D1, bad > 2 px and density of each disparity map against /camera/ground_truth/disparity.

    Computed by ``disparity_errors``.
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.last: tuple[np.ndarray, np.ndarray, float] | None = None

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        if layout.GT_DISPARITY not in frame.messages:
            return
        msg = deserialize(answer, DISPARITY_TYPE)
        estimate = message_image(msg.image)
        truth = frame.array(layout.GT_DISPARITY)
        if estimate.shape != truth.shape or not np.isfinite(truth).any():
            return
        self.rows.append({'frame': frame.index,
                          **disparity_errors(estimate, truth, msg.min_disparity)})
        self.last = (estimate, truth, float(msg.min_disparity))

    def summary(self) -> dict[str, Any]:
        return {'frames_scored': len(self.rows),
                **{k: mean([r[k] for r in self.rows]) for k in ('d1', 'bad2', 'density')},
                'per_frame': self.rows}

    def pictures(self, out: Path) -> dict[str, str]:
        if self.last is None:
            return {}
        estimate, truth, d_min = self.last
        d_max = float(np.nanmax(truth))
        write_png(out / 'disparity_vs_truth.png',
                  np.hstack([disparity_to_color(estimate, d_min, d_max),
                             disparity_to_color(truth, d_min, d_max)]))
        return {'disparity estimate | ground truth (same scale)': 'disparity_vs_truth.png'}


class SurfScorer:
    """
    Keypoints per frame; repeatability and matching score against the first frame.

    Every frame with a homography is compared with the first one (surf.evaluation), through H_k *
    H_first^-1.
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.reference: tuple[Any, np.ndarray, tuple[int, int]] | None = None

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        keypoints = cloud_to_keypoints(deserialize(answer, CLOUD_TYPE))
        row: dict[str, Any] = {'frame': frame.index, 'keypoints': len(keypoints)}
        if layout.GT_HOMOGRAPHY in frame.messages:
            h = frame.homography()
            if self.reference is None:
                self.reference = (keypoints, h, size)
            else:
                first, h_first, first_size = self.reference
                scores = pair_scores(first, keypoints, h @ np.linalg.inv(h_first), first_size,
                                     size)
                row.update(repeatability=scores.repeatability,
                           matching_score=scores.matching_score)
        self.rows.append(row)

    def summary(self) -> dict[str, Any]:
        scored = [r for r in self.rows if 'repeatability' in r]
        return {'frames_scored': len(scored),
                'keypoints': mean([r['keypoints'] for r in self.rows]),
                'repeatability': mean([r['repeatability'] for r in scored]),
                'matching_score': mean([r['matching_score'] for r in scored]),
                'per_frame': self.rows}

    def pictures(self, out: Path) -> dict[str, str]:
        return {}


SCORERS: dict[str, type[Scorer]] = {'flow': FlowScorer, 'surf': SurfScorer,
                                    'disparity': DisparityScorer}
