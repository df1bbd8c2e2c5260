"""Parameters of convert_node (declared by the node, documented in README and config/)."""
from cl_vision_nodes.imaging.device_image import OUTPUT_ENCODINGS
from cl_vision_nodes.params import ParameterSchema, ParamSpec, common_specs

CONVERT_SCHEMA = ParameterSchema('convert_node', [
    *common_specs(),
    ParamSpec('output_encoding', 'mono8',
              'mono8 or 32FC1 gray (BT.601, Bayer demosaiced, YUV luma), or passthrough: the '
              'input encoding with packed little-endian rows', choices=OUTPUT_ENCODINGS),
    ParamSpec('gain', 1.0, 'Multiplier applied to gray output (mono8 saturates at 255)',
              min=0.0, max=255.0),
])
