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

"""Every node's parameter schema, by node name: the source of config/*.yaml and README tables."""
from typing import Mapping

from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.schema import CONVERT_SCHEMA
from cl_vision_nodes.params import (common_specs, namespaced, namespaced_checks, ParameterSchema,
                                    ParamSpec, Value)
from cl_vision_nodes.surf.schema import SURF_SCHEMA

CAPABILITIES: dict[str, ParameterSchema] = {
    'flow': FLOW_SCHEMA, 'surf': SURF_SCHEMA, 'disparity': ELAS_SCHEMA}
"""The pipeline's capabilities: the namespace of each and the schema of its separate node."""


def _disparity_needs_stereo(values: Mapping[str, Value]) -> None:
    if values['disparity.enabled'] and not values['stereo']:
        raise ParameterError('disparity.enabled needs stereo inputs: set stereo to true (a '
                             'read-only parameter: restart the node) or disparity.enabled to '
                             'false')


PIPELINE_SCHEMA = ParameterSchema('vision_pipeline', [
    *common_specs(),
    ParamSpec('stereo', True,
              "Inputs: true = disparity_node's (left/right images and camera_infos, flow and "
              'SURF on the left image), false = one camera on image (no disparity)',
              read_only=True),
    *[ParamSpec(f'{name}.enabled', True,
                f'Run {name} (and publish its topics); off and on while running')
      for name in CAPABILITIES],
    *[spec for name, schema in CAPABILITIES.items() for spec in namespaced(name, schema)],
], checks=[_disparity_needs_stereo,
           *[check for name, schema in CAPABILITIES.items()
             for check in namespaced_checks(name, schema)]])

NODE_SCHEMAS: dict[str, ParameterSchema] = {
    schema.node_name: schema
    for schema in (CONVERT_SCHEMA, FLOW_SCHEMA, SURF_SCHEMA, ELAS_SCHEMA, RECTIFY_SCHEMA,
                   PIPELINE_SCHEMA)
}
