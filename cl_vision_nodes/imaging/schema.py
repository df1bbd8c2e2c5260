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

"""Parameters of convert_node (declared by the node, documented in README and config/)."""
from cl_vision_nodes.imaging.device_image import OUTPUT_ENCODINGS
from cl_vision_nodes.params import common_specs, ParameterSchema, ParamSpec

CONVERT_SCHEMA = ParameterSchema('convert_node', [
    *common_specs(),
    ParamSpec('output_encoding', 'mono8',
              'mono8 or 32FC1 gray (BT.601, Bayer demosaiced, YUV luma), or passthrough: the '
              'input encoding with packed little-endian rows', choices=OUTPUT_ENCODINGS),
    ParamSpec('gain', 1.0, 'Multiplier applied to gray output (mono8 saturates at 255)',
              min=0.0, max=255.0),
])
