"""Parameters of rectify_node (and ``cl-vision rectify --param``)."""
from cl_vision_nodes.camera.rectify import INTERPOLATIONS
from cl_vision_nodes.params import ParameterSchema, ParamSpec, common_specs

RECTIFY_SCHEMA = ParameterSchema('rectify_node', [
    *common_specs(),
    ParamSpec('interpolation', 'linear',
              "How a rectified pixel samples the raw image, as cv2.remap (image_proc's "
              'interpolation 0, 1, 2): nearest, linear or cubic', choices=tuple(INTERPOLATIONS)),
])
