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
Topics, frames and camera conventions of the dataset bags.

`cl-vision make-bag` writes them, `cl-vision eval` reads them and records the nodes' answers next
to them.

Inputs, under the camera namespace ``/camera``:

| topic | type | content |
|---|---|---|
| `/camera/left/image_rect` | sensor_msgs/Image | rectified left image, mono8 |
| `/camera/right/image_rect` | sensor_msgs/Image | rectified right image, mono8 |
| `/camera/left/camera_info` | sensor_msgs/CameraInfo | left camera, P[0,3] = 0 |
| `/camera/right/camera_info` | sensor_msgs/CameraInfo | right camera, P[0,3] = -fx * baseline |
| `/camera/ground_truth/disparity` | sensor_msgs/Image | 32FC1 px, left grid, x_R = x_L - d |
| `/camera/ground_truth/flow` | sensor_msgs/Image | 32FC2 (u, v) px, previous left -> this |
| `/camera/ground_truth/homography` | std_msgs/Float64MultiArray | 3x3 row-major, first -> this |

Mono data sets have only the ``left`` topics. The flow is on the previous frame's grid
(Middlebury ``flow10`` convention, what flow_node publishes); the homography maps the FIRST
frame's pixels to this frame's. Ground truth is NaN wherever it is unknown or the pixel cannot
be matched (occluded or out of view: KITTI ``disp_noc``, the Cones mask, the synthetic ``valid``
mask), so an evaluator needs no other mask.

Every message of one frame carries the same header stamp and is logged at that bag time; the
homography, having no header, is tied to its frame by that bag time. Stamps increase by 1 / rate
from 1 s (a zero stamp reads as "unset" to many tools). Frames are ``camera_left_optical_frame``
and ``camera_right_optical_frame`` (ground-truth images are on the left frame).

Camera infos describe rectified cameras: ``plumb_bob`` with zero distortion, R = identity,
K = P[:3,:3] with fx = fy and the principal point at the image centre; fx and the baseline come
from the data set where known (KITTI: 721.5377 px, 0.54 m), otherwise fx = image width and a
0.1 m baseline.

Outputs recorded by `cl-vision eval` (the nodes run in ``/camera/left`` for flow and SURF,
``/camera`` for stereo, so no output topic needs a remap):

| topic | type | node |
|---|---|---|
| `/camera/left/flow`, `/camera/left/flow/color` | sensor_msgs/Image (32FC2, bgr8) | flow_node |
| `/camera/left/keypoints` | sensor_msgs/PointCloud2 | surf_node |
| `/camera/left/keypoints/image` | sensor_msgs/Image (bgr8) | surf_node |
| `/camera/disparity` | stereo_msgs/DisparityImage | disparity_node |
| `/camera/disparity/color` | sensor_msgs/Image (bgr8) | disparity_node |
| `/diagnostics` | diagnostic_msgs/DiagnosticArray | every node |
"""
from __future__ import annotations

from dataclasses import dataclass

CAMERA_NAMESPACE = '/camera'
LEFT_NAMESPACE = f'{CAMERA_NAMESPACE}/left'
RIGHT_NAMESPACE = f'{CAMERA_NAMESPACE}/right'

LEFT_IMAGE = f'{LEFT_NAMESPACE}/image_rect'
RIGHT_IMAGE = f'{RIGHT_NAMESPACE}/image_rect'
LEFT_INFO = f'{LEFT_NAMESPACE}/camera_info'
RIGHT_INFO = f'{RIGHT_NAMESPACE}/camera_info'
GT_DISPARITY = f'{CAMERA_NAMESPACE}/ground_truth/disparity'
GT_FLOW = f'{CAMERA_NAMESPACE}/ground_truth/flow'
GT_HOMOGRAPHY = f'{CAMERA_NAMESPACE}/ground_truth/homography'

LEFT_FRAME = 'camera_left_optical_frame'
RIGHT_FRAME = 'camera_right_optical_frame'

IMAGE_ENCODING = 'mono8'

IMAGE_TYPE = 'sensor_msgs/msg/Image'
CAMERA_INFO_TYPE = 'sensor_msgs/msg/CameraInfo'
HOMOGRAPHY_TYPE = 'std_msgs/msg/Float64MultiArray'

INPUT_TYPES = {
    LEFT_IMAGE: IMAGE_TYPE, RIGHT_IMAGE: IMAGE_TYPE,
    LEFT_INFO: CAMERA_INFO_TYPE, RIGHT_INFO: CAMERA_INFO_TYPE,
    GT_DISPARITY: IMAGE_TYPE, GT_FLOW: IMAGE_TYPE, GT_HOMOGRAPHY: HOMOGRAPHY_TYPE,
}
"""Every topic a dataset bag may hold, with its message type."""

STEREO_INPUTS = (LEFT_IMAGE, RIGHT_IMAGE, LEFT_INFO, RIGHT_INFO)
GROUND_TRUTH = (GT_DISPARITY, GT_FLOW, GT_HOMOGRAPHY)

FLOW_OUTPUT = f'{LEFT_NAMESPACE}/flow'
FLOW_COLOR_OUTPUT = f'{LEFT_NAMESPACE}/flow/color'
KEYPOINTS_OUTPUT = f'{LEFT_NAMESPACE}/keypoints'
KEYPOINTS_IMAGE_OUTPUT = f'{LEFT_NAMESPACE}/keypoints/image'
DISPARITY_OUTPUT = f'{CAMERA_NAMESPACE}/disparity'
DISPARITY_COLOR_OUTPUT = f'{CAMERA_NAMESPACE}/disparity/color'
DIAGNOSTICS = '/diagnostics'

START_NS = 1_000_000_000
DEFAULT_BASELINE_M = 0.1
KITTI_FX = 721.5377
KITTI_BASELINE_M = 0.54


@dataclass(frozen=True)
class StereoCamera:
    """The rectified camera pair of a data set; ``fx`` None means "the image width"."""

    fx: float | None = None
    baseline_m: float = DEFAULT_BASELINE_M

    def focal(self, width: int) -> float:
        return float(width) if self.fx is None else self.fx

    def projection(self, width: int, height: int, right: bool) -> list[float]:
        """
        Row-major 3x4 P; the right camera's P[0,3] = -fx * baseline.

        That is stereo_image_proc's convention, from which the disparity node takes its baseline.
        """
        fx = self.focal(width)
        cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
        tx = -fx * self.baseline_m if right else 0.0
        return [fx, 0.0, cx, tx, 0.0, fx, cy, 0.0, 0.0, 0.0, 1.0, 0.0]


KITTI_CAMERA = StereoCamera(KITTI_FX, KITTI_BASELINE_M)
