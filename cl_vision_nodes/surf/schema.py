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
Parameters of surf_node (and ``cl-vision surf --param``), and their typed view.

Defaults are OpenCV's ``SURF::create()`` defaults (hessianThreshold 100, nOctaves 4,
nOctaveLayers 3, extended false, upright false); the threshold is in OpenCV's units (determinant
of the box-filter Hessian with lobes divided by their area, intensities 0..255), so a value
tuned for OpenCV carries over. Every value is read per frame by ``SurfExtractor``: changes apply
to the next frame without a restart (only the common ``device``/``profile``/
``output_queue_size`` need one).

``max_keypoints`` has no OpenCV CPU counterpart (OpenCV's CUDA/OpenCL SURF cap at
``min(0.01 W H, 65535)``, dropping arbitrary candidates). Default 8000: above the 4746..5611
keypoints OpenCV itself returns at the default threshold on the 800x640 graf images, so the
defaults reproduce OpenCV there, while the per-frame cost and message size stay bounded
(8000 x 284 bytes = 2.3 MB with 64-d descriptors). The upper limit 65535 is OpenCV's GPU cap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from cl_vision_nodes.params import (COMMON_NAMES, common_specs, ParameterSchema, ParamSpec,
                                    settings_from_values, Value)

MAX_OCTAVES = 8
MAX_OCTAVE_LAYERS = 8
MAX_KEYPOINTS = 65535


SURF_SCHEMA = ParameterSchema('surf_node', [
    *common_specs(),
    ParamSpec('hessian_threshold', 100.0,
              'Keep maxima whose box-filter Hessian determinant exceeds this (OpenCV units: '
              'lobes divided by their area, intensities 0..255); larger = fewer keypoints',
              min=0.0, max=1e9),
    ParamSpec('n_octaves', 4,
              'Octaves of the scale space; octave o uses filter sizes (9 + 6 layer) * 2^o and '
              'samples every 2^o pixels', min=1, max=MAX_OCTAVES),
    ParamSpec('n_octave_layers', 3,
              'Layers per octave in which maxima are searched (each octave computes this + 2)',
              min=1, max=MAX_OCTAVE_LAYERS),
    ParamSpec('extended', False, 'Descriptors of 128 values (sums split by sign) instead of 64'),
    ParamSpec('upright', False,
              'Skip orientation (U-SURF): angle 270 degrees as in OpenCV, descriptors not '
              'rotated'),
    ParamSpec('max_keypoints', 8000,
              'At most this many keypoints per frame, the strongest (by response) kept',
              min=1, max=MAX_KEYPOINTS),
])

NODE_PARAMETERS: frozenset[str] = COMMON_NAMES
"""Read by surf_node and ``cl-vision surf`` themselves, not by the extractor."""


@dataclass(frozen=True)
class SurfSettings:
    """The algorithm parameters of SURF_SCHEMA as typed attributes (validated values only)."""

    hessian_threshold: float
    n_octaves: int
    n_octave_layers: int
    extended: bool
    upright: bool
    max_keypoints: int

    @classmethod
    def from_values(cls, values: Mapping[str, Value]) -> SurfSettings:
        """Typed view of a complete, validated parameter dict (``settings_from_values``)."""
        return settings_from_values(cls, values, NODE_PARAMETERS)

    @property
    def descriptor_length(self) -> int:
        return 128 if self.extended else 64
