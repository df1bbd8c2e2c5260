"""ELAS dense stereo (Geiger, Roser, Urtasun, ACCV 2010) in OpenCL, without ROS: every stage of
libelas on the device, its parameters (schema.py) and its two presets (presets.py)."""
from cl_vision_nodes.elas.device import STAGES
from cl_vision_nodes.elas.matcher import INVALID_DISPARITY, ElasMatcher
from cl_vision_nodes.elas.presets import MIDDLEBURY, PRESETS, ROBOTICS
from cl_vision_nodes.elas.schema import ELAS_SCHEMA, ElasSettings

__all__ = ['ELAS_SCHEMA', 'INVALID_DISPARITY', 'MIDDLEBURY', 'PRESETS', 'ROBOTICS', 'STAGES',
           'ElasMatcher', 'ElasSettings']
