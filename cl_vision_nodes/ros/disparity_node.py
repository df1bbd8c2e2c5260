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
disparity_node: ELAS stereo on the OpenCL device, from a pair to disparity, depth and points.

The pair is rectified or raw: image_proc's rectify, stereo_image_proc's disparity_node and
point_cloud_node in one process.

Subscribes ``left/image_rect``, ``right/image_rect``, ``left/camera_info`` and
``right/camera_info`` (best effort), synchronised exactly by stamp, or approximately with
``approximate_sync`` as stereo_image_proc. With ``rectify`` it subscribes ``left/image_raw`` and
``right/image_raw`` instead and rectifies them on the device with their camera_infos (K, D, R,
P; maps built when a calibration changes): one upload per image, the rectified gray written
straight into the matcher's inputs. The left image may be colour (bgr8, rgb8, bgra8, rgba8,
Bayer): matching runs on its gray, the cloud takes its colours.

Publishes, every output with the left image's header (its optical frame and the pair's stamp):
- ``disparity`` (stereo_msgs/DisparityImage: 32FC1 in pixels, ``f`` = fx of the left camera,
  ``T`` = baseline from the right P, invalid pixels below ``min_disparity``, ``valid_window`` =
  the bounding box of valid pixels) and ``disparity/color`` (only when subscribed);
- ``depth`` (32FC1 metres, REP 118: NaN where there is no depth, +inf at infinity) and
  ``points`` (PointCloud2 x, y, z float32 [+ rgb] in the left rectified camera frame, as
  stereo_image_proc's point_cloud_node packs it): computed on the device from the map where it
  lies, each only while subscribed. Depth uses f, T and the principal-point difference of the
  two P matrices, as stereo_image_proc.

With ``subsampling`` the published map is W/2 x H/2 and the DisparityImage describes that image:
its disparities, ``f``, ``min_disparity``, ``max_disparity`` and ``delta_d`` are in its pixels
(half those of the input), ``T`` is unchanged, so ``depth = f * T / d`` still holds and ``f``
matches the image as a camera_info with binning 2 would; ``depth`` and ``points`` are of the
half-size map too. A camera_info whose K or P is not finite is refused frame by frame, with a
throttled warning.
"""
from __future__ import annotations

from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import RawImage, validate
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.camera_info import calibration_from_msg
from cl_vision_nodes.ros.image_conversion import image_msg_to_raw, numpy_to_image
from cl_vision_nodes.ros.node_base import main_for, VisionNode
from cl_vision_nodes.ros.stereo_sync import StereoSynchronizer
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout, PointCloud
from cl_vision_nodes.stereo.reproject import COLOR_KINDS, DisparityMap, Reprojector
import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField
from std_msgs.msg import Header
from stereo_msgs.msg import DisparityImage

# ELAS disparities are continuous after its adaptive-mean / interpolation steps; 1/16 px is
# the step stereo_image_proc reports for SGBM, which consumers already handle.
DELTA_D = 1.0 / 16.0
SUBSAMPLED_SCALE = 0.5  # subsampling computes pixel (2i, 2j) of the input as pixel (i, j)
RECTIFIED_IMAGES = ('left/image_rect', 'right/image_rect')
RAW_IMAGES = ('left/image_raw', 'right/image_raw')
CAMERA_INFOS = ('left/camera_info', 'right/camera_info')
SIDES = ('left', 'right')


def stereo_geometry(left: CameraInfo, right: CameraInfo) -> tuple[float, float]:
    """(f, T): fx of the left camera and the baseline T = -P_right[0,3] / P_right[0,0]."""
    for side, info in zip(SIDES, (left, right)):
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


def cloud_msg(cloud: PointCloud, header: Header) -> PointCloud2:
    """Return the PointCloud2 of a device-made cloud: its bytes go in with one copy."""
    msg = PointCloud2(header=header, height=cloud.height, width=cloud.width,
                      fields=[PointField(name=f.name, offset=f.offset, datatype=f.datatype,
                                         count=f.count) for f in cloud.layout.fields],
                      is_bigendian=False, point_step=cloud.point_step, row_step=cloud.row_step,
                      is_dense=cloud.is_dense)
    msg.data.frombytes(cloud.data)
    return msg


def check_cloud_colour(raw: RawImage) -> None:
    """
    Raise ImageFormatError for a left image that cannot colour a cloud.

    It is checked before anything of the frame is published.
    """
    info = validate(raw)
    if info.kind not in COLOR_KINDS:
        raise ImageFormatError(f'left image is {info.name}, which cannot colour the points; '
                               'expected mono, bgr8, rgb8, bgra8, rgba8 or Bayer (or set '
                               'use_color to false)')


class DisparityNode(VisionNode):
    SCHEMA = ELAS_SCHEMA

    def build(self) -> None:
        self.matcher = ElasMatcher(self.runtime, self.params)
        self.reprojector = Reprojector(self.runtime)
        self.rectifiers: tuple[Rectifier, Rectifier] | None = \
            (Rectifier(self.runtime), Rectifier(self.runtime)) if self.params['rectify'] else None

    def connect(self) -> None:
        self.disparity_pub = self.output_publisher(DisparityImage, 'disparity')
        self.color_pub = self.output_publisher(Image, 'disparity/color')
        self.depth_pub = self.output_publisher(Image, 'depth')
        self.points_pub = self.output_publisher(PointCloud2, 'points')
        depth = int(self.params['queue_size'])
        images = RAW_IMAGES if self.rectifiers else RECTIFIED_IMAGES
        inputs = [(Image, topic) for topic in images] + [(CameraInfo, t) for t in CAMERA_INFOS]
        self.sync = StereoSynchronizer(
            len(inputs), self.on_stereo, queue_size=depth,
            approximate=bool(self.params['approximate_sync']),
            tolerance_ns=int(float(self.params['approximate_sync_tolerance_seconds']) * 1e9))
        for index, (msg_type, topic) in enumerate(inputs):
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
        self.run_frame(lambda: self._stereo(left, right, left_info, right_info))

    def _stereo(self, left: Image, right: Image, left_info: CameraInfo,
                right_info: CameraInfo) -> None:
        f, baseline = stereo_geometry(left_info, right_info)
        want_depth, want_points = self.wanted(self.depth_pub), self.wanted(self.points_pub)
        geometry = StereoGeometry.from_projections(left_info.p, right_info.p) \
            if want_depth or want_points else None
        colour = want_points and bool(self.params['use_color'])
        left_raw, right_raw = image_msg_to_raw(left), image_msg_to_raw(right)
        with self.compute():
            if self.rectifiers is None:
                if (left.width, left.height) != (right.width, right.height):
                    raise ImageFormatError(
                        f'left is {left.width}x{left.height} {left.encoding} but right is '
                        f'{right.width}x{right.height} {right.encoding}; expected a rectified '
                        'pair of one size')
                disparity = self.matcher.compute(left_raw, right_raw)
                colour_image = left_raw
            else:
                disparity = self._rectify_and_match(left_raw, right_raw, left_info, right_info)
                colour_image = self.rectifiers[0].rectify(
                    left_raw, str(self.params['interpolation'])) if colour else None
        if colour:
            check_cloud_colour(colour_image)
        self._publish_disparity(disparity, f, baseline, left.header)
        if geometry is None:
            return
        rows, cols = disparity.shape
        device_map = DisparityMap(self.matcher.last_output, cols, rows,
                                  float(self.params['disp_min']), bool(self.params['subsampling']))
        with self.compute():
            depth = self.reprojector.depth(device_map, geometry) if want_depth else None
            cloud = self.reprojector.points(
                device_map, geometry,
                CloudLayout(colour, bool(self.params['avoid_point_cloud_padding'])),
                dense=bool(self.params['dense_points']),
                color=colour_image if colour else None) if want_points else None
        if depth is not None:
            self.depth_pub.publish(numpy_to_image(depth, '32FC1', left.header))
        if cloud is not None:
            self.points_pub.publish(cloud_msg(cloud, left.header))

    def _rectify_and_match(self, left: RawImage, right: RawImage, left_info: CameraInfo,
                           right_info: CameraInfo) -> np.ndarray:
        """Rectify both raw images on the device into the matcher's inputs and match them."""
        calibrations = [calibration_from_msg(info, side)
                        for info, side in zip((left_info, right_info), SIDES)]
        size = calibrations[0].width, calibrations[0].height
        if (calibrations[1].width, calibrations[1].height) != size:
            raise ImageFormatError(
                f'left camera_info is for {size[0]}x{size[1]} images, right camera_info for '
                f'{calibrations[1].width}x{calibrations[1].height}: ELAS matches a pair of '
                'one size')
        interpolation = str(self.params['interpolation'])
        inputs = self.matcher.input_buffers(*size)
        for side, rectifier, calibration, raw, out in zip(SIDES, self.rectifiers, calibrations,
                                                          (left, right), inputs):
            if rectifier.set_calibration(calibration):
                self.get_logger().info(f'{side}: rectification maps of {calibration.describe()}')
            rectifier.rectify_gray(raw, out=out, interpolation=interpolation)
        return self.matcher.compute_loaded(*size)

    def _publish_disparity(self, disparity: np.ndarray, f: float, baseline: float,
                           header: Header) -> None:
        scale = SUBSAMPLED_SCALE if self.params['subsampling'] else 1.0  # to the map's pixels
        disparity *= np.float32(scale)
        d_min = scale * float(self.params['disp_min'])
        d_max = scale * float(self.params['disp_max'])
        invalid = d_min - 1.0
        disparity[disparity < d_min] = invalid  # below min_disparity = invalid (DisparityImage)
        msg = DisparityImage(header=header, f=scale * f, t=baseline, min_disparity=d_min,
                             max_disparity=d_max, delta_d=scale * DELTA_D)
        msg.image = numpy_to_image(disparity, '32FC1', header)
        x, y, w, h = valid_window(disparity, d_min)
        msg.valid_window.x_offset, msg.valid_window.y_offset = x, y
        msg.valid_window.width, msg.valid_window.height = w, h
        self.disparity_pub.publish(msg)
        if self.wanted(self.color_pub):
            color = disparity_to_color(disparity, d_min, d_max)
            self.color_pub.publish(numpy_to_image(color, 'bgr8', header))


def main() -> None:
    main_for(DisparityNode)


if __name__ == '__main__':
    main()
