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
`cl-vision disparity LEFT RIGHT`: ELAS disparity of a stereo pair of image files.

The pair is rectified, or raw with ``--rectify``; with the pair's calibration also its depth image
and point cloud (all computed on the device).
"""
from __future__ import annotations

import argparse
from pathlib import Path
import time

from cl_vision_nodes.camera.calibration import CameraCalibration, read_calibration_yaml
from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.dataio.formats import read_image, write_png
from cl_vision_nodes.dataio.stereo_files import (DEPTH_SUFFIXES, DISPARITY_SUFFIXES,
                                                 POINTS_SUFFIXES, write_depth, write_disparity,
                                                 write_points)
from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import DataFormatError, ImageFormatError
from cl_vision_nodes.imaging.encodings import array_to_raw, raw_to_array
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout
from cl_vision_nodes.stereo.reproject import Reprojector
from cl_vision_nodes.tools.cli_common import (add_algorithm_options, algorithm_params, output_file,
                                              print_profile, runtime_for)
import numpy as np


def _check_outputs(args: argparse.Namespace, rectify: bool) -> None:
    """Suffixes and the calibration the outputs (and ``rectify``) need, before any work."""
    for option, path, suffixes in (('--out', args.out, DISPARITY_SUFFIXES),
                                   ('--depth', args.depth, DEPTH_SUFFIXES),
                                   ('--points', args.points, POINTS_SUFFIXES)):
        if path is not None and Path(path).suffix not in suffixes:
            raise DataFormatError(f'{option} {path}: expected a {", ".join(suffixes)} file')
    if not (args.out or args.depth or args.points):
        raise DataFormatError('nothing to write: give --out, --depth and/or --points')
    if (args.depth or args.points or rectify) and not args.camera_info:
        raise DataFormatError('--depth, --points and --rectify need the calibration of the '
                              'pair: --camera-info LEFT.yaml RIGHT.yaml')


def _calibrations(args: argparse.Namespace, width: int,
                  height: int) -> tuple[CameraCalibration, CameraCalibration]:
    """Read the pair's calibration YAMLs, which must be for images of this size."""
    pair = tuple(read_calibration_yaml(path) for path in args.camera_info)
    for path, calibration in zip(args.camera_info, pair):
        if (calibration.width, calibration.height) != (width, height):
            raise DataFormatError(f'{path} is a calibration of {calibration.width}x'
                                  f'{calibration.height} images but {args.left} is '
                                  f'{width}x{height}')
    return pair


def _rectified(rectifier: Rectifier, calibration: CameraCalibration, image: np.ndarray,
               interpolation: str) -> np.ndarray:
    """``image`` (gray or BGR) rectified on the device with ``calibration``."""
    rectifier.set_calibration(calibration)
    raw = array_to_raw(image, 'mono8' if image.ndim == 2 else 'bgr8')
    return raw_to_array(rectifier.rectify(raw, interpolation))


def run(args: argparse.Namespace) -> int:
    values = algorithm_params(ELAS_SCHEMA, args, PRESETS[args.preset])
    rectify = args.rectify or bool(values['rectify'])
    _check_outputs(args, rectify)
    left, right = read_image(args.left), read_image(args.right)
    if left.shape != right.shape:
        raise ImageFormatError(f'{args.left} is {left.shape[1]}x{left.shape[0]} but '
                               f'{args.right} is {right.shape[1]}x{right.shape[0]}')
    calibrations = _calibrations(args, left.shape[1], left.shape[0]) if args.camera_info \
        else None
    geometry = StereoGeometry.from_projections(calibrations[0].P, calibrations[1].P) \
        if calibrations else None
    runtime = runtime_for(values)
    matcher = ElasMatcher(runtime, values)
    reprojector = Reprojector(runtime) if geometry else None
    # the node's parameters of the same names apply too (--param rectify=true, use_color, ...)
    rectifier = Rectifier(runtime) if rectify else None
    use_color = bool(values['use_color']) and not args.no_point_color
    dense = bool(values['dense_points']) or args.dense_points
    interpolation = str(values['interpolation'])
    if rectifier is not None:
        left, right = (_rectified(rectifier, calibration, image, interpolation)
                       for calibration, image in zip(calibrations, (left, right)))
    start = time.perf_counter()
    disparity = matcher.compute_gray(left, right)
    elapsed_ms = (time.perf_counter() - start) * 1e3
    valid = disparity >= 0
    reports = [f'{100 * valid.mean():.1f} % valid']
    if args.out:
        write_disparity(args.out, disparity)
        reports[0] += f' -> {args.out}'
    if args.color:
        write_png(args.color, disparity_to_color(np.where(valid, disparity, np.nan),
                                                 float(values['disp_min']),
                                                 float(values['disp_max'])))
    if reprojector is not None:
        device_map = reprojector.upload(disparity, float(values['disp_min']),
                                        bool(values['subsampling']))
        if args.depth:
            reports.append(write_depth(args.depth, reprojector.depth(device_map, geometry)))
        if args.points:
            layout = CloudLayout(use_color=use_color, avoid_padding=True)
            color = None
            if use_color:
                bgr = read_image(args.left, gray=False)
                if rectifier is not None:
                    bgr = _rectified(rectifier, calibrations[0], bgr, interpolation)
                color = array_to_raw(bgr, 'bgr8')
            cloud = reprojector.points(device_map, geometry, layout,
                                       dense=args.points.suffix == '.ply' or dense,
                                       color=color)
            reports.append(write_points(args.points, cloud, args.ply_ascii))
    print(f'{args.preset}: {left.shape[1]}x{left.shape[0]} on {runtime.entry.name}, '
          f'{elapsed_ms:.0f} ms (first call includes kernel builds), ' + '; '.join(reports))
    print_profile(runtime)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('disparity', help='ELAS disparity of a rectified pair LEFT RIGHT, or '
                                              'a raw one with --rectify (and its depth and '
                                              'points with --camera-info)')
    parser.add_argument('left')
    parser.add_argument('right')
    parser.add_argument('--preset', choices=sorted(PRESETS), default='robotics',
                        help="libelas' parameter setting; --param overrides single values")
    parser.add_argument('--out', type=output_file,
                        help='.pfm (float32, inf = invalid), .png (KITTI 16-bit, d*256, '
                             '0 = invalid) or .npy (float32, inf = invalid)')
    parser.add_argument('--color', type=output_file,
                        help='also write a colour picture of the disparity (PNG)')
    parser.add_argument('--camera-info', nargs=2, metavar=('LEFT.yaml', 'RIGHT.yaml'),
                        help='calibration of the pair (camera_calibration_parsers YAML, as '
                             'camera drivers store it): its P matrices give depth and points')
    parser.add_argument('--rectify', action='store_true',
                        help='LEFT and RIGHT are raw: rectify them on the device with the '
                             "calibration's K, D, R, P first (--param interpolation=...)")
    parser.add_argument('--depth', type=output_file,
                        help='depth of the left image: .npy or .pfm (float32 metres, NaN = '
                             'no depth, +inf = at infinity) or .png (16-bit millimetres, '
                             '0 = no depth or beyond 65.535 m)')
    parser.add_argument('--points', type=output_file,
                        help='point cloud in the left rectified camera frame, metres: .ply '
                             '(the valid points: x y z red green blue) or .npy (structured '
                             'array with fields x y z [red green blue], HxW with NaN where '
                             'there is no point, or N with --dense-points)')
    parser.add_argument('--no-point-color', action='store_true',
                        help='points without the colours of the left image')
    parser.add_argument('--dense-points', action='store_true',
                        help='.npy points: only the valid ones, in image order')
    parser.add_argument('--ply-ascii', action='store_true',
                        help='write the .ply as ASCII instead of binary little-endian')
    add_algorithm_options(parser)
    parser.set_defaults(run=run)
