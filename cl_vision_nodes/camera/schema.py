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

"""Parameters of rectify_node (and ``cl-vision rectify --param``)."""
from cl_vision_nodes.camera.rectify import INTERPOLATION_NUMBERS, INTERPOLATIONS
from cl_vision_nodes.params import common_specs, ParameterSchema, ParamSpec

RECTIFY_SCHEMA = ParameterSchema('rectify_node', [
    *common_specs(),
    ParamSpec('interpolation', 'linear',
              "How a rectified pixel samples the raw image, as cv2.remap (image_proc's numbers "
              'are taken too)',
              choices=tuple(INTERPOLATIONS), aliases=INTERPOLATION_NUMBERS),
])
