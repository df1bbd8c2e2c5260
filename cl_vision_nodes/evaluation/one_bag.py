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
One bag evaluated: the nodes as real ROS processes on any rosbag2, played, scored, reported.

It finds the bag's camera (cameras.py; ``--image``, ``--left``/``--right`` override), starts
flow_node and surf_node on its left images and disparity_node on its pairs (each a ``python -m``
process with its own log, inputs remapped to the bag's topics, ``image_transport:=compressed``
for CompressedImage topics, raw images rectified on the way in), plays the selected frames in
lockstep over DDS (player.py), records every answer into DIR/bag (rosbag2 MCAP) and writes
DIR/report.json and DIR/report.md with pictures (report.py): latency, throughput, dropped
frames, each node's per-stage timing from its /diagnostics, accuracy where the bag holds
bag_layout's ground truth (`cl-vision make-bag` writes such bags) and quality without it on
every bag (quality_scorers.py), and a strip of frames spread over the run (strip.py).
The options are `cl-vision eval`'s (``EvalOptions``); a folder of bags runs this per bag
(bag_folder.py, folder_run.py).
"""
from __future__ import annotations

from collections.abc import Generator, Iterator
import contextlib
from dataclasses import dataclass, field
import math
import os
from pathlib import Path
import random
import sys
from typing import Any

from cl_vision_nodes.bags.storage import Bag, topic_counts
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.evaluation.cameras import find_cameras, Overrides
from cl_vision_nodes.evaluation.frames import read_frames, Selection
from cl_vision_nodes.evaluation.player import evaluate_bag, NodeRun, Progress
from cl_vision_nodes.evaluation.quality_scorers import (LibraryAlgorithms, node_scorers,
                                                        SequenceMemory)
from cl_vision_nodes.evaluation.report import fmt, write_report
from cl_vision_nodes.evaluation.wiring import wire
from cl_vision_nodes.params import Value
from cl_vision_nodes.processes.child_processes import interrupted_exit
from cl_vision_nodes.processes.nodes import node_environment, node_parameters, NODE_SPECS, SCHEMAS

DEFAULT_TIMEOUT_S = 120.0
MAX_DOMAIN_ID = 232  # the largest ROS_DOMAIN_ID that DDS maps to valid UDP ports
RANDOM_DOMAINS = 101  # the default domain is a random one of 1..RANDOM_DOMAINS


@dataclass(frozen=True)
class EvalOptions:
    """What one eval run is asked: `cl-vision eval`'s options (its --help says each)."""

    bag: Path
    out: Path
    image: str | None = None
    left: str | None = None
    right: str | None = None
    left_info: str | None = None
    right_info: str | None = None
    start: float = 0.0
    duration: float | None = None
    every: int = 1
    nodes: list[str] | None = None
    device: str = 'auto'
    param: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT_S
    domain_id: int | None = None
    status_lines: bool = False


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


def build_report(options: EvalOptions, domain_id: int, cameras: Any, selection: Any,
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
        'bag': str(options.bag), 'output_bag': str(Path(options.out) / 'bag'),
        'device': options.device,
        'domain_id': domain_id, 'timeout_s': options.timeout, 'interrupted': outcome.interrupted,
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


def counted(frames: Iterator[Any], restamped: list[int]) -> Generator[Any, None, None]:
    """Pass the frames on, counting in ``restamped[0]`` those with re-stamped partners."""
    for frame in frames:
        restamped[0] += bool(frame.restamped)
        yield frame


def flow_across_the_stride(options: EvalOptions) -> tuple[list[str], list[str]]:
    """
    Return the ``--param`` assignments, with flow's ``max_span`` off under ``--every`` N > 1.

    Frames N apart may be further apart in time than ``max_span`` (1 s by default), where
    flow_node would start a new history at every frame and publish no flow; a ``max_span`` the
    user set is kept. Also the note saying so.
    """
    if options.every == 1 or (options.nodes is not None and 'flow' not in options.nodes) \
            or any(a.startswith('flow.max_span=') for a in options.param):
        return list(options.param), []
    return ['flow.max_span=0.0', *options.param], [
        f'--every {options.every}: flow.max_span set to 0 (no limit), so flow runs between frames '
        f'{options.every} apart (--param flow.max_span=S to keep a limit)']


def evaluate(options: EvalOptions) -> int:
    """
    Evaluate one bag into ``options.out``; return the exit code (0, or 128 + signal interrupted).

    Interrupted by Ctrl-C or SIGTERM while playing, it still writes the partial report and says
    so in one line. The caller guards it (child_processes.guarded): nothing it starts outlives it.
    """
    path = Path(options.bag)
    cameras = find_cameras(path, Overrides(options.image, options.left, options.right,
                                           options.left_info, options.right_info))
    assignments, stride_notes = flow_across_the_stride(options)
    explicit = node_parameters([NODE_SPECS[k] for k in options.nodes or SCHEMAS], assignments,
                               options.device)
    wiring = wire(cameras, options.nodes, explicit)
    parameters = {**node_parameters(wiring.helpers, [], options.device),
                  **{spec.key: explicit[spec.key] for spec in wiring.scored}}
    notes = wiring.notes + stride_notes + [
        f'--param for {key} ignored: that node does not run'
        for key in sorted({a.partition('.')[0] for a in options.param} - parameters.keys())]
    if cameras.raw:
        notes.append('quality figures are computed on the images as the bag holds them (not '
                     'rectified)')
    selection = Selection(options.start, options.duration, options.every)
    streams = cameras.streams(selection)
    bag = Bag(path, streams.topics)
    if selection.start_s and selection.start_s * 1e9 >= bag.duration_ns:
        raise DataFormatError(f'--start {selection.start_s:g}: the bag lasts only '
                              f'{bag.duration_ns / 1e9:g} s')
    out = Path(options.out)
    if (out / 'bag').exists():
        raise DataFormatError(f'{out / "bag"} exists already, not overwriting')
    (out / 'logs').mkdir(parents=True, exist_ok=True)
    for line in cameras.describe():
        print(f'cl-vision eval: {line}', flush=True)
    for note in notes:
        print(f'cl-vision eval: {note}', file=sys.stderr)
    domain_id = random.randint(1, RANDOM_DOMAINS) if options.domain_id is None \
        else options.domain_id
    env = node_environment(domain_id)
    os.environ.update(ROS_DOMAIN_ID=env['ROS_DOMAIN_ID'],
                      ROS_AUTOMATIC_DISCOVERY_RANGE=env['ROS_AUTOMATIC_DISCOVERY_RANGE'])
    played = cameras.played()
    inputs = {played.get(t, t): bag.topics[t] for t in streams.topics}
    memory = SequenceMemory(LibraryAlgorithms(options.device, parameters.get('flow'),
                                              parameters.get('disparity')),
                            cameras.left.topic, cameras.right and cameras.right.topic)
    scorers = node_scorers([spec.key for spec in wiring.scored], memory)
    runs = [NodeRun(spec, None) for spec in wiring.helpers] + \
        [NodeRun(spec, scorers[spec.key]) for spec in wiring.scored]
    restamped = [0]
    frames = counted(memory.remembered(read_frames(bag, streams, selection)), restamped)
    # closed here, interrupted or not: left open, the generators would be closed as the
    # interpreter exits, when the bag reader's error handling no longer finds its classes
    with contextlib.closing(frames):
        outcome = evaluate_bag(
            frames, inputs, played, runs, parameters, out, env, options.timeout,
            Progress(expected_frames(path, cameras.left.topic, selection), options.status_lines),
            lambda frame: frame.size(cameras.left.topic), preroll=bool(wiring.helpers))
    report = build_report(options, domain_id, cameras, selection, restamped[0], runs, parameters,
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
