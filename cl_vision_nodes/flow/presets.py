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
OpenCV's three DIS presets (``DISOpticalFlow::create``) as flow_node parameter values.

So that ``dis`` and OpenCV's DIS are compared like for like: patch size, stride, descent
iterations, finest level and refinement iterations as OpenCV sets them (its refinement weights,
alpha 20, gamma 10, delta 5, are the schema defaults). MEDIUM is the schema's default.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from cl_vision_nodes.params import Value

ULTRAFAST: Mapping[str, Value] = MappingProxyType({
    'method': 'dis',
    'dis_patch_size': 8,
    'dis_patch_stride': 4,
    'dis_iterations': 12,
    'dis_finest_level': 2,
    'dis_refine_iterations': 0,
})

FAST: Mapping[str, Value] = MappingProxyType({
    **ULTRAFAST,
    'dis_iterations': 16,
    'dis_refine_iterations': 5,
})

MEDIUM: Mapping[str, Value] = MappingProxyType({
    **ULTRAFAST,
    'dis_patch_stride': 3,
    'dis_iterations': 25,
    'dis_finest_level': 1,
    'dis_refine_iterations': 5,
})

DIS_PRESETS: Mapping[str, Mapping[str, Value]] = MappingProxyType({
    'ultrafast': ULTRAFAST,
    'fast': FAST,
    'medium': MEDIUM,
})
