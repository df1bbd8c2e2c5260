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
libelas' two parameter settings (``Elas::parameters(setting)`` in elas.h) as parameter values.

ROBOTICS (the schema defaults) leaves half-occluded areas invalid and is a bit more robust to
lighting; MIDDLEBURY interpolates every gap and adds corner support points, for a dense map.
The config YAML files are generated from these dicts.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from cl_vision_nodes.params import Value

ROBOTICS: Mapping[str, Value] = MappingProxyType({
    'disp_min': 0,
    'disp_max': 255,
    'support_threshold': 0.85,
    'support_texture': 10,
    'candidate_stepsize': 5,
    'incon_window_size': 5,
    'incon_threshold': 5,
    'incon_min_support': 5,
    'add_corners': False,
    'grid_size': 20,
    'beta': 0.02,
    'gamma': 3.0,
    'sigma': 1.0,
    'sradius': 2.0,
    'match_texture': 1,
    'lr_threshold': 2,
    'speckle_sim_threshold': 1.0,
    'speckle_size': 200,
    'ipol_gap_width': 3,
    'filter_median': False,
    'filter_adaptive_mean': True,
    'postprocess_only_left': True,
    'subsampling': False,
})

MIDDLEBURY: Mapping[str, Value] = MappingProxyType({
    **ROBOTICS,
    'support_threshold': 0.95,
    'add_corners': True,
    'gamma': 5.0,
    'sradius': 3.0,
    'match_texture': 0,
    'ipol_gap_width': 5000,
    'filter_median': True,
    'filter_adaptive_mean': False,
    'postprocess_only_left': False,
})

PRESETS: Mapping[str, Mapping[str, Value]] = MappingProxyType({
    'robotics': ROBOTICS,
    'middlebury': MIDDLEBURY,
})
