"""disparity_node: ELAS stereo disparity of rectified pairs, on the OpenCL device.

Subscribes ``left/image_rect``, ``right/image_rect``, ``left/camera_info`` and
``right/camera_info`` (best effort), synchronised exactly by stamp, or approximately with
``approximate_sync`` as stereo_image_proc; publishes ``disparity`` (stereo_msgs/DisparityImage:
32FC1 in pixels, ``f`` = fx of the left camera, ``T`` = baseline from the right P, invalid pixels
below ``min_disparity``, ``valid_window`` = the bounding box of valid pixels) and
``disparity/color`` (only when subscribed).

With ``subsampling`` the published map is W/2 x H/2 and the DisparityImage describes that image:
its disparities, ``f``, ``min_disparity``, ``max_disparity`` and ``delta_d`` are in its pixels
(half those of the input), ``T`` is unchanged, so ``depth = f * T / d`` still holds and ``f``
matches the image as a camera_info with binning 2 would. A camera_info whose K or P is not
finite is refused frame by frame, with a throttled warning.
"""
from __future__ import annotations

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, Image
from stereo_msgs.msg import DisparityImage

from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.image_conversion import image_msg_to_raw, numpy_to_image
from cl_vision_nodes.ros.node_base import VisionNode, main_for
from cl_vision_nodes.ros.stereo_sync import StereoSynchronizer

# ELAS disparities are continuous after its adaptive-mean / interpolation steps; 1/16 px is
# the step stereo_image_proc reports for SGBM, which consumers already handle.
DELTA_D = 1.0 / 16.0
SUBSAMPLED_SCALE = 0.5  # subsampling computes pixel (2i, 2j) of the input as pixel (i, j)
INPUTS = ((Image, 'left/image_rect'), (Image, 'right/image_rect'),
          (CameraInfo, 'left/camera_info'), (CameraInfo, 'right/camera_info'))


def stereo_geometry(left: CameraInfo, right: CameraInfo) -> tuple[float, float]:
    """(f, T): fx of the left camera and the baseline T = -P_right[0,3] / P_right[0,0]."""
    for side, info in (('left', left), ('right', right)):
        for name, matrix in (('K', info.k), ('P', info.p)):
            if not np.isfinite(matrix).all():
                raise ImageFormatError(f'{side} camera_info {name} is not finite '
                                       f'({np.asarray(matrix).tolist()}): bad calibration')
    fx, tx = right.p[0], right.p[3]
    if left.p[0] <= 0 or fx <= 0:
        raise ImageFormatError('camera_info has no projection matrix P (fx = 0): the images '
                               'must be rectified and the camera calibrated')
    return float(left.p[0]), float(-tx / fx)


def valid_window(disparity: np.ndarray, invalid_below: float):
    """(x_offset, y_offset, width, height) of the smallest box holding every valid pixel."""
    valid = disparity >= invalid_below
    rows, cols = np.flatnonzero(valid.any(axis=1)), np.flatnonzero(valid.any(axis=0))
    if rows.size == 0:
        return 0, 0, 0, 0
    return int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


class DisparityNode(VisionNode):
    SCHEMA = ELAS_SCHEMA

    def build(self) -> None:
        self.matcher = ElasMatcher(self.runtime, self.params)

    def connect(self) -> None:
        self.disparity_pub = self.output_publisher(DisparityImage, 'disparity')
        self.color_pub = self.output_publisher(Image, 'disparity/color')
        depth = int(self.params['queue_size'])
        self.sync = StereoSynchronizer(
            len(INPUTS), self.on_stereo, queue_size=depth,
            approximate=bool(self.params['approximate_sync']),
            tolerance_ns=int(float(self.params['approximate_sync_tolerance_seconds']) * 1e9))
        for index, (msg_type, topic) in enumerate(INPUTS):
            self.subscribe_stream(msg_type, topic, self._input(index), depth)
        self._unmatched_reported = 0
        self.create_timer(5.0, self._report_unmatched)

    def on_parameters_changed(self, values: dict[str, Value], changed: set[str]) -> None:
        self.matcher.configure(values)

    def _input(self, index: int):
        def add(msg) -> None:
            self.sync.add(index, Time.from_msg(msg.header.stamp).nanoseconds, msg)
        return add

    def _report_unmatched(self) -> None:
        if self.sync.dropped > self._unmatched_reported:
            self.get_logger().warning(
                f'{self.sync.dropped - self._unmatched_reported} input messages found no '
                'partner in the last seconds: are left/right images and camera_infos published '
                'with identical stamps? (else set approximate_sync)',
                throttle_duration_sec=30.0)
            self._unmatched_reported = self.sync.dropped

    def on_stereo(self, left: Image, right: Image, left_info: CameraInfo,
                  right_info: CameraInfo) -> None:
        self.run_frame(lambda: self._disparity(left, right, left_info, right_info))

    def _disparity(self, left: Image, right: Image, left_info: CameraInfo,
                   right_info: CameraInfo) -> None:
        if (left.width, left.height, left.encoding) != (right.width, right.height, right.encoding):
            raise ImageFormatError(
                f'left is {left.width}x{left.height} {left.encoding} but right is '
                f'{right.width}x{right.height} {right.encoding}; expected a rectified pair')
        f, baseline = stereo_geometry(left_info, right_info)
        with self.compute():
            disparity = self.matcher.compute(image_msg_to_raw(left), image_msg_to_raw(right))
        scale = SUBSAMPLED_SCALE if self.params['subsampling'] else 1.0  # to the map's pixels
        disparity *= np.float32(scale)
        d_min = scale * float(self.params['disp_min'])
        d_max = scale * float(self.params['disp_max'])
        invalid = d_min - 1.0
        disparity[disparity < d_min] = invalid  # below min_disparity = invalid (DisparityImage)
        msg = DisparityImage(header=left.header, f=scale * f, t=baseline, min_disparity=d_min,
                             max_disparity=d_max, delta_d=scale * DELTA_D)
        msg.image = numpy_to_image(disparity, '32FC1', left.header)
        x, y, w, h = valid_window(disparity, d_min)
        msg.valid_window.x_offset, msg.valid_window.y_offset = x, y
        msg.valid_window.width, msg.valid_window.height = w, h
        self.disparity_pub.publish(msg)
        if self.wanted(self.color_pub):
            color = disparity_to_color(disparity, d_min, d_max)
            self.color_pub.publish(numpy_to_image(color, 'bgr8', left.header))


def main() -> None:
    main_for(DisparityNode)


if __name__ == '__main__':
    main()
