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
The tune report's strip: a node's answers with the start and the tuned values, drawn side by side.

Each answer is drawn as the nodes draw their visual topics (``disparity_to_color``,
``flow_to_color``, ``draw_keypoints``), but the two answers of a frame share one scale: the
disparity colours span 0 to the larger map's largest disparity and the flow colours the larger
flow's largest motion, so a colour means the same in both tiles. The frames are spread over the
held-out part as eval's strip spreads them (``spread``: not the first, which has no flow).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.evaluation.strip import spread, STRIP_FRAMES
from cl_vision_nodes.flow.colorwheel import flow_to_color, largest_motion
from cl_vision_nodes.params import Value
from cl_vision_nodes.surf.draw import draw_keypoints
import numpy as np

TITLES = {'disparity': 'disparity', 'flow': 'flow', 'surf': 'keypoints'}
"""The answer of each capability as the strip's column titles name it."""

StripAnswers = Callable[[Mapping[str, Value]], list[tuple[int, np.ndarray, dict[str, Any]]]]
"""
Run the node with these values on the strip's frames (the same frames on every call).

Return for each frame its index in the part, its input (HxW gray, 0..255) and the answers by
capability: ``disparity``
(HxW float32 px, invalid below 0), ``flow`` (HxWx2 px, None for a first frame), ``surf``
(Keypoints).
"""

Pair = tuple[np.ndarray | None, np.ndarray | None, str]


def _largest(arrays: Sequence[np.ndarray]) -> float:
    finite = [a[np.isfinite(a)] for a in arrays]
    return max((float(a.max()) for a in finite if a.size), default=0.0)


def _disparity(before: np.ndarray, after: np.ndarray, gray: np.ndarray) -> Pair:
    top = max(_largest([before, after]), 1.0)
    return disparity_to_color(before, 0.0, top), disparity_to_color(after, 0.0, top), \
        f'max {top:.0f} px'


def _flow(before: np.ndarray | None, after: np.ndarray | None, gray: np.ndarray) -> Pair:
    top = max((largest_motion(f) for f in (before, after) if f is not None), default=0.0)
    return (*(None if f is None else flow_to_color(f, top) for f in (before, after)),
            f'max {top:.1f} px')


def _keypoints(before: Any, after: Any, gray: np.ndarray) -> Pair:
    return draw_keypoints(gray, before), draw_keypoints(gray, after), \
        f'{len(before)} / {len(after)}'


DRAWINGS: dict[str, Callable[[Any, Any, np.ndarray], Pair]] = {
    'disparity': _disparity, 'flow': _flow, 'surf': _keypoints}


def drawn_pair(key: str, before: Any, after: Any, gray: np.ndarray) -> Pair:
    """Return the pictures of one capability's two answers on one scale, and that scale."""
    return DRAWINGS[key](before, after, gray)


def strip_answers(answers: Callable[[Mapping[str, Value]], Mapping[str, Sequence[Any]]],
                  grays: Sequence[np.ndarray], count: int = STRIP_FRAMES) -> StripAnswers:
    """
    Make the report's ``strip`` from a run of the node over a part's frames.

    ``answers(values)`` returns, by capability, the answer to every frame of ``grays`` in order
    (the evaluator's run of that part); the strip keeps ``count`` frames spread over them.
    """
    chosen = spread(count, len(grays))

    def strip(values: Mapping[str, Value]) -> list[tuple[int, np.ndarray, dict[str, Any]]]:
        by_key = answers(values)
        return [(i, grays[i], {key: answered[i] for key, answered in by_key.items()})
                for i in chosen]
    return strip
