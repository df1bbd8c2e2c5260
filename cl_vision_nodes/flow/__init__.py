"""Dense optical flow in OpenCL (no ROS): pyramidal Lucas-Kanade, robust Horn-Schunck, block
matching; plus the evaluation metrics and the Middlebury colour wheel."""
from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.metrics import FlowErrors, flow_errors
from cl_vision_nodes.flow.schema import FLOW_SCHEMA, METHODS, FlowSettings

__all__ = ['FLOW_SCHEMA', 'METHODS', 'FlowErrors', 'FlowEstimator', 'FlowSettings',
           'flow_errors', 'flow_to_color']
