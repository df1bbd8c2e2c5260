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
One parameter set scored and timed on one OpenCL device, over one half of a tune's frames.

The frames are decoded onto the device once (``DeviceImages``); the node kinds' frame-level
capabilities (``capabilities``: what the nodes run, their answers the nodes' own) are built once
and each evaluation ``configure``s them with the full parameter set (their validation refuses a
bad value: ParameterError), runs one untimed frame (kernel builds and buffers for new values),
then every frame of the part, timed from the first launch to the last answer on the host.

Scores are eval's, lower is better. With the bag's ground truth: D1 (``evaluation.scorers``'
``disparity_errors``), EPE (``flow.metrics``), ``repeatability_loss`` = 1 - repeatability
against the part's first frame (``surf.evaluation.pair_scores``). Without it, eval's quality
scorers (``evaluation.quality_scorers``) give a ``quality_loss``: disparity 1 - share of the
pixels with a left-right consistent disparity (density x consistent); flow the photometric error
over the unwarped one plus the share of forward-backward inconsistent pixels; SURF 1 - the match
rate between consecutive frames. vision_pipeline sums the scores of its capabilities (those
enabled; disparity only on a stereo bag). Motion for the quality scores that need it (temporal
stability, SURF repeatability under flow) is the flow with default parameters, computed once.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
import math
import time
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from cl_vision_nodes.capabilities.disparity import DisparityFrames
from cl_vision_nodes.capabilities.flow import FlowFrames
from cl_vision_nodes.capabilities.stages import StageTimes
from cl_vision_nodes.capabilities.surf import SurfFrames
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.evaluation.player import mean
from cl_vision_nodes.evaluation.quality_scorers import (DisparityQuality, FlowQuality,
                                                        LibraryAlgorithms, SequenceMemory,
                                                        SurfQuality)
from cl_vision_nodes.evaluation.scorers import disparity_errors
from cl_vision_nodes.flow.metrics import flow_errors
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import ParameterSchema, section, Value
from cl_vision_nodes.schemas import CAPABILITIES
from cl_vision_nodes.surf.evaluation import pair_scores
from cl_vision_nodes.surf.keypoints import Keypoints
from cl_vision_nodes.tuning.frames import Frame, TuneFrames
from cl_vision_nodes.tuning.space import node_schema
import numpy as np
import pyopencl as cl

PARTS = ('tuning', 'held_out')
UNEXPLAINED_FLOOR = 1.0
"""Grey levels: the unwarped difference below which a frame pair counts as static."""


class DeviceRefused(CLVisionError):
    """The OpenCL device refused the work of a parameter set (resources, launch sizes)."""


@dataclass(frozen=True)
class TrialResult:
    """What one evaluation gives: the score (lower is better), its name, the time per frame."""

    score: float
    metric: str  # 'D1', 'EPE', 'repeatability_loss', 'quality_loss' or a sum of them
    ms_per_frame: float
    metrics: dict[str, float]


@dataclass(frozen=True)
class _Score:
    score: float
    metric: str
    metrics: dict[str, float]


def _means(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, float]:
    """Return the finite means of ``keys`` over ``rows`` (a key without any value is left out)."""
    found = {key: mean([row.get(key) for row in rows]) for key in keys}
    return {key: value for key, value in found.items() if value is not None}


Memory = Callable[[], SequenceMemory]
"""Makes the quality scorers' memory of a part (its motion computed once, on first need)."""


class _Capability(Protocol):
    schema: ParameterSchema

    def configure(self, values: Mapping[str, Value]) -> None: ...

    def run(self, lefts: list[DeviceGray], rights: list[DeviceGray]) -> list[Any]: ...

    def score(self, frames: list[Frame], outputs: list[Any], truth: bool,
              memory: Memory) -> _Score: ...


class _Disparity:
    schema = ELAS_SCHEMA

    def __init__(self, runtime: ClRuntime):
        self.frames = DisparityFrames(runtime, DeviceImages(runtime), self.schema.defaults(),
                                      StageTimes())

    def configure(self, values: Mapping[str, Value]) -> None:
        self.frames.configure(values)

    def run(self, lefts: list[DeviceGray], rights: list[DeviceGray]) -> list[np.ndarray]:
        return self.frames.maps(lefts, rights)

    def score(self, frames: list[Frame], outputs: list[np.ndarray], truth: bool,
              memory: Memory) -> _Score:
        d_min = float(self.frames.values['disp_min'])
        if truth:
            rows = []
            for frame, estimate in zip(frames, outputs):
                if frame.disparity is None:
                    continue
                if estimate.shape != frame.disparity.shape:
                    raise ParameterError(f'a {estimate.shape} map (subsampling) is not scored '
                                         f'against {frame.disparity.shape} ground truth')
                rows.append(disparity_errors(estimate, frame.disparity, d_min))
            metrics = _means(rows, ('d1', 'bad2', 'density'))
            return _Score(metrics.get('d1', math.nan), 'D1', metrics)
        scorer = DisparityQuality(memory())
        for index, (frame, estimate) in enumerate(zip(frames, outputs)):
            scorer.score(index, frame.left_gray, frame.right_gray, estimate, d_min)
        losses = [1.0 - row['density'] * (row.get('lr_consistent') or 0.0)
                  for row in scorer.rows]
        return _Score(float(np.mean(losses)), 'quality_loss',
                      _means(scorer.rows, DisparityQuality.FIGURES))


class _Flow:
    schema = CAPABILITIES['flow']

    def __init__(self, runtime: ClRuntime):
        self.frames = FlowFrames(runtime, self.schema.defaults(), StageTimes())

    def configure(self, values: Mapping[str, Value]) -> None:
        self.frames.configure(values)

    def run(self, lefts: list[DeviceGray], rights: list[DeviceGray]) -> list[np.ndarray | None]:
        return self.frames.flows(lefts)

    def score(self, frames: list[Frame], outputs: list[np.ndarray | None], truth: bool,
              memory: Memory) -> _Score:
        if truth:
            rows = []
            for frame, estimate in zip(frames, outputs):
                if estimate is not None and frame.flow is not None:
                    errors = flow_errors(estimate, frame.flow)
                    rows.append({'epe': errors.epe, 'aae': errors.aae,
                                 'density': errors.density})
            metrics = _means(rows, ('epe', 'aae', 'density'))
            return _Score(metrics.get('epe', math.nan), 'EPE', metrics)
        scorer = FlowQuality(memory())
        scorer.memory.see(0, frames[0].left_gray)
        for index, (frame, estimate) in enumerate(zip(frames, outputs)):
            if estimate is not None:
                scorer.score(index, frame.left_gray, estimate)
        losses = [(row['photometric_error'] or 0.0)
                  / max(row['unwarped_error'] or 0.0, UNEXPLAINED_FLOOR)
                  + 1.0 - row['fb_consistent'] for row in scorer.rows]
        return _Score(float(np.mean(losses)) if losses else math.nan, 'quality_loss',
                      _means(scorer.rows, FlowQuality.FIGURES))


class _Surf:
    schema = CAPABILITIES['surf']

    def __init__(self, runtime: ClRuntime):
        self.frames = SurfFrames(runtime, self.schema.defaults(), StageTimes())

    def configure(self, values: Mapping[str, Value]) -> None:
        self.frames.configure(values)

    def run(self, lefts: list[DeviceGray], rights: list[DeviceGray]) -> list[Keypoints]:
        return self.frames.keypoints(lefts)

    def score(self, frames: list[Frame], outputs: list[Keypoints], truth: bool,
              memory: Memory) -> _Score:
        if truth:
            scored = [(f, k) for f, k in zip(frames, outputs) if f.homography is not None]
            rows = []
            for frame, keypoints in scored[1:]:
                first, first_keypoints = scored[0]
                scores = pair_scores(first_keypoints, keypoints,
                                     frame.homography @ np.linalg.inv(first.homography),
                                     first.left_gray.shape, frame.left_gray.shape)
                rows.append({'repeatability': scores.repeatability,
                             'matching_score': scores.matching_score})
            metrics = {**_means(rows, ('repeatability', 'matching_score')),
                       'keypoints': float(np.mean([len(k) for k in outputs]))}
            return _Score(1.0 - metrics.get('repeatability', math.nan), 'repeatability_loss',
                          metrics)
        scorer = SurfQuality(memory())
        for index, (frame, keypoints) in enumerate(zip(frames, outputs)):
            scorer.score(index, frame.left_gray, keypoints)
        figures = _means(scorer.rows, SurfQuality.FIGURES)
        return _Score(1.0 - figures.get('match_rate', 0.0), 'quality_loss', figures)


_CAPABILITIES = {'disparity': _Disparity, 'flow': _Flow, 'surf': _Surf}
_TRUTH = {'disparity': 'disparity', 'flow': 'flow', 'surf': 'homography'}


class Evaluator:
    """The node's algorithms and the tune's frames on one device (see the module's docstring)."""

    def __init__(self, device: str, frames: TuneFrames):
        self.frames = frames
        self.runtime = ClRuntime(device)
        self.schema = node_schema(frames.node)
        keys = ('flow', 'surf', 'disparity') if frames.node == 'vision_pipeline' \
            else (frames.node,)
        keys = tuple(k for k in keys if k != 'disparity' or frames.stereo)
        self._capabilities: dict[str, _Capability] = {
            key: _CAPABILITIES[key](self.runtime) for key in keys}
        flow, disparity = self._capabilities.get('flow'), self._capabilities.get('disparity')
        self._library = LibraryAlgorithms(  # second opinions with the trial's values
            runtime=self.runtime, flow=flow and flow.frames,
            matcher=disparity and disparity.frames.matcher)
        images = DeviceImages(self.runtime)
        self._device: dict[str, tuple[list[DeviceGray], list[DeviceGray]]] = {}
        for part in PARTS:
            lefts = [images.decode(f.left, f'{part}_left_{i}')
                     for i, f in enumerate(frames.part(part))]
            rights = [images.decode(f.right, f'{part}_right_{i}')
                      for i, f in enumerate(frames.part(part)) if f.right is not None] \
                if 'disparity' in keys else []
            self._device[part] = (lefts, rights)
        self._images = images  # owns the frames' buffers
        self._motion: dict[str, list[np.ndarray | None]] = {}

    def evaluate(self, values: Mapping[str, Value], part: str = 'tuning') -> TrialResult:
        """
        Score and time ``values`` (any subset of the node's parameters, the rest default).

        ParameterError for a value the algorithms refuse, DeviceRefused for work the device
        refuses.
        """
        frames, (lefts, rights) = self.frames.part(part), self._device[part]
        scores, total_ms = {}, 0.0
        try:
            for key, capability in self._configured(values):
                capability.run(lefts[:2], rights[:2])  # untimed: builds for the new values
                start = time.perf_counter()
                outputs = capability.run(lefts, rights)
                self.runtime.finish()
                total_ms += (time.perf_counter() - start) * 1e3
                scores[key] = capability.score(frames, outputs,
                                               _TRUTH[key] in self.frames.truth,
                                               partial(self._memory, part))
        except cl.Error as exc:
            raise DeviceRefused(f'the device refused these values ({exc})') from None
        if not scores:
            raise ParameterError('no capability of the pipeline is enabled')
        if len(scores) == 1:
            (only,) = scores.values()
            return TrialResult(only.score, only.metric, total_ms / len(frames), only.metrics)
        return TrialResult(sum(s.score for s in scores.values()),
                           ' + '.join(f'{k} {s.metric}' for k, s in scores.items()),
                           total_ms / len(frames),
                           {f'{k}.{name}': v for k, s in scores.items()
                            for name, v in {s.metric: s.score, **s.metrics}.items()})

    def answers(self, values: Mapping[str, Value], part: str = 'held_out') -> dict[str, list[Any]]:
        """Return each enabled capability's answer to every frame of ``part`` (for pictures)."""
        lefts, rights = self._device[part]
        return {key: capability.run(lefts, rights) for key, capability in self._configured(values)}

    def _configured(self, values: Mapping[str, Value]) -> Iterator[tuple[str, _Capability]]:
        """Yield the capabilities that run with ``values`` (pipeline: enabled), configured."""
        full = self.schema.validate(self.schema.defaults(), values, allow_read_only=True)
        for key, capability in self._capabilities.items():
            if self.frames.node == 'vision_pipeline':
                if not full[f'{key}.enabled']:
                    continue
                capability.configure(section(full, key, capability.schema))
            else:
                capability.configure(full)
            yield key, capability

    def _memory(self, part: str) -> SequenceMemory:
        """Return a fresh memory of the part's frames holding the default-parameter flows."""
        if part not in self._motion:
            default_flow = FlowFrames(self.runtime, CAPABILITIES['flow'].defaults(), StageTimes())
            self._motion[part] = default_flow.flows(self._device[part][0])
        memory = SequenceMemory(self._library)
        for index, flow in enumerate(self._motion[part]):
            if flow is not None:
                memory.node_flow(index, flow)
        return memory
