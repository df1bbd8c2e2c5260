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

"""
Camera geometry without ROS: calibrations, rectification maps and device rectification.

Calibrations come from CameraInfo fields or the calibration YAML of camera drivers; the
rectification maps are computed as OpenCV computes them, and rectification runs on the OpenCL
device.
"""
from cl_vision_nodes.camera.calibration import (CalibrationError, CameraCalibration,
                                                read_calibration_yaml)
from cl_vision_nodes.camera.rectify import INTERPOLATIONS, Rectifier
from cl_vision_nodes.camera.rectify_maps import rectify_maps
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA

__all__ = ['INTERPOLATIONS', 'RECTIFY_SCHEMA', 'CalibrationError', 'CameraCalibration',
           'Rectifier', 'read_calibration_yaml', 'rectify_maps']
