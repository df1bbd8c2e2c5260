"""SURF keypoints and descriptors in OpenCL (no ROS), following OpenCV's SURF conventions;
plus the evaluation measures (fidelity to OpenCV, repeatability, matching score)."""
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.keypoints import Keypoints, point_dtype
from cl_vision_nodes.surf.schema import SURF_SCHEMA, SurfSettings

__all__ = ['SURF_SCHEMA', 'Keypoints', 'SurfExtractor', 'SurfSettings', 'point_dtype']
