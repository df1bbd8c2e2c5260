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
Parameters of flow_node (and ``cl-vision flow --param``), and their typed view.

Every algorithm value (``FlowSettings``) is read per frame by ``FlowEstimator``, so any change
applies to the next frame; the node reads the others (``NODE_PARAMETERS``) itself, and only the
common ``device``/``profile``/``output_queue_size`` need a restart. Defaults are the
values measured best on the Middlebury training pairs (test/test_flow_accuracy.py); the dis
defaults are OpenCV's MEDIUM preset (flow/presets.py holds all three).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.params import (COMMON_NAMES, common_specs, ParameterSchema, ParamSpec,
                                    settings_from_values, Value)

METHODS: tuple[str, ...] = ('lk', 'hs', 'bm', 'dis')
"""The flow methods themselves; ``method`` also takes ``auto`` (see ``resolve_method``)."""
AUTO = 'auto'


def resolve_method(method: str, device_is_gpu: bool) -> str:
    """
    Return the method that ``method`` stands for on a device: ``auto`` is hs on GPUs, else dis.

    hs is the most accurate on a GPU at a few ms a frame; on a CPU it costs about a second, where
    dis (OpenCV's MEDIUM values) gives comparable accuracy at the cost of OpenCV's own DIS.
    An explicit method is returned unchanged.
    """
    if method != AUTO:
        return method
    return 'hs' if device_is_gpu else 'dis'


def _dis_stride_within_patch(values: Mapping[str, Value]) -> None:
    if int(values['dis_patch_stride']) > int(values['dis_patch_size']):
        raise ParameterError(
            f"dis_patch_stride: {values['dis_patch_stride']} is larger than dis_patch_size "
            f"{values['dis_patch_size']}: pixels between patches would get no flow")


FLOW_SCHEMA = ParameterSchema('flow_node', [
    *common_specs(),
    ParamSpec('method', AUTO,
              'auto: dis on a CPU device, hs on a GPU (the node logs its choice); lk: pyramidal '
              'iterative Lucas-Kanade; hs: coarse-to-fine robust Horn-Schunck with warping; bm: '
              'full-search block matching; dis: dense inverse search (patches by inverse '
              'LK, densified, variational refinement), fast on CPUs', choices=(AUTO, *METHODS)),
    ParamSpec('pyramid_levels', 5,
              'Gaussian pyramid levels of lk and hs (factor 0.5), capped so the coarsest level '
              'keeps at least 8 pixels per side', min=1, max=12),
    ParamSpec('window_size', 15, 'lk: side of the Gaussian-weighted window (odd), pixels',
              min=3, max=31, step=2),
    ParamSpec('window_sigma', 3.0, 'lk: standard deviation of the window weights, pixels',
              min=0.3, max=30.0),
    ParamSpec('lk_iterations', 5, 'lk: Gauss-Newton iterations (with warping) per level',
              min=1, max=100),
    ParamSpec('min_eigenvalue', 0.5,
              'lk: smaller eigenvalue of the window-averaged gradient tensor ((grey level/px)^2, '
              'intensities 0..255) below which a pixel is NaN in the output', min=0.0, max=1e6),
    ParamSpec('alpha', 5.0,
              'hs: smoothness weight alpha (energy data + alpha^2 * smoothness), grey levels '
              'per (px/px)', min=0.01, max=1e4),
    ParamSpec('warps', 3, 'hs: warping steps per pyramid level', min=1, max=50),
    ParamSpec('iterations', 40,
              'hs: red-black SOR sweeps per warping step (an upper bound, see tolerance)',
              min=1, max=2000),
    ParamSpec('sor_omega', 1.9, 'hs: over-relaxation factor of the SOR sweeps (1 = Gauss-Seidel)',
              min=0.1, max=1.99),
    ParamSpec('tolerance', 0.001,
              'hs: a warping step ends early once a device launch of sweeps (8) moved no pixel '
              'by more than this, px (0 = always run every sweep)', min=0.0, max=10.0),
    ParamSpec('data_epsilon', 2.0,
              'hs: Charbonnier scale of the data term, grey levels (large = quadratic)',
              min=0.001, max=1e6),
    ParamSpec('smooth_epsilon', 0.1,
              'hs: Charbonnier scale of the smoothness term, px/px (large = quadratic)',
              min=0.0001, max=1e6),
    ParamSpec('median_filter', True, 'hs: 5x5 median filter of the flow after every warping step'),
    ParamSpec('block_size', 8,
              "bm: block side, pixels (every pixel gets its block's vector)", min=2, max=32),
    ParamSpec('search_radius', 7, 'bm: full search over displacements within +-radius, pixels',
              min=1, max=32),
    ParamSpec('subpixel', True,
              'bm: parabola fit of the matching cost around the best displacement, per axis'),
    ParamSpec('dis_patch_size', 8, 'dis: side of the square patches, pixels (4, 8, 12 or 16)',
              min=4, max=16, step=4),
    ParamSpec('dis_patch_stride', 3,
              'dis: distance between neighbouring patches, pixels (at most dis_patch_size)',
              min=1, max=16),
    ParamSpec('dis_iterations', 25,
              'dis: inverse-compositional LK iterations per patch and level, split over two '
              'passes (the second starts from the best of the neighbouring patches)',
              min=2, max=200),
    ParamSpec('dis_finest_level', 1,
              'dis: finest pyramid level searched (0 = full resolution, 1 = half, ...); the '
              'flow is then upsampled to full resolution. The coarsest level follows from the '
              'image size as in OpenCV (largest motion about a quarter of the image)',
              min=0, max=8),
    ParamSpec('dis_refine_iterations', 5,
              'dis: fixed-point iterations of the variational refinement per level (0 = none), '
              'each with 5 red-black SOR sweeps', min=0, max=50),
    ParamSpec('dis_alpha', 20.0, 'dis: smoothness weight of the variational refinement',
              min=0.0, max=1e4),
    ParamSpec('dis_gamma', 10.0, 'dis: gradient constancy weight of the variational refinement',
              min=0.0, max=1e4),
    ParamSpec('dis_delta', 5.0, 'dis: brightness constancy weight of the variational refinement',
              min=0.0, max=1e4),
    ParamSpec('max_flow', 0.0,
              'Flow magnitude at full colour saturation in flow/color, px (0 = the frame maximum)',
              min=0.0, max=1e4),
    ParamSpec('max_span', 1.0,
              'Longest time between two processed frames (their stamps) to estimate flow across, '
              's; over it the node starts a new history and publishes no flow for that frame, '
              'counted in diagnostics (0 = no limit)', min=0.0, max=3600.0),
], checks=[_dis_stride_within_patch])

NODE_PARAMETERS: frozenset[str] = COMMON_NAMES | {'max_flow', 'max_span'}
"""Read by the nodes, not the estimator: max_flow (their colour picture, also ``cl-vision flow``'s)
and max_span (the longest gap between frames their stream of flows spans)."""


@dataclass(frozen=True)
class FlowSettings:
    """The algorithm parameters of FLOW_SCHEMA as typed attributes (validated values only)."""

    method: str
    pyramid_levels: int
    window_size: int
    window_sigma: float
    lk_iterations: int
    min_eigenvalue: float
    alpha: float
    warps: int
    iterations: int
    sor_omega: float
    tolerance: float
    data_epsilon: float
    smooth_epsilon: float
    median_filter: bool
    block_size: int
    search_radius: int
    subpixel: bool
    dis_patch_size: int
    dis_patch_stride: int
    dis_iterations: int
    dis_finest_level: int
    dis_refine_iterations: int
    dis_alpha: float
    dis_gamma: float
    dis_delta: float

    @classmethod
    def from_values(cls, values: Mapping[str, Value]) -> FlowSettings:
        """Typed view of a complete, validated parameter dict (``settings_from_values``)."""
        return settings_from_values(cls, values, NODE_PARAMETERS)
