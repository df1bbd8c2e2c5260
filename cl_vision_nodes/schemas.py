"""Every node's parameter schema, by node name: the source of config/*.yaml and README tables."""
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.schema import CONVERT_SCHEMA
from cl_vision_nodes.surf.schema import SURF_SCHEMA
from cl_vision_nodes.params import ParameterSchema

NODE_SCHEMAS: dict[str, ParameterSchema] = {
    schema.node_name: schema
    for schema in (CONVERT_SCHEMA, FLOW_SCHEMA, SURF_SCHEMA, ELAS_SCHEMA, RECTIFY_SCHEMA)
}
