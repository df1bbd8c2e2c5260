"""`cl-vision disparity LEFT RIGHT`: ELAS disparity of a rectified stereo pair of image files."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import DataFormatError, ImageFormatError
from cl_vision_nodes.tools.cli_common import (add_algorithm_options, algorithm_params,
                                              print_profile, runtime_for)

DISPARITY_SUFFIXES = ('.pfm', '.png', '.npy')


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from cl_vision_nodes.dataio.formats import (read_image, write_kitti_disparity, write_pfm,
                                                write_png)
    from cl_vision_nodes.elas.colormap import disparity_to_color
    from cl_vision_nodes.elas.matcher import ElasMatcher
    out = Path(args.out)
    if out.suffix not in DISPARITY_SUFFIXES:
        raise DataFormatError(f'--out {out}: expected a {", ".join(DISPARITY_SUFFIXES)} file')
    values = algorithm_params(ELAS_SCHEMA, args, PRESETS[args.preset])
    left, right = read_image(args.left), read_image(args.right)
    if left.shape != right.shape:
        raise ImageFormatError(f'{args.left} is {left.shape[1]}x{left.shape[0]} but '
                               f'{args.right} is {right.shape[1]}x{right.shape[0]}')
    runtime = runtime_for(values)
    matcher = ElasMatcher(runtime, values)
    start = time.perf_counter()
    disparity = matcher.compute_gray(left, right)
    elapsed_ms = (time.perf_counter() - start) * 1e3
    valid = disparity >= 0
    if out.suffix == '.png':
        write_kitti_disparity(out, np.where(valid, disparity, np.nan))
    else:
        stored = np.where(valid, disparity, np.inf).astype(np.float32)
        write_pfm(out, stored) if out.suffix == '.pfm' else np.save(out, stored)
    if args.color:
        write_png(args.color, disparity_to_color(np.where(valid, disparity, np.nan),
                                                 float(values['disp_min']),
                                                 float(values['disp_max'])))
    print(f'{args.preset}: {left.shape[1]}x{left.shape[0]} on {runtime.entry.name}, '
          f'{elapsed_ms:.0f} ms (first call includes kernel builds), '
          f'{100 * valid.mean():.1f} % valid -> {out}')
    print_profile(runtime)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('disparity', help='ELAS disparity of a rectified pair LEFT RIGHT')
    parser.add_argument('left')
    parser.add_argument('right')
    parser.add_argument('--preset', choices=sorted(PRESETS), default='robotics',
                        help="libelas' parameter setting; --param overrides single values")
    parser.add_argument('--out', required=True,
                        help='.pfm (float32, inf = invalid), .png (KITTI 16-bit, d*256, '
                             '0 = invalid) or .npy (float32, inf = invalid)')
    parser.add_argument('--color', help='also write a colour picture of the disparity (PNG)')
    add_algorithm_options(parser)
    parser.set_defaults(run=run)
