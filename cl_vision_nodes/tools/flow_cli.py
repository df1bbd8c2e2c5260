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

"""`cl-vision flow FRAME1 FRAME2`: dense optical flow between two image files."""
from __future__ import annotations

import argparse
from pathlib import Path
import time

from cl_vision_nodes.dataio.formats import read_image, write_flo, write_png
from cl_vision_nodes.errors import DataFormatError, ImageFormatError, ParameterError
from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.schema import AUTO, FLOW_SCHEMA, METHODS
from cl_vision_nodes.tools.cli_common import (add_algorithm_options, algorithm_params, output_file,
                                              print_profile, runtime_for)
import numpy as np

FLOW_SUFFIXES = ('.flo', '.npy')


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.suffix not in FLOW_SUFFIXES:
        raise DataFormatError(f'--out {out}: expected a {" or ".join(FLOW_SUFFIXES)} file')
    if args.preset and args.method not in (None, 'dis'):
        raise ParameterError(f'--preset {args.preset} sets the dis parameters: it takes no '
                             f'--method {args.method}')
    values = algorithm_params(FLOW_SCHEMA, args, DIS_PRESETS.get(args.preset), method=args.method)
    frame0, frame1 = read_image(args.frame1), read_image(args.frame2)
    if frame0.shape != frame1.shape:
        raise ImageFormatError(f'{args.frame1} is {frame0.shape[1]}x{frame0.shape[0]} but '
                               f'{args.frame2} is {frame1.shape[1]}x{frame1.shape[0]}')
    runtime = runtime_for(values)
    estimator = FlowEstimator(runtime, values)
    start = time.perf_counter()
    flow = estimator.estimate(frame0, frame1)
    elapsed_ms = (time.perf_counter() - start) * 1e3
    if out.suffix == '.flo':
        write_flo(out, flow)
    else:
        np.save(out, flow)
    if args.color:
        write_png(args.color, flow_to_color(flow, float(values['max_flow'])))
    valid = np.isfinite(flow).all(axis=2)
    chosen = 'auto -> ' if values['method'] == AUTO else ''
    print(f'{chosen}{estimator.method}: {flow.shape[1]}x{flow.shape[0]} on {runtime.entry.name}, '
          f'{elapsed_ms:.0f} ms (kernel builds excluded), '
          f'{100 * valid.mean():.1f} % of pixels with an estimate -> {out}')
    print_profile(runtime)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('flow', help='dense optical flow from FRAME1 to FRAME2')
    parser.add_argument('frame1')
    parser.add_argument('frame2')
    parser.add_argument('--method', choices=(AUTO, *METHODS),
                        help='default: the method parameter (auto: dis on a CPU, hs on a GPU)')
    parser.add_argument('--preset', choices=tuple(DIS_PRESETS),
                        help="dis with OpenCV's parameters of this preset (before --param)")
    parser.add_argument('--out', required=True, type=output_file,
                        help='Middlebury .flo or .npy (HxWx2 float32)')
    parser.add_argument('--color', type=output_file,
                        help='also write the Middlebury colour-wheel picture (PNG)')
    add_algorithm_options(parser)
    parser.set_defaults(run=run)
