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
Quality of each node's answers without ground truth, per frame, as eval records them.

A robot's bag has no truth, so eval scores the answers against the inputs and against each other
with ``evaluation.quality``'s measures (its docstring says what each one means):

- flow: photometric error of frame t-1 mapped onto frame t by the answer (beside the unwarped
  difference), and forward-backward consistency against a backward flow t -> t-1 that eval
  computes itself with ``FlowEstimator`` on the run's device and with the flow node's parameters
  (one more flow per answered frame, about 0.2 s at 320x240 on PoCL with two cores: cheap enough
  to do always, and it checks the method the node ran rather than another one);
- disparity: photometric left-right agreement, left-right consistency against the right map of
  the same pair (``ElasMatcher.compute_both`` with the node's parameters; the node publishes only
  the left map), density, and temporal stability where the flow from t-1 to t says static;
- SURF: match rate between consecutive frames (ratio-test matches kept by a RANSAC fundamental
  matrix, which fits any rigid scene) and repeatability of frame t-1's keypoints in frame t
  under the flow.

Temporal stability and repeatability need the flow between consecutive left frames: the flow
node's answer when it answered that frame, else the library's (``FlowEstimator`` with the flow
node's parameters, computed once a frame and shared). So the flow scorer must see a frame before
the others (eval scores the nodes in the order flow, surf, disparity). The scorers share a
``SequenceMemory`` that keeps the last two left frames; each works on decoded arrays, so what a
frame looks like in a bag (topics, compression, colour) is the caller's concern.
"""
from __future__ import annotations

from dataclasses import asdict
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from cl_vision_nodes.capabilities.flow import FlowFrames
from cl_vision_nodes.capabilities.stages import StageTimes
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.evaluation import quality
from cl_vision_nodes.evaluation.frames import BagFrame, deserialize, image_array, message_image
from cl_vision_nodes.evaluation.player import mean, Scorer
from cl_vision_nodes.evaluation.scorers import CLOUD_TYPE, DISPARITY_TYPE, SCORERS
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_keypoints
from cl_vision_nodes.surf.keypoints import Keypoints
import numpy as np

TOLERANCE_PX = 1.0
"""Forward-backward and left-right disagreement still counted as consistent."""
STATIC_PX = 0.5
"""Flow below which a pixel counts as static for temporal stability."""


def _algorithm_values(schema: ParameterSchema, params: Mapping[str, Value]) -> dict[str, Value]:
    """Keep the parameters the library algorithm knows (a node also has ROS-side ones)."""
    return {name: value for name, value in params.items() if name in schema.specs}


def _figures(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    return {'frames_scored': len(rows), **{key: mean([row.get(key) for row in rows])
                                           for key in keys}, 'per_frame': rows}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


class LibraryAlgorithms:
    """
    The library's flow and stereo matcher in the evaluator's process, built on first use.

    A run whose answers need neither (one node, one frame) opens no OpenCL context. The flow is
    flow_node's (``capabilities.flow``, a stream of the two frames). Tune passes its own runtime
    and the trial's flow and matcher (configured with the trial's values).
    """

    def __init__(self, device: str = 'auto', flow_params: Mapping[str, Value] | None = None,
                 disparity_params: Mapping[str, Value] | None = None, *,
                 runtime: ClRuntime | None = None, flow: FlowFrames | None = None,
                 matcher: ElasMatcher | None = None):
        self.device = device
        self.flow_values = _algorithm_values(FLOW_SCHEMA, flow_params or {})
        self.disparity_values = _algorithm_values(ELAS_SCHEMA, disparity_params or {})
        self._runtime = runtime
        self._flow = flow
        self._matcher = matcher
        self._images: DeviceImages | None = None

    def _opened(self) -> ClRuntime:
        if self._runtime is None:
            self._runtime = ClRuntime(self.device)
        return self._runtime

    def flow(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        """Return the flow from ``gray0`` to ``gray1`` (HxWx2 float32) with the flow parameters."""
        if gray0.shape != gray1.shape:
            raise ImageFormatError(f'frames differ in size: {gray0.shape} vs {gray1.shape}')
        if self._flow is None:
            values = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), self.flow_values,
                                          allow_read_only=True)
            self._flow = FlowFrames(self._opened(), values, StageTimes())
        if self._images is None:
            self._images = DeviceImages(self._opened())
        grays = [self._images.decode(gray_to_raw(gray), f'library_{index}')
                 for index, gray in enumerate((gray0, gray1))]
        return self._flow.flows(grays)[1]

    def disparity_both(self, left: np.ndarray,
                       right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the left and right disparity maps of a rectified gray pair."""
        if self._matcher is None:
            self._matcher = ElasMatcher(self._opened(), self.disparity_values)
        return self._matcher.compute_both(gray_to_raw(left), gray_to_raw(right))


class SequenceMemory:
    """
    What the quality scorers of one run share: the last left frames and the flow between them.

    Frames are known by their index in the played sequence; a frame's predecessor is index - 1.
    ``left`` and ``right`` are the bag topics of the camera's images (``right`` None for mono).
    """

    def __init__(self, library: LibraryAlgorithms, left: str = '', right: str | None = None):
        self.library = library
        self.left_topic, self.right_topic = left, right
        self._lefts: dict[int, np.ndarray] = {}
        self._flows: dict[int, tuple[np.ndarray, str]] = {}

    def see(self, index: int, left: np.ndarray) -> None:
        """Remember frame ``index``'s left image and forget what is older than its predecessor."""
        self._lefts[index] = left
        for old in [k for k in self._lefts if k < index - 1]:
            del self._lefts[old]
        for old in [k for k in self._flows if k < index]:
            del self._flows[old]

    def remembered(self, frames: Iterator[BagFrame]) -> Iterator[BagFrame]:
        """
        Pass the played frames on, remembering each one's left image first.

        So the first flow answer finds its previous frame even when no scorer was due for it.
        """
        for frame in frames:
            self.see_frame(frame)
            yield frame

    def see_frame(self, frame: BagFrame) -> np.ndarray:
        """Return a played frame's left image in gray, decoded once and remembered."""
        if frame.index not in self._lefts:
            self.see(frame.index, frame.gray(self.left_topic))
        return self._lefts[frame.index]

    def left(self, index: int) -> np.ndarray | None:
        """Return frame ``index``'s left image if it is still remembered."""
        return self._lefts.get(index)

    def node_flow(self, index: int, flow: np.ndarray) -> None:
        """Keep the flow node's answer for frame ``index`` (index - 1 -> index)."""
        self._flows[index] = (flow, 'node')

    def flow(self, index: int) -> tuple[np.ndarray, str] | None:
        """
        Return the flow from frame index - 1 to index and who computed it ('node' or 'library').

        None when the predecessor is not remembered or differs in size.
        """
        if index not in self._flows:
            previous, current = self.left(index - 1), self.left(index)
            if previous is None or current is None or previous.shape != current.shape:
                return None
            self._flows[index] = (self.library.flow(previous, current), 'library')
        return self._flows[index]


class FlowQuality:
    """Photometric error and forward-backward consistency of each flow answer."""

    FIGURES = ('photometric_error', 'unwarped_error', 'photometric_coverage', 'fb_error',
               'fb_consistent', 'fb_coverage')

    def __init__(self, memory: SequenceMemory):
        self.memory = memory
        self.rows: list[dict[str, Any]] = []

    def score(self, index: int, left: np.ndarray, flow: np.ndarray) -> None:
        """Score the answer to frame ``index``: ``flow`` from frame index - 1 to ``left``."""
        self.memory.see(index, left)
        self.memory.node_flow(index, flow)
        previous = self.memory.left(index - 1)
        if previous is None or previous.shape != left.shape or flow.shape[:2] != left.shape:
            return
        photometric = quality.flow_photometric_error(previous, left, flow)
        consistency = quality.forward_backward(flow, self.memory.library.flow(left, previous),
                                               TOLERANCE_PX)
        self.rows.append({'frame': index, 'photometric_error': _finite(photometric.error),
                          'unwarped_error': _finite(photometric.unwarped),
                          'photometric_coverage': photometric.coverage,
                          'fb_error': _finite(consistency.error),
                          'fb_consistent': consistency.consistent,
                          'fb_coverage': consistency.coverage})

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        """Score the flow node's answer (serialized 32FC2 Image) to a played frame."""
        self.score(frame.index, self.memory.see_frame(frame), image_array(answer))

    def summary(self) -> dict[str, Any]:
        """Return the means over the scored frames and the rows."""
        return _figures(self.rows, self.FIGURES)

    def pictures(self, out: Path) -> dict[str, str]:
        """Draw nothing: the report's strip shows the answers."""
        return {}


class DisparityQuality:
    """Left-right agreement and consistency, density and temporal stability of each map."""

    FIGURES = ('density', 'lr_photometric_error', 'lr_unwarped_error', 'lr_error',
               'lr_consistent', 'temporal_change', 'static_coverage')

    def __init__(self, memory: SequenceMemory):
        self.memory = memory
        self.rows: list[dict[str, Any]] = []
        self._previous: tuple[int, np.ndarray] | None = None

    def score(self, index: int, left: np.ndarray, right: np.ndarray, disparity: np.ndarray,
              min_disparity: float) -> None:
        """
        Score the map answering the pair (``left``, ``right``) of frame ``index``.

        The photometric check needs a map of the images' size (not a subsampled one).
        """
        self.memory.see(index, left)
        row: dict[str, Any] = {'frame': index,
                               'density': quality.disparity_density(disparity, min_disparity)}
        if disparity.shape == left.shape == right.shape:
            photometric = quality.disparity_photometric_error(left, right, disparity,
                                                              min_disparity)
            row.update(lr_photometric_error=_finite(photometric.error),
                       lr_unwarped_error=_finite(photometric.unwarped))
        if left.shape == right.shape:
            _, right_map = self.memory.library.disparity_both(left, right)
            if right_map.shape == disparity.shape:
                consistency = quality.left_right_consistency(disparity, right_map, TOLERANCE_PX,
                                                             min_disparity)
                row.update(lr_error=_finite(consistency.error),
                           lr_consistent=consistency.consistent)
        if self._previous is not None and self._previous[0] == index - 1:
            motion = self.memory.flow(index)
            previous = self._previous[1]
            if motion is not None and motion[0].shape[:2] == disparity.shape == previous.shape:
                stability = quality.temporal_stability(previous, disparity, motion[0], STATIC_PX,
                                                       min_disparity)
                row.update(temporal_change=_finite(stability.change),
                           static_coverage=stability.coverage, motion=motion[1])
        self._previous = (index, disparity)
        self.rows.append(row)

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        """Score the disparity node's answer (serialized DisparityImage) to a played pair."""
        msg = deserialize(answer, DISPARITY_TYPE)
        self.score(frame.index, self.memory.see_frame(frame),
                   frame.gray(self.memory.right_topic), message_image(msg.image),
                   float(msg.min_disparity))

    def summary(self) -> dict[str, Any]:
        """Return the means over the scored frames and the rows."""
        return _figures(self.rows, self.FIGURES)

    def pictures(self, out: Path) -> dict[str, str]:
        """Draw nothing: the report's strip shows the answers."""
        return {}


class SurfQuality:
    """Match rate and repeatability of each frame's keypoints against the previous frame's."""

    FIGURES = ('keypoints', 'matches', 'match_rate', 'inlier_ratio', 'flow_repeatability')

    def __init__(self, memory: SequenceMemory, model: quality.Model = 'fundamental'):
        self.memory = memory
        self.model = model
        self.rows: list[dict[str, Any]] = []
        self._previous: tuple[int, Keypoints] | None = None

    def score(self, index: int, left: np.ndarray, keypoints: Keypoints) -> None:
        """Score frame ``index``'s keypoints against those of frame index - 1."""
        self.memory.see(index, left)
        row: dict[str, Any] = {'frame': index, 'keypoints': len(keypoints)}
        if self._previous is not None and self._previous[0] == index - 1:
            previous = self._previous[1]
            matching = quality.geometric_matches(previous, keypoints, self.model)
            row.update(matches=matching.matches, inliers=matching.inliers,
                       match_rate=matching.match_rate,
                       inlier_ratio=_finite(matching.inlier_ratio))
            motion = self.memory.flow(index)
            if motion is not None:
                repeated = quality.flow_repeatability(previous, keypoints, motion[0])
                row.update(flow_repeatability=repeated.rate, motion=motion[1],
                           **{f'repeatability_{k}': v for k, v in asdict(repeated).items()})
        self._previous = (index, keypoints)
        self.rows.append(row)

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        """Score the SURF node's answer (serialized PointCloud2 of keypoints) to a played frame."""
        self.score(frame.index, self.memory.see_frame(frame),
                   cloud_to_keypoints(deserialize(answer, CLOUD_TYPE)))

    def summary(self) -> dict[str, Any]:
        """Return the means over the frames (the pair figures over the scored pairs)."""
        return {**_figures(self.rows, self.FIGURES),
                'frames_scored': sum('match_rate' in row for row in self.rows)}

    def pictures(self, out: Path) -> dict[str, str]:
        """Draw nothing: the report's strip shows the answers."""
        return {}


QUALITY = {'flow': FlowQuality, 'surf': SurfQuality, 'disparity': DisparityQuality}


class Scored:
    """
    One node's two scorers fed the same answers: accuracy (ground truth) and quality (none).

    ``summary`` is the accuracy's, which eval reports as the node's accuracy and shows in its
    status lines; ``quality.summary()`` is reported beside it.
    """

    def __init__(self, accuracy: Scorer, quality_scorer: FlowQuality | SurfQuality |
                 DisparityQuality):
        self.accuracy, self.quality = accuracy, quality_scorer

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        """Score one answer both ways."""
        self.accuracy.add(frame, answer, size)
        self.quality.add(frame, answer, size)

    def summary(self) -> dict[str, Any]:
        """Return the accuracy figures."""
        return self.accuracy.summary()

    def pictures(self, out: Path) -> dict[str, str]:
        """Draw both scorers' pictures."""
        return {**self.accuracy.pictures(out), **self.quality.pictures(out)}


def node_scorers(keys: Iterable[str], memory: SequenceMemory) -> dict[str, Scored]:
    """Return the scorers of nodes ``keys`` (flow, surf, disparity); quality shares ``memory``."""
    return {key: Scored(SCORERS[key](), QUALITY[key](memory)) for key in keys}
