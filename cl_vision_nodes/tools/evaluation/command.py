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

It finds the bag's camera (cameras.py; ``--image``, ``--left``/``--right`` override), starts
flow_node and surf_node on its left images and disparity_node on its pairs (each a ``python -m``
process with its own log, inputs remapped to the bag's topics, ``image_transport:=compressed``
for CompressedImage topics, raw images rectified on the way in), plays the selected frames in
lockstep over DDS (player.py), records every answer into DIR/bag (rosbag2 MCAP) and writes
DIR/report.json and DIR/report.md with pictures (report.py): latency, throughput, dropped
frames, each node's per-stage timing from its /diagnostics, accuracy where the bag holds
bag_layout's ground truth (`cl-vision make-bag` writes such bags) and quality without it on
every bag (quality_scorers.py), and a strip of frames spread over the run (strip.py).
``--compare DIR_A DIR_B`` instead puts two such reports side by side (compare.py). A folder of
bags instead of BAG: each bag so, one combined report, here or spread over a Ray cluster with
``--ray ADDRESS`` (bag_folder.py).
"""
from __future__ import annotations

import argparse
from collections.abc import Iterator
import math
import os
from pathlib import Path
import random
import sys
from typing import Any

from cl_vision_nodes.errors import DataFormatError, ParameterError
from cl_vision_nodes.params import Value
from cl_vision_nodes.tools.bag import Bag, topic_counts
from cl_vision_nodes.tools.child_processes import guarded, interrupted_exit
from cl_vision_nodes.tools.cli_common import (integer_in, non_negative_number, output_folder,
                                              positive_number)
from cl_vision_nodes.tools.evaluation.cameras import find_cameras, Overrides
from cl_vision_nodes.tools.evaluation.compare import run_compare
from cl_vision_nodes.tools.evaluation.frames import read_frames, Selection
from cl_vision_nodes.tools.evaluation.nodes import (node_environment, node_parameters,
                                                    NODE_SPECS, parse_nodes, SCHEMAS, wire)
from cl_vision_nodes.tools.evaluation.player import evaluate_bag, NodeRun, Progress
from cl_vision_nodes.tools.evaluation.quality_scorers import (LibraryAlgorithms, node_scorers,
                                                              SequenceMemory)
from cl_vision_nodes.tools.evaluation.report import fmt, write_report

DEFAULT_TIMEOUT_S = 120.0
MAX_DOMAIN_ID = 232  # the largest ROS_DOMAIN_ID that DDS maps to valid UDP ports
RANDOM_DOMAINS = 101  # the default domain is a random one of 1..RANDOM_DOMAINS


def expected_frames(path: Path, topic: str, selection: Any) -> int:
    """Return the frames the selection holds, from the bag's metadata (exact without times)."""
    count = topic_counts(path)[topic][1]
    bag = Bag(path, [topic])
    if bag.duration_ns > 0 and (selection.start_s or selection.duration_s is not None):
        end_s = bag.duration_ns / 1e9 if selection.duration_s is None else \
            selection.start_s + selection.duration_s
        share = max(0.0, min(end_s, bag.duration_ns / 1e9) - selection.start_s) / \
            (bag.duration_ns / 1e9)
        count = round(count * share)
    return math.ceil(count / selection.every)


def build_report(args: argparse.Namespace, domain_id: int, cameras: Any, selection: Any,
                 restamped: int, runs: list[Any], parameters: dict[str, dict[str, Value]],
                 outcome: Any, notes: list[str]) -> dict[str, Any]:
    def node_row(run: Any) -> dict[str, Any]:
        quality = {} if run.scorer is None else {'quality': run.scorer.quality.summary()}
        return {**run.summary(), **quality, 'parameters': parameters[run.spec.key],
                'eval_parameters': run.spec.parameters,
                'exit_code': outcome.exit_codes[run.spec.key],
                'stages': outcome.timing.summary(run.spec.key)}

    right = cameras.right
    return {
        'bag': str(args.bag), 'output_bag': str(Path(args.out) / 'bag'), 'device': args.device,
        'domain_id': domain_id, 'timeout_s': args.timeout, 'interrupted': outcome.interrupted,
        'frames_sent': outcome.sent, 'wall_s': outcome.wall_s,
        'wall_fps': outcome.sent / outcome.wall_s if outcome.wall_s else None,
        'input': {'cameras': cameras.describe(), 'left': cameras.left.topic,
                  'left_played': cameras.left.played,
                  'right': right and right.topic, 'left_info': cameras.left.info,
                  'right_info': right and right.info, 'compressed': cameras.compressed,
                  'raw': cameras.raw, 'rectification': cameras.rectification,
                  'ground_truth': list(cameras.truth), 'selection': selection.describe(),
                  'restamped_frames': restamped},
        'nodes': {run.spec.key: node_row(run) for run in runs if run.scorer is not None},
        'helpers': {run.spec.key: node_row(run) for run in runs if run.scorer is None},
        'topics': {t: {'type': m, 'received': outcome.received[t], 'expected': len(run.due)}
                   for run in runs for t, m in run.spec.outputs.items()},
        'notes': notes + [f'{key} node exited with code {code} on SIGINT (see logs/{key}.log)'
                          for key, code in outcome.exit_codes.items() if code != 0],
    }


def counted(frames: Iterator[Any], restamped: list[int]) -> Iterator[Any]:
    """Pass the frames on, counting in ``restamped[0]`` those with re-stamped partners."""
    for frame in frames:
        restamped[0] += bool(frame.restamped)
        yield frame


def flow_across_the_stride(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """
    Return the ``--param`` assignments, with flow's ``max_span`` off under ``--every`` N > 1.

    Frames N apart may be further apart in time than ``max_span`` (1 s by default), where
    flow_node would start a new history at every frame and publish no flow; a ``max_span`` the
    user set is kept. Also the note saying so.
    """
    if args.every == 1 or (args.nodes is not None and 'flow' not in args.nodes) \
            or any(a.startswith('flow.max_span=') for a in args.param):
        return list(args.param), []
    return ['flow.max_span=0.0', *args.param], [
        f'--every {args.every}: flow.max_span set to 0 (no limit), so flow runs between frames '
        f'{args.every} apart (--param flow.max_span=S to keep a limit)']


def run(args: argparse.Namespace) -> int:
    """
    Evaluate (or compare); nothing started outlives it (child_processes).

    Interrupted by Ctrl-C or SIGTERM while playing, it still writes the partial report, says so
    in one line and exits 128 + the signal's number.
    """
    # bag_folder runs this module's evaluate per bag: imported here, after this module loaded
    from cl_vision_nodes.tools.evaluation.bag_folder import evaluate_folder, is_bag_folder
    args = argparse.Namespace(**{**defaults(), **vars(args)})
    if args.compare:
        return compare(args)
    if args.bag is not None and is_bag_folder(Path(args.bag)):
        return guarded('cl-vision eval', lambda: evaluate_folder(args))
    if args.ray:
        raise ParameterError(f'--ray spreads the bags of a folder over a Ray cluster; {args.bag} '
                             'is not a folder of bags (run one bag without --ray)')
    return guarded('cl-vision eval', lambda: evaluate(args))


def evaluate(args: argparse.Namespace) -> int:
    if args.bag is None or args.out is None:
        raise ParameterError('eval needs a BAG and --out DIR (or --compare DIR_A DIR_B)')
    path = Path(args.bag)
    cameras = find_cameras(path, Overrides(args.image, args.left, args.right, args.left_info,
                                           args.right_info))
    assignments, stride_notes = flow_across_the_stride(args)
    explicit = node_parameters([NODE_SPECS[k] for k in args.nodes or SCHEMAS], assignments,
                               args.device)
    wiring = wire(cameras, args.nodes, explicit)
    parameters = {**node_parameters(wiring.helpers, [], args.device),
                  **{spec.key: explicit[spec.key] for spec in wiring.scored}}
    notes = wiring.notes + stride_notes + [
        f'--param for {key} ignored: that node does not run'
        for key in sorted({a.partition('.')[0] for a in args.param} - parameters.keys())]
    if cameras.raw:
        notes.append('quality figures are computed on the images as the bag holds them (not '
                     'rectified)')
    selection = Selection(args.start, args.duration, args.every)
    streams = cameras.streams(selection)
    bag = Bag(path, streams.topics)
    if selection.start_s and selection.start_s * 1e9 >= bag.duration_ns:
        raise DataFormatError(f'--start {selection.start_s:g}: the bag lasts only '
                              f'{bag.duration_ns / 1e9:g} s')
    out = Path(args.out)
    if (out / 'bag').exists():
        raise DataFormatError(f'{out / "bag"} exists already, not overwriting')
    (out / 'logs').mkdir(parents=True, exist_ok=True)
    for line in cameras.describe():
        print(f'cl-vision eval: {line}', flush=True)
    for note in notes:
        print(f'cl-vision eval: {note}', file=sys.stderr)
    domain_id = random.randint(1, RANDOM_DOMAINS) if args.domain_id is None else args.domain_id
    env = node_environment(domain_id)
    os.environ.update(ROS_DOMAIN_ID=env['ROS_DOMAIN_ID'],
                      ROS_AUTOMATIC_DISCOVERY_RANGE=env['ROS_AUTOMATIC_DISCOVERY_RANGE'])
    played = cameras.played()
    inputs = {played.get(t, t): bag.topics[t] for t in streams.topics}
    memory = SequenceMemory(LibraryAlgorithms(args.device, parameters.get('flow'),
                                              parameters.get('disparity')),
                            cameras.left.topic, cameras.right and cameras.right.topic)
    scorers = node_scorers([spec.key for spec in wiring.scored], memory)
    runs = [NodeRun(spec, None) for spec in wiring.helpers] + \
        [NodeRun(spec, scorers[spec.key]) for spec in wiring.scored]
    restamped = [0]
    outcome = evaluate_bag(
        counted(memory.remembered(read_frames(bag, streams, selection)), restamped), inputs,
        played, runs, parameters, out, env, args.timeout,
        Progress(expected_frames(path, cameras.left.topic, selection), args.status_lines),
        lambda frame: frame.size(cameras.left.topic), preroll=bool(wiring.helpers))
    report = build_report(args, domain_id, cameras, selection, restamped[0], runs, parameters,
                          outcome, notes)
    write_report(out, report, runs)
    for key, node in report['nodes'].items():
        print(f"{key}: {node['answered']}/{node['frames_due']} answered, first frame "
              f"{fmt(node['first_latency_ms'], 1)} ms, then latency mean "
              f"{fmt((node['latency_ms'] or {}).get('mean'), 1)} ms")
    print(f'report: {(out / "report.md").resolve()}')
    if outcome.interrupted:
        return interrupted_exit('cl-vision eval', f'after {outcome.sent} frames; the report '
                                                  'holds what was answered until then')
    return 0


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


def defaults() -> dict[str, Any]:
    """Return every option's default: callers such as the demo give only what they change."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return {k: v for k, v in vars(parser.parse_args(['BAG', '--out', '.'])).items()
            if k not in ('bag', 'out')}


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('eval', help='run the nodes over DDS on any rosbag2, record and '
                                         'report timing and quality',
                            description=__doc__.strip().split('\n\n')[0])
    add_arguments(parser)
    parser.set_defaults(run=run)
