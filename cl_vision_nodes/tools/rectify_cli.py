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
`cl-vision rectify IMAGE --camera-info INFO.yaml`: image_proc's rectification of one image file.

INFO.yaml is the calibration YAML camera drivers store (camera_calibration_parsers layout). An
8-bit image is rectified as mono8 when its channels are equal (a gray file) and as bgr8
otherwise; a .pfm is a 32FC1 image (a depth map, say) and its border is NaN.
"""
from __future__ import annotations

import argparse
from pathlib import Path
import time

from cl_vision_nodes.camera.calibration import read_calibration_yaml
from cl_vision_nodes.camera.rectify import INTERPOLATIONS, Rectifier
from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.dataio.formats import read_image, read_pfm, write_pfm, write_png
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.imaging.encodings import array_to_raw, raw_to_array
from cl_vision_nodes.tools.cli_common import (add_algorithm_options, algorithm_params, output_file,
                                              print_profile, runtime_for)
import numpy as np

OUT_SUFFIXES = {'8-bit': ('.png', '.npy'), 'float': ('.pfm', '.npy')}


def run(args: argparse.Namespace) -> int:
    values = algorithm_params(RECTIFY_SCHEMA, args, interpolation=args.interpolation)
    is_float = Path(args.image).suffix.lower() == '.pfm'
    out = Path(args.out)
    allowed = OUT_SUFFIXES['float' if is_float else '8-bit']
    if out.suffix not in allowed:
        raise DataFormatError(f'--out {out}: a {"float" if is_float else "8-bit"} image is '
                              f'written as {" or ".join(allowed)}')
    calibration = read_calibration_yaml(args.camera_info)
    if is_float:
        image, encoding = read_pfm(args.image), '32FC1'
        if image.ndim != 2:
            raise DataFormatError(f'{args.image}: a colour PFM; expected one channel (Pf)')
    else:
        image, encoding = read_image(args.image, gray=False), 'bgr8'
        if (image == image[..., :1]).all():
            image, encoding = np.ascontiguousarray(image[..., 0]), 'mono8'
    runtime = runtime_for(values)
    rectifier = Rectifier(runtime)
    rectifier.set_calibration(calibration)
    start = time.perf_counter()
    rectified = raw_to_array(rectifier.rectify(array_to_raw(image, encoding),
                                               str(values['interpolation'])))
    elapsed_ms = (time.perf_counter() - start) * 1e3
    if out.suffix == '.npy':
        np.save(out, rectified)
    else:
        (write_pfm if is_float else write_png)(out, rectified)
    print(f'{encoding} {image.shape[1]}x{image.shape[0]} rectified with '
          f'{calibration.describe()}, {values["interpolation"]} on {runtime.entry.name}, '
          f'{elapsed_ms:.0f} ms -> {out}')
    print_profile(runtime)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('rectify', help='rectify IMAGE with a camera calibration YAML '
                                            "(image_proc's rectify)")
    parser.add_argument('image', help='8-bit image file (gray or colour) or a 32FC1 .pfm')
    parser.add_argument('--camera-info', required=True, metavar='INFO.yaml',
                        help='camera calibration YAML (camera_calibration_parsers layout)')
    parser.add_argument('--out', required=True, type=output_file,
                        help='.png or .npy (8-bit input); .pfm or .npy (.pfm input)')
    parser.add_argument('--interpolation', choices=tuple(INTERPOLATIONS),
                        help='nearest, linear or cubic (default: the interpolation parameter, '
                             'linear)')
    add_algorithm_options(parser)
    parser.set_defaults(run=run)
