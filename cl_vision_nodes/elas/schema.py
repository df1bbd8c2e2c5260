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
Parameters of disparity_node (and ``cl-vision disparity --param``), and their typed view.

Every libelas parameter (``Elas::parameters`` in elas.h) is a parameter here under its libelas
name, with libelas' meaning; the defaults are libelas' ROBOTICS setting (presets.py holds both
settings). ``ElasMatcher`` reads them per frame, so a change applies to the next frame. The
stereo synchronisation parameters are those of stereo_image_proc's disparity_node and need a
restart (the node builds its subscriptions from them), as does ``rectify`` (raw inputs, which
the node rectifies itself). The point cloud parameters are those of stereo_image_proc's
point_cloud_node, plus ``dense_points``. ``color_min`` / ``color_max`` choose the range of
disparity/color, fixed or following the data (``colormap.color_range``).

Ranges: disparities are matched on 8-bit descriptors with int32 energies, so nothing in libelas
caps ``disp_max`` at 255; the device grid stores candidate disparities as bit masks and the
range is capped at 511 to keep a cell's mask in 16 words. libelas matches a support point only
if at least 10 disparities lie between ``disp_min`` and ``disp_max`` (with the image border),
so a narrower range is refused instead of silently producing an empty map.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
import math
from typing import Mapping

from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.params import (COMMON_NAMES, common_specs, ParameterSchema, ParamSpec,
                                    settings_from_values, Value)
import numpy as np

MAX_DISPARITY = 511
MIN_DISPARITY_RANGE = 10  # libelas: "assume that we can compute at least 10 disparities"


def _disparity_range(values: Mapping[str, Value]) -> None:
    low, high = int(values['disp_min']), int(values['disp_max'])
    if high - low < MIN_DISPARITY_RANGE:
        raise ParameterError(
            f'disp_min {low} / disp_max {high}: libelas needs disp_max - disp_min >= '
            f'{MIN_DISPARITY_RANGE} to match any support point')


def _finite(values: Mapping[str, Value]) -> None:
    for name in ('support_threshold', 'beta', 'gamma', 'sigma', 'sradius',
                 'speckle_sim_threshold', 'approximate_sync_tolerance_seconds'):
        if not math.isfinite(float(values[name])):
            raise ParameterError(f'{name}: {values[name]!r} is not a finite number')


ELAS_SCHEMA = ParameterSchema('disparity_node', [
    *common_specs(),
    ParamSpec('disp_min', 0, 'Smallest disparity searched for support points, px',
              min=0, max=MAX_DISPARITY - MIN_DISPARITY_RANGE),
    ParamSpec('disp_max', 255, 'Largest disparity searched, px', min=MIN_DISPARITY_RANGE,
              max=MAX_DISPARITY),
    ParamSpec('support_threshold', 0.85,
              'Max uniqueness ratio (best vs. second best support match energy)',
              min=0.0, max=1.0),
    ParamSpec('support_texture', 10,
              'Min texture of a support point (sum of |descriptor byte - 128|)', min=0, max=2048),
    ParamSpec('candidate_stepsize', 5, 'Step of the regular grid of support point candidates, px',
              min=1, max=64),
    ParamSpec('incon_window_size', 5,
              'Half size of the window of the inconsistent support point check, grid steps',
              min=0, max=32),
    ParamSpec('incon_threshold', 5,
              'Disparity difference for a neighbour to support a support point, px',
              min=0, max=MAX_DISPARITY),
    ParamSpec('incon_min_support', 5,
              'Min number of supporting neighbours (the point itself included)', min=0,
              max=65 * 65),
    ParamSpec('add_corners', False,
              "Add support points at the image corners with the nearest point's disparity"),
    ParamSpec('grid_size', 20,
              'Side of the cells of candidate disparities taken from nearby support points, px',
              min=1, max=1024),
    ParamSpec('beta', 0.02, 'Image likelihood parameter (energy units per prior unit)',
              min=1e-4, max=100.0),
    ParamSpec('gamma', 3.0, 'Prior constant (weight of the uniform part)', min=1e-4, max=1e4),
    ParamSpec('sigma', 1.0, 'Prior sigma around the support plane, px', min=0.01, max=100.0),
    ParamSpec('sradius', 2.0, 'Prior sigma radius: band +-max(ceil(sigma*sradius), 2) px',
              min=0.0, max=100.0),
    ParamSpec('match_texture', 1,
              'Min texture for dense matching (sum of |descriptor byte - 128|)', min=0,
              max=2048),
    ParamSpec('lr_threshold', 2, 'Disparity threshold of the left/right consistency checks, px',
              min=0, max=MAX_DISPARITY),
    ParamSpec('speckle_sim_threshold', 1.0,
              'Max disparity step between neighbours of one segment, px', min=0.0,
              max=float(MAX_DISPARITY)),
    ParamSpec('speckle_size', 200, 'Segments smaller than this (pixels) are removed', min=0,
              max=10_000_000),
    ParamSpec('ipol_gap_width', 3,
              'Fill invalid runs of up to this many pixels, left<->right then top<->bottom',
              min=0, max=100_000),
    ParamSpec('filter_median', False, 'Approximate 7x7 median filter (separable)'),
    ParamSpec('filter_adaptive_mean', True,
              'Approximate bilateral filter (libelas adaptive mean, separable, 8 taps)'),
    ParamSpec('postprocess_only_left', True,
              'Post-process only the left disparity map (the one published)'),
    ParamSpec('subsampling', False,
              'Compute every second pixel and row only: a W/2 x H/2 map'),
    ParamSpec('approximate_sync', False,
              'Pair left/right images and camera infos by approximate time instead of exact '
              'stamps (stereo_image_proc)', read_only=True),
    ParamSpec('queue_size', 5, 'Depth of the subscriptions and of the synchroniser queue',
              min=1, max=1000, read_only=True),
    ParamSpec('approximate_sync_tolerance_seconds', 0.0,
              'With approximate_sync: largest stamp difference within a set, s (0 = no bound, '
              "stereo_image_proc's default)", min=0.0, max=3600.0, read_only=True),
    ParamSpec('rectify', False,
              'Subscribe left/image_raw and right/image_raw instead of image_rect and rectify '
              'them on the device with their camera_infos (K, D, R, P), as image_proc would: '
              'raw pair to disparity in one process, one upload per image', read_only=True),
    replace(RECTIFY_SCHEMA.specs['interpolation'],
            description='With rectify: how a rectified pixel samples the raw image, as '
                        "rectify_node's interpolation"),
    ParamSpec('use_color', True,
              "points: add the rgb field (float32 holding 0x00RRGGBB, stereo_image_proc's "
              'packing) with the colours of the left image (its gray level if mono)'),
    ParamSpec('avoid_point_cloud_padding', False,
              "points: x, y, z (and rgb) without the padding to 16 bytes of PCL's point "
              'types: 12 (16) bytes a point instead of 16 (32), as stereo_image_proc'),
    ParamSpec('dense_points', False,
              'points: only the valid points, in image order, as one row (is_dense) instead '
              "of the organised cloud of the disparity map's shape with NaN where no point"),
    ParamSpec('color_min', 0.0,
              'disparity/color: disparity drawn in the first jet colour (dark blue), px; smaller '
              'valid ones take it too. color_max <= color_min (the defaults 0, 0) = the range '
              'follows the data: each frame from its smallest to its largest valid disparity',
              min=0.0, max=float(MAX_DISPARITY)),
    ParamSpec('color_max', 0.0,
              'disparity/color: disparity drawn in the last jet colour (dark red), px; larger '
              'ones take it too. color_max <= color_min = follow the data (see color_min)',
              min=0.0, max=float(MAX_DISPARITY)),
], checks=[_disparity_range, _finite])

NODE_PARAMETERS: frozenset[str] = COMMON_NAMES | {
    'approximate_sync', 'queue_size', 'approximate_sync_tolerance_seconds', 'rectify',
    'interpolation', 'use_color', 'avoid_point_cloud_padding', 'dense_points', 'color_min',
    'color_max'}
"""Read by disparity_node (synchronisation, rectification, points) and ``cl-vision disparity``
themselves, not by the matcher; color_min and color_max through ``colormap.color_range``."""


@dataclass(frozen=True)
class ElasSettings:
    """The libelas parameters of ELAS_SCHEMA as typed attributes, plus derived constants."""

    disp_min: int
    disp_max: int
    support_threshold: float
    support_texture: int
    candidate_stepsize: int
    incon_window_size: int
    incon_threshold: int
    incon_min_support: int
    add_corners: bool
    grid_size: int
    beta: float
    gamma: float
    sigma: float
    sradius: float
    match_texture: int
    lr_threshold: int
    speckle_sim_threshold: float
    speckle_size: int
    ipol_gap_width: int
    filter_median: bool
    filter_adaptive_mean: bool
    postprocess_only_left: bool
    subsampling: bool

    @classmethod
    def from_values(cls, values: Mapping[str, Value]) -> ElasSettings:
        """Typed view of a complete, validated parameter dict (``settings_from_values``)."""
        return settings_from_values(cls, values, NODE_PARAMETERS)

    @property
    def step(self) -> int:
        """Candidate step; even with subsampling so that support rows are computed rows."""
        step = self.candidate_stepsize
        return step + step % 2 if self.subsampling else step

    @property
    def plane_radius(self) -> int:
        """Half width of the band of disparities around the plane that gets the prior."""
        return int(max(math.ceil(np.float32(self.sigma) * np.float32(self.sradius)), 2.0))

    def prior(self) -> np.ndarray:
        """
        Return libelas' P[|d - d_plane|] (int32, energy bonus <= 0), computed in float as libelas.

        P[k] = (int)((-log(gamma + exp(-k^2 / (2 sigma^2))) + log(gamma)) / beta); one entry per
        disparity and at least plane_radius + 1 of them.
        """
        f32 = np.float32
        two_sigma_sq = f32(2) * f32(self.sigma) * f32(self.sigma)
        k = np.arange(max(self.disp_max + 1, self.plane_radius + 1), dtype=np.float32)
        with np.errstate(under='ignore'):
            value = (-np.log(f32(self.gamma) + np.exp(-(k * k) / two_sigma_sq))
                     + np.log(f32(self.gamma))) / f32(self.beta)
        return np.trunc(value.astype(np.float32)).astype(np.int32)

    @property
    def segment_size(self) -> int:
        """Min segment size on the computed map (libelas: sqrt(size) * 2 with subsampling)."""
        if not self.subsampling:
            return self.speckle_size
        return int(np.float32(np.sqrt(np.float32(self.speckle_size))) * np.float32(2))

    @property
    def gap_width(self) -> int:
        """Max gap on the computed map (libelas: width / 2 + 1 with subsampling)."""
        return self.ipol_gap_width // 2 + 1 if self.subsampling else self.ipol_gap_width
