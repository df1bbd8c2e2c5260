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
sensor_msgs/CameraInfo -> the calibration, read field by field: rclpy's messages or a bag's.

``CameraCalibration`` validates K, D, R and P; what it cannot express is refused here: binning
and a region of interest (image_geometry rescales and shifts K and P for them; a node that
ignored them would rectify with the wrong maps).
"""
from __future__ import annotations

from typing import Any

from cl_vision_nodes.camera.calibration import CalibrationError, CameraCalibration

CameraInfo = Any
"""A sensor_msgs/CameraInfo: rclpy's in the nodes, rosbags' in eval and tune (no ROS there)."""


def _full_frame(info: CameraInfo) -> bool:
    roi = info.roi
    whole = roi.width in (0, info.width) and roi.height in (0, info.height)
    return whole and roi.x_offset == 0 and roi.y_offset == 0


def calibration_from_msg(info: CameraInfo, side: str = '') -> CameraCalibration:
    """
    Return the calibration of a CameraInfo.

    CalibrationError (naming ``side``, e.g. 'left', and the problem) for a camera that is not
    calibrated, a bad matrix, binning or a region of interest.
    """
    where = f'{side} camera_info' if side else 'camera_info'
    if info.binning_x > 1 or info.binning_y > 1 or not _full_frame(info):
        raise CalibrationError(
            f'{where} has binning {info.binning_x}x{info.binning_y} / roi '
            f'{info.roi.x_offset},{info.roi.y_offset} {info.roi.width}x{info.roi.height}: '
            'only full-resolution, full-frame images can be rectified')
    try:
        return CameraCalibration.from_fields(
            info.width, info.height, info.distortion_model, info.d, info.k, info.r, info.p,
            info.header.frame_id)
    except CalibrationError as exc:
        raise CalibrationError(f'{where}: {exc}') from None
