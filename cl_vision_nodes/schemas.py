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
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.schema import CONVERT_SCHEMA
from cl_vision_nodes.params import ParameterSchema
from cl_vision_nodes.surf.schema import SURF_SCHEMA

NODE_SCHEMAS: dict[str, ParameterSchema] = {
    schema.node_name: schema
    for schema in (CONVERT_SCHEMA, FLOW_SCHEMA, SURF_SCHEMA, ELAS_SCHEMA, RECTIFY_SCHEMA)
}
