"""Camera geometry without ROS: calibrations (CameraInfo fields or the calibration YAML of camera
drivers), rectification maps as OpenCV computes them, and rectification on the OpenCL device."""
from cl_vision_nodes.camera.calibration import (CalibrationError, CameraCalibration,
                                                read_calibration_yaml)
from cl_vision_nodes.camera.rectify import INTERPOLATIONS, Rectifier
from cl_vision_nodes.camera.rectify_maps import rectify_maps
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA

__all__ = ['INTERPOLATIONS', 'RECTIFY_SCHEMA', 'CalibrationError', 'CameraCalibration',
           'Rectifier', 'read_calibration_yaml', 'rectify_maps']
