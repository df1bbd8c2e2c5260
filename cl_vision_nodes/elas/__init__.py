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
ELAS dense stereo (Geiger, Roser, Urtasun, ACCV 2010) in OpenCL, without ROS.

Every stage of libelas runs on the device; its parameters are in schema.py and its two presets in
presets.py.
"""
from cl_vision_nodes.elas.device import STAGES
from cl_vision_nodes.elas.matcher import ElasMatcher, INVALID_DISPARITY
from cl_vision_nodes.elas.presets import MIDDLEBURY, PRESETS, ROBOTICS
from cl_vision_nodes.elas.schema import ELAS_SCHEMA, ElasSettings

__all__ = ['ELAS_SCHEMA', 'INVALID_DISPARITY', 'MIDDLEBURY', 'PRESETS', 'ROBOTICS', 'STAGES',
           'ElasMatcher', 'ElasSettings']
