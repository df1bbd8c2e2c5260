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

"""`cl-vision surf IMAGE`: SURF keypoints and descriptors of one image file."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import time

from cl_vision_nodes.dataio.formats import read_image, write_png
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.surf.draw import draw_keypoints
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.schema import SURF_SCHEMA
from cl_vision_nodes.tools.cli_common import (add_algorithm_options, algorithm_params, output_file,
                                              print_profile, runtime_for)
import numpy as np

KEYPOINT_SUFFIXES = ('.npz', '.json')
ARRAYS = ('x', 'y', 'size', 'angle', 'response', 'octave', 'laplacian', 'descriptor')


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.suffix not in KEYPOINT_SUFFIXES:
        raise DataFormatError(f'--out {out}: expected a {" or ".join(KEYPOINT_SUFFIXES)} file')
    values = algorithm_params(SURF_SCHEMA, args)
    image = read_image(args.image, gray=False)  # decoded to gray on the device, as in the node
    runtime = runtime_for(values)
    extractor = SurfExtractor(runtime, values)
    start = time.perf_counter()
    keypoints = extractor.detect_and_describe(array_to_raw(image, 'bgr8'))
    elapsed_ms = (time.perf_counter() - start) * 1e3
    arrays = {name: getattr(keypoints, name) for name in ARRAYS}
    if out.suffix == '.npz':
        np.savez(out, **arrays)
    else:
        out.write_text(json.dumps({name: a.tolist() for name, a in arrays.items()}))
    if args.draw:
        gray = read_image(args.image)
        write_png(args.draw, draw_keypoints(gray, keypoints))
    print(f'{len(keypoints)} keypoints ({keypoints.descriptor.shape[1]}-d) in '
          f'{image.shape[1]}x{image.shape[0]} on {runtime.entry.name}, {elapsed_ms:.0f} ms '
          f'(first call includes kernel builds) -> {out}')
    print_profile(runtime)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('surf', help='SURF keypoints and descriptors of IMAGE')
    parser.add_argument('image')
    parser.add_argument('--out', required=True, type=output_file,
                        help='.npz (arrays x, y, size, angle, response, octave, laplacian, '
                             'descriptor) or .json')
    parser.add_argument('--draw', type=output_file,
                        help='also write the image with the keypoints drawn (PNG)')
    add_algorithm_options(parser)
    parser.set_defaults(run=run)
