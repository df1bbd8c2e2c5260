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
ELAS disparity of stereo pairs, with depth, points and the colour map: disparity_node without ROS.

The pair is rectified (decoded on the device) or raw (``rectify``: rectified on the device with
the camera_infos' K, D, R, P; maps built when a calibration changes): one upload per image, the
gray written straight into the matcher's inputs. The left image may be colour (bgr8, rgb8,
bgra8, rgba8, Bayer): matching runs on its gray, the cloud takes its colours.

A pair's answer is the map a stereo_msgs/DisparityImage carries (``stereo.disparity_image``:
in its own pixels, halved with ``subsampling``, invalid pixels below ``min_disparity``) with its
``f``, ``T`` and range; its picture, depth (metres, REP 118) and points (stereo_image_proc's
layouts) are computed on the device from the map where it lies, each only when asked for. Depth
uses f, T and the principal-point difference of the two P matrices, as stereo_image_proc. A
camera_info (any with CameraInfo's fields) whose K or P is not finite is refused frame by frame.
"""
from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Callable, Mapping

from cl_vision_nodes.camera.camera_info import calibration_from_msg, CameraInfo
from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.capabilities.flow import Log, no_log
from cl_vision_nodes.capabilities.stages import StageClock
from cl_vision_nodes.elas.colormap import color_range, DisparityColorizer
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import RawImage, validate
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.stereo.disparity_image import DisparityImageMaker, PublishedMap
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout, PointCloud
from cl_vision_nodes.stereo.reproject import COLOR_KINDS, DisparityMap, Reprojector
import numpy as np

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
class DisparityAnswer:
    """A pair's DisparityImage contents, and what its depth and points are computed from."""

    published: PublishedMap  # pixels (pinned, valid until the next pair) and valid window
    rows: int
    cols: int
    f: float  # in the map's pixels
    baseline: float
    min_disparity: float
    max_disparity: float
    delta_d: float
    left_info: CameraInfo | None
    right_info: CameraInfo | None
    colour_image: RawImage | None  # the cloud's colours, when it has them


class DisparityFrames:
    """ELAS disparity of decoded pairs, with depth, points and the colour map on request."""

    def __init__(self, runtime: ClRuntime, images: DeviceImages, values: Mapping[str, Value],
                 clock: StageClock, log: Log = no_log, prefix: str = ''):
        """
        Build matcher, reprojector and (with ``rectify``) rectifiers on ``runtime``.

        ``images`` decodes the pair where it is not rectified (a node's, shared with its other
        capabilities); stages are named ``prefix*``.
        """
        self.runtime = runtime
        self.images = images
        self.clock = clock
        self.log = log
        self.prefix = prefix
        self.values = dict(values)
        self.matcher = ElasMatcher(runtime, values)
        self.reprojector = Reprojector(runtime)
        self.colorizer = DisparityColorizer(runtime)
        self.maker = DisparityImageMaker(runtime)
        self.staging = runtime.buffers()
        self.rectifiers: tuple[Rectifier, Rectifier] | None = \
            (Rectifier(runtime), Rectifier(runtime)) if values['rectify'] else None

    def configure(self, values: Mapping[str, Value]) -> None:
        """Apply changed parameters from the next pair on (CLVisionError refuses them)."""
        self.matcher.configure(values)
        self.values = dict(values)

    def decode_pair(self, left: RawImage, right: RawImage, left_info: CameraInfo,
                    right_info: CameraInfo) -> tuple[DeviceGray, DeviceGray]:
        """Return the pair as gray on the device (``decode``), after checking that it matches."""
        if self.rectifiers is None and (left.width, left.height) != (right.width, right.height):
            raise ImageFormatError(
                f'left is {left.width}x{left.height} {left.encoding} but right is '
                f'{right.width}x{right.height} {right.encoding}; expected a rectified pair of '
                'one size')
        return self.decode(left, left_info, 0), self.decode(right, right_info, 1)

    def decode(self, raw: RawImage, info: CameraInfo, side: int) -> DeviceGray:
        """
        Return one image of the pair as gray on the device: decoded, or rectified with ``info``.

        ``side`` is 0 (left) or 1 (right).
        """
        if self.rectifiers is None:
            return self.images.decode(raw, SIDES[side])
        calibration = calibration_from_msg(info, SIDES[side])
        rectifier = self.rectifiers[side]
        if rectifier.set_calibration(calibration):
            self.log(f'{SIDES[side]}: rectification maps of {calibration.describe()}')
        gray = rectifier.rectify_gray(raw, interpolation=str(self.values['interpolation']))
        return DeviceGray(gray, calibration.height, calibration.width)

    def warm(self, left: RawImage, right: RawImage, left_info: CameraInfo,
             right_info: CameraInfo, match: bool = True) -> DeviceGray:
        """
        Run every kernel of the current settings on a pair; return its left image's gray.

        Decode (or rectify, on rectifiers of their own: the stream's maps stay), match, then the
        disparity image, picture, depth and points. Without ``match`` only the left image's
        decode (the pipeline with disparity switched off).
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

    def start(self, pair: tuple[DeviceGray, DeviceGray], left: RawImage | None,
              left_info: CameraInfo | None, right_info: CameraInfo | None,
              colour: bool = False) -> Callable[[], DisparityAnswer]:
        """
        Enqueue the matching of a decoded pair on this capability's queue, without waiting.

        ``left``: the pair's left image as received (the cloud's colours with ``colour``,
        checked here, before anything of the pair is answered). Without camera infos (tune's
        frames) the answer has no ``f`` and ``T`` (NaN), and no depth or points. Returns its
        finish: wait, make the DisparityImage's map and return the answer.
        """
        values, prefix = self.values, self.prefix
        f, baseline = (math.nan, math.nan) if left_info is None else \
            stereo_geometry(left_info, right_info)
        colour_image = None
        if colour:
            colour_image = left if self.rectifiers is None else \
                self.rectifiers[0].rectify(left, str(values['interpolation']))
            check_cloud_colour(colour_image)
        with self.clock.stage(prefix + 'compute'):
            self.matcher.match(*pair)
        rows, cols = self.matcher.output_shape(pair[0].width, pair[0].height)

        def finish() -> DisparityAnswer:
            with self.clock.device_stage(prefix + 'compute', self.runtime):
                pass  # the matching enqueued by start
            with self.clock.download_stage(prefix + 'download'):
                scale = SUBSAMPLED_SCALE if values['subsampling'] else 1.0  # to the map's pixels
                d_min = scale * float(values['disp_min'])
                d_max = scale * float(values['disp_max'])
                made = self.maker.make(self.matcher.last_output, rows, cols, scale, d_min)
            return DisparityAnswer(made, rows, cols, scale * f, baseline, d_min, d_max,
                                   scale * DELTA_D, left_info, right_info, colour_image)
        return finish

    def picture(self, answer: DisparityAnswer) -> np.ndarray:
        """Draw the disparity's colour picture on the device; return it (bgr8, pinned)."""
        values, rows, cols = self.values, answer.rows, answer.cols
        with self.clock.device_stage(self.prefix + 'visual', self.runtime):
            return self.colorizer.draw(
                self.matcher.last_output, rows, cols, float(values['disp_min']),
                color_range(values), out=self.staging.pinned('color', (rows, cols, 3), np.uint8))

    def depth(self, answer: DisparityAnswer) -> np.ndarray:
        """Return the depth image of the answer's map (32FC1 metres), computed on the device."""
        with self.clock.device_stage(self.prefix + 'depth', self.runtime):
            return self.reprojector.depth(self._device_map(answer), self._geometry(answer))

    def points(self, answer: DisparityAnswer) -> PointCloud:
        """Return the point cloud of the answer's map, computed on the device."""
        values = self.values
        with self.clock.device_stage(self.prefix + 'points', self.runtime):
            return self.reprojector.points(
                self._device_map(answer), self._geometry(answer),
                CloudLayout(answer.colour_image is not None,
                            bool(values['avoid_point_cloud_padding'])),
                dense=bool(values['dense_points']), color=answer.colour_image)

    def maps(self, lefts: list[DeviceGray], rights: list[DeviceGray]) -> list[np.ndarray]:
        """Return the DisparityImage map of each decoded pair, as a copy (tune, the benches)."""
        return [self.start((left, right), None, None, None)().published.pixels.copy()
                for left, right in zip(lefts, rights)]

    def _device_map(self, answer: DisparityAnswer) -> DisparityMap:
        return DisparityMap(self.matcher.last_output, answer.cols, answer.rows,
                            float(self.values['disp_min']), bool(self.values['subsampling']))

    @staticmethod
    def _geometry(answer: DisparityAnswer) -> StereoGeometry:
        return StereoGeometry.from_projections(answer.left_info.p, answer.right_info.p)
