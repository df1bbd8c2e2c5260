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
`cl-vision eval BAG --out DIR`: run the nodes as real ROS processes on any rosbag2 and report.

One bag: ``evaluation.one_bag`` (what is run, recorded and reported). A folder of bags instead of
BAG: each bag so, one combined report, here or spread over a Ray cluster with ``--ray ADDRESS``
(``evaluation.folder_run``). ``--compare DIR_A DIR_B`` instead puts two such reports side by
side (``evaluation.compare``).
"""
from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
import sys

from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.evaluation.bag_folder import is_bag_folder
from cl_vision_nodes.evaluation.compare import run_compare
from cl_vision_nodes.evaluation.folder_run import evaluate_folder
from cl_vision_nodes.evaluation.one_bag import (DEFAULT_TIMEOUT_S, EvalOptions, evaluate,
                                                MAX_DOMAIN_ID)
from cl_vision_nodes.processes.child_processes import guarded
from cl_vision_nodes.processes.nodes import parse_nodes
from cl_vision_nodes.tools.cli_common import (integer_in, non_negative_number, output_folder,
                                              positive_number)


def run(args: argparse.Namespace) -> int:
    """
    Evaluate (or compare); nothing started outlives it (child_processes).

    Interrupted by Ctrl-C or SIGTERM while playing, it still writes the partial report, says so
    in one line and exits 128 + the signal's number.
    """
    if args.compare:
        return compare(args)
    folder = args.bag is not None and is_bag_folder(Path(args.bag))
    if args.bag is None or args.out is None:
        raise ParameterError('eval needs --out DIR for a folder of bags' if folder else
                             'eval needs a BAG and --out DIR (or --compare DIR_A DIR_B)')
    options = EvalOptions(**{f.name: getattr(args, f.name) for f in fields(EvalOptions)
                             if f.name not in ('bag', 'out')},
                          bag=Path(args.bag), out=Path(args.out))
    if folder:
        return guarded('cl-vision eval', lambda: evaluate_folder(evaluate, options, args.ray))
    if args.ray:
        raise ParameterError(f'--ray spreads the bags of a folder over a Ray cluster; {args.bag} '
                             'is not a folder of bags (run one bag without --ray)')
    return guarded('cl-vision eval', lambda: evaluate(options))


def compare(args: argparse.Namespace) -> int:
    """Print and write the table of two eval folders (``--compare``)."""
    if args.bag is not None:
        raise ParameterError(f'--compare takes two eval folders, not a bag ({args.bag})')
    folder_a, folder_b = (Path(folder) for folder in args.compare)
    print(f'written: {run_compare(folder_a, folder_b, args.out)}', file=sys.stderr)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', nargs='?',
                        help='any rosbag2 folder (mcap or sqlite3) with camera images, or a '
                             'folder of them (each evaluated into OUT/<its path>, and one '
                             'combined report)')
    parser.add_argument('--out', type=output_folder,
                        help='output folder: bag/, logs/, report.md, report.json, pictures '
                             '(required with a bag; with --compare: where compare.md goes, '
                             'default DIR_B)')
    parser.add_argument('--compare', nargs=2, metavar=('DIR_A', 'DIR_B'),
                        help='instead of a run: the report.json of two eval folders side by '
                             'side in one Markdown table with the differences B - A, printed '
                             'and written to compare.md')
    camera = parser.add_argument_group('camera (default: found in the bag, printed)')
    camera.add_argument('--image', metavar='TOPIC',
                        help='a mono camera: Image or CompressedImage topic')
    camera.add_argument('--left', metavar='TOPIC', help='left image topic of a stereo pair')
    camera.add_argument('--right', metavar='TOPIC', help='right image topic of a stereo pair')
    camera.add_argument('--left-info', metavar='TOPIC',
                        help='camera_info of the left (or mono) camera')
    camera.add_argument('--right-info', metavar='TOPIC', help='camera_info of the right camera')
    frames = parser.add_argument_group("frames (by the left image's bag time)")
    frames.add_argument('--start', type=non_negative_number, default=0.0, metavar='SECONDS',
                        help="skip the bag's first SECONDS")
    frames.add_argument('--duration', type=positive_number, metavar='SECONDS',
                        help='play only SECONDS of the bag')
    frames.add_argument('--every', type=integer_in(1), default=1, metavar='N',
                        help='play every Nth frame (flow then runs between frames N apart)')
    parser.add_argument('--nodes', type=parse_nodes,
                        help='comma-separated subset of flow,surf,disparity (default: every '
                             'node the camera can feed)')
    parser.add_argument('--device', default='auto', help='OpenCL device of every node')
    parser.add_argument('--param', action='append', default=[], metavar='NODE.NAME=VALUE',
                        help='a node parameter, e.g. flow.method=lk (repeatable)')
    parser.add_argument('--timeout', type=positive_number, default=DEFAULT_TIMEOUT_S,
                        help='seconds to wait for the nodes to connect, and for the answers to '
                             'each frame (the first includes kernel builds)')
    parser.add_argument('--domain-id', type=integer_in(0, MAX_DOMAIN_ID),
                        help='ROS_DOMAIN_ID of the run (default: a random one, so that live '
                             'camera traffic cannot mix in)')
    parser.add_argument('--ray', metavar='ADDRESS',
                        help='a folder of bags: spread them over the Ray cluster at ADDRESS '
                             '(HEAD:6379, or auto), one bag per GPU (per CPU slot on a cluster '
                             'without GPUs), each on a ROS domain of its own')
    parser.add_argument('--status-lines', action='store_true',
                        help='one status line a second (frames, fps and accuracy per node) '
                             'instead of a progress bar')


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('eval', help='run the nodes over DDS on any rosbag2, record and '
                                         'report timing and quality',
                            description=__doc__.strip().split('\n\n')[0])
    add_arguments(parser)
    parser.set_defaults(run=run)
