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
What disparity_node does with a stereo set, for disparity_node and the pipeline node alike.

The pair is rectified (decoded on the device) or raw (``rectify``: rectified on the device with
the camera_infos' K, D, R, P; maps built when a calibration changes): one upload per image, the
gray written straight into the matcher's inputs. The left image may be colour (bgr8, rgb8,
bgra8, rgba8, Bayer): matching runs on its gray, the cloud takes its colours.

Publishes, every output with the left image's header (its optical frame and the pair's stamp):
- ``disparity`` (stereo_msgs/DisparityImage: 32FC1 in pixels, ``f`` = fx of the left camera,
  ``T`` = baseline from the right P, invalid pixels below ``min_disparity``, ``valid_window`` =
  the bounding box of valid pixels) and ``disparity/color`` (drawn on the device, only when
  subscribed; its range follows the data or ``color_min``/``color_max``);
- ``depth`` (32FC1 metres, REP 118: NaN where there is no depth, +inf at infinity) and
  ``points`` (PointCloud2 x, y, z float32 [+ rgb] in the left rectified camera frame, as
  stereo_image_proc's point_cloud_node packs it): computed on the device from the map where it
  lies, each only while subscribed. Depth uses f, T and the principal-point difference of the
  two P matrices, as stereo_image_proc.

With ``subsampling`` the published map is W/2 x H/2 and the DisparityImage describes that image:
its disparities, ``f``, ``min_disparity``, ``max_disparity`` and ``delta_d`` are in its pixels
(half those of the input), ``T`` is unchanged, so ``depth = f * T / d`` still holds and ``f``
matches the image as a camera_info with binning 2 would; ``depth`` and ``points`` are of the
half-size map too. A camera_info whose K or P is not finite is refused frame by frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.elas.colormap import color_range, DisparityColorizer
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import RawImage, validate
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.camera_info import calibration_from_msg
from cl_vision_nodes.ros.cdr import cloud_framing, disparity_framing
from cl_vision_nodes.ros.node_port import (CapabilityPort, Finish, Followup, ImageFrame,
                                           nothing_more)
from cl_vision_nodes.ros.topics import Topic
from cl_vision_nodes.stereo.disparity_image import DisparityImageMaker
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout
from cl_vision_nodes.stereo.reproject import COLOR_KINDS, DisparityMap, Reprojector
import numpy as np
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

# ELAS disparities are continuous after its adaptive-mean / interpolation steps; 1/16 px is
# the step stereo_image_proc reports for SGBM, which consumers already handle.
DELTA_D = 1.0 / 16.0
SUBSAMPLED_SCALE = 0.5  # subsampling computes pixel (2i, 2j) of the input as pixel (i, j)
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


@dataclass(frozen=True)
class Matched:
    """A pair whose matching is enqueued, and what its finish publishes."""

    left: ImageFrame
    left_info: CameraInfo
    right_info: CameraInfo
    rows: int
    cols: int
    f: float
    baseline: float
    picture: bool
    depth: bool
    points: bool
    colour_image: RawImage | None  # the cloud's colours, when it has them


class DisparityCapability:
    """ELAS disparity of synchronised pairs, with depth, points and the colour map."""

    OUTPUTS = (Topic('disparity', DisparityImage), Topic('disparity/color', Image),
               Topic('depth', Image), Topic('points', PointCloud2))

    def __init__(self, port: CapabilityPort, runtime: ClRuntime, images: DeviceImages,
                 values: Mapping[str, Value], prefix: str = ''):
        """
        Build matcher, reprojector and (with ``rectify``) rectifiers on ``runtime``.

        ``images`` decodes the pair where it is not rectified (the node's, shared with its other
        capabilities); stages are named ``prefix*``.
        """
        self.port = port
        self.images = images
        self.prefix = prefix
        self.values = dict(values)
        self.runtime = runtime
        self.matcher = ElasMatcher(runtime, values)
        self.reprojector = Reprojector(runtime)
        self.colorizer = DisparityColorizer(runtime)
        self.maker = DisparityImageMaker(runtime)
        self.staging = runtime.buffers()
        self.rectifiers: tuple[Rectifier, Rectifier] | None = \
            (Rectifier(runtime), Rectifier(runtime)) if values['rectify'] else None

    def connect(self) -> None:
        self.disparity_pub, self.color_pub, self.depth_pub, self.points_pub = map(
            self.port.output, self.OUTPUTS)

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next frame on (CLVisionError refuses them)."""
        self.matcher.configure(values)
        self.values = dict(values)

    def decode_pair(self, left: ImageFrame, right: ImageFrame, left_info: CameraInfo,
                    right_info: CameraInfo) -> tuple[DeviceGray, DeviceGray]:
        """Return the pair as gray on the device (``decode``), after checking that it matches."""
        if self.rectifiers is None and (left.raw.width, left.raw.height) != \
                (right.raw.width, right.raw.height):
            raise ImageFormatError(
                f'left is {left.raw.width}x{left.raw.height} {left.raw.encoding} but right is '
                f'{right.raw.width}x{right.raw.height} {right.raw.encoding}; expected a '
                'rectified pair of one size')
        return self.decode(left, left_info, 0), self.decode(right, right_info, 1)

    def decode(self, frame: ImageFrame, info: CameraInfo, side: int) -> DeviceGray:
        """
        Return one image of the pair as gray on the device: decoded, or rectified with ``info``.

        ``side`` is 0 (left) or 1 (right); the node times this as its ``upload`` stage.
        """
        raw = frame.raw
        if self.rectifiers is None:
            return self.images.decode(raw, SIDES[side])
        calibration = calibration_from_msg(info, SIDES[side])
        rectifier = self.rectifiers[side]
        if rectifier.set_calibration(calibration):
            self.port.log(
                f'{SIDES[side]}: rectification maps of {calibration.describe()}')
        gray = rectifier.rectify_gray(raw, interpolation=str(self.values['interpolation']))
        return DeviceGray(gray, calibration.height, calibration.width)

    def warm(self, left: RawImage, right: RawImage, left_info: CameraInfo,
             right_info: CameraInfo, match: bool = True) -> DeviceGray:
        """
        Run every kernel of the current settings on a pair; return its left image's gray.

        Decode (or rectify, on rectifiers of their own: the stream's maps stay), match, then the
        disparity image, picture, depth and points, whether subscribed or not. Without ``match``
        only the left image's decode (the pipeline with disparity switched off).
        """
        values = self.values
        interpolation = str(values['interpolation'])
        colour = bool(values['use_color'])
        grays = []
        for side, raw, info in ((0, left, left_info), (1, right, right_info))[:2 if match else 1]:
            if self.rectifiers is None:
                grays.append(self.images.decode(raw, SIDES[side]))
                continue
            rectifier = Rectifier(self.runtime)
            rectifier.set_calibration(calibration_from_msg(info, SIDES[side]))
            grays.append(DeviceGray(rectifier.rectify_gray(raw, interpolation=interpolation),
                                    raw.height, raw.width))
            if side == 0 and colour and match:
                left = rectifier.rectify(raw, interpolation)  # the cloud's colours
        if not match:
            return grays[0]
        output = self.matcher.match(*grays)
        rows, cols = self.matcher.output_shape(left.width, left.height)
        scale = SUBSAMPLED_SCALE if values['subsampling'] else 1.0
        self.maker.make(output, rows, cols, scale, scale * float(values['disp_min']))
        self.colorizer.draw(output, rows, cols, float(values['disp_min']), color_range(values))
        geometry = StereoGeometry.from_projections(left_info.p, right_info.p)
        device_map = DisparityMap(output, cols, rows, float(values['disp_min']),
                                  bool(values['subsampling']))
        self.reprojector.depth(device_map, geometry)
        self.reprojector.points(
            device_map, geometry,
            CloudLayout(colour, bool(values['avoid_point_cloud_padding'])),
            dense=bool(values['dense_points']), color=left if colour else None)
        return grays[0]

    def process(self, left: ImageFrame, pair: tuple[DeviceGray, DeviceGray],
                left_info: CameraInfo, right_info: CameraInfo) -> Followup:
        """Match a decoded pair and publish the disparity (``start``, then its finish)."""
        return self.start(left, pair, left_info, right_info)()

    def start(self, left: ImageFrame, pair: tuple[DeviceGray, DeviceGray],
              left_info: CameraInfo, right_info: CameraInfo) -> Finish:
        """
        Enqueue the matching of a decoded pair on this capability's queue, without waiting.

        Returns its finish: publish the disparity, and return the followup (whatever else is
        subscribed: its picture, depth, points).
        """
        port, prefix, values = self.port, self.prefix, self.values
        f, baseline = stereo_geometry(left_info, right_info)
        want_depth, want_points = port.wanted(self.depth_pub), port.wanted(self.points_pub)
        want_picture = port.wanted(self.color_pub)
        colour = want_points and bool(values['use_color'])
        if colour:
            colour_image = left.raw if self.rectifiers is None else \
                self.rectifiers[0].rectify(left.raw, str(values['interpolation']))
            check_cloud_colour(colour_image)
        with port.stage(prefix + 'compute'):
            self.matcher.match(*pair)
        rows, cols = self.matcher.output_shape(pair[0].width, pair[0].height)
        matched = Matched(left, left_info, right_info, rows, cols, f, baseline, want_picture,
                          want_depth, want_points, colour_image if colour else None)
        return lambda: self._finish(matched)

    def _finish(self, matched: Matched) -> Followup:
        port, prefix, values = self.port, self.prefix, self.values
        left, left_info, right_info = matched.left, matched.left_info, matched.right_info
        rows, cols, colour_image = matched.rows, matched.cols, matched.colour_image
        want_picture, want_depth, want_points = matched.picture, matched.depth, matched.points
        with port.device_stage(prefix + 'compute', self.runtime):
            pass  # the matching enqueued by start
        self._publish_disparity(rows, cols, matched.f, matched.baseline, left)
        if not (want_picture or want_depth or want_points):
            return nothing_more

        def extras() -> None:
            if want_picture:
                self._publish_picture(rows, cols, left)
            if not (want_depth or want_points):
                return
            geometry = StereoGeometry.from_projections(left_info.p, right_info.p)
            device_map = DisparityMap(self.matcher.last_output, cols, rows,
                                      float(values['disp_min']), bool(values['subsampling']))
            if want_depth:
                with port.device_stage(prefix + 'depth', self.runtime):
                    depth = self.reprojector.depth(device_map, geometry)
                port.publish_image(self.depth_pub, left.header, '32FC1', depth,
                                   prefix + 'publish')
            if want_points:
                with port.device_stage(prefix + 'points', self.runtime):
                    cloud = self.reprojector.points(
                        device_map, geometry,
                        CloudLayout(colour_image is not None,
                                    bool(values['avoid_point_cloud_padding'])),
                        dense=bool(values['dense_points']), color=colour_image)
                framing = cloud_framing(left.header, cloud.height, cloud.width,
                                        cloud.layout.fields, cloud.point_step, cloud.row_step,
                                        cloud.is_dense)
                port.publish_serialized(self.points_pub, framing, cloud.data, prefix + 'publish')
        return extras

    def _publish_disparity(self, rows: int, cols: int, f: float, baseline: float,
                           left: ImageFrame) -> None:
        """Publish the DisparityImage (made on the device)."""
        port, prefix, values = self.port, self.prefix, self.values
        with port.download_stage(prefix + 'download'):
            scale = SUBSAMPLED_SCALE if values['subsampling'] else 1.0  # to the map's pixels
            d_min = scale * float(values['disp_min'])
            d_max = scale * float(values['disp_max'])
            made = self.maker.make(self.matcher.last_output, rows, cols, scale, d_min)
            framing = disparity_framing(left.header, rows, cols, f=scale * f, t=baseline,
                                        valid_window=made.valid_window, min_disparity=d_min,
                                        max_disparity=d_max, delta_d=scale * DELTA_D)
        port.publish_serialized(self.disparity_pub, framing, made.pixels, prefix + 'publish')

    def _publish_picture(self, rows: int, cols: int, left: ImageFrame) -> None:
        """Draw the disparity's colour picture on the device and publish it."""
        port, prefix, values = self.port, self.prefix, self.values
        with port.device_stage(prefix + 'visual', self.runtime):
            picture = self.colorizer.draw(
                self.matcher.last_output, rows, cols, float(values['disp_min']),
                color_range(values), out=self.staging.pinned('color', (rows, cols, 3), np.uint8))
        port.publish_image(self.color_pub, left.header, 'bgr8', picture, prefix + 'publish')
