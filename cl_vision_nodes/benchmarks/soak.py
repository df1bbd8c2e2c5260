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
Every node fed by one camera at a rate for a long time; memory and files (`cl-vision bench soak`).

Why: a leak of a few hundred bytes a frame hides in a benchmark of seconds and fills a robot's
memory in a day. One camera process (transport_link's publisher, the package's Fast DDS profile,
reliable) sends the two frames of the benches' synthetic stereo scene (scene.py), alternating, at a
rate for a duration, whatever the answers, to one process per node (``SOAK_NODES``, each in a
namespace of its own, its inputs as the node declares them); a subscriber process takes each node's
answer and its picture (so the pictures are drawn too). Every sample period the tool reads each
node's resident memory (VmRSS) and open file descriptors (/proc/PID/fd). Before the clock starts,
every node answers once (frames sent one at a time): a cold kernel cache compiles for seconds on
PoCL, and a soak of a few seconds would otherwise count none of its frames. The report gives per
node the frames answered (by its first output), RSS and fds after the warm-up (``WARMUP_S``: kernel
builds, first buffers and DDS' pools are in by then) and at the end, and the growth between the two
per hour.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
import queue
import random
import time

from cl_vision_nodes.benchmarks.scene import make_scene
from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.processes.nodes import (LAYOUT_BINDINGS, node_environment, NodeProcess,
                                             NodeSpec, start_node, stop_nodes, wired)
from cl_vision_nodes.processes.transport_link import Link
from cl_vision_nodes.schemas import NODE_SCHEMAS

SOAK_NODES = {'flow': 'flow_node', 'surf': 'surf_node', 'disparity': 'disparity_node',
              'rectify': 'rectify_node', 'convert': 'convert_node',
              'pipeline': 'vision_pipeline'}
"""Key -> executable: every node kind of the package."""
NAMESPACE = '/cl_vision_soak'
DURATION_S = 1800.0
SAMPLE_S = 60.0
WARMUP_S = 300.0
"""The reference sample: growth is measured from here to the end. A shorter run takes its
first sample after a sixth of the duration."""
POLL_S = 0.05
LINGER_S = 2.0  # after the last frame, for the answers still on their way
MIB_KB = 1024


@dataclass(frozen=True)
class SoakOptions:
    """What `cl-vision bench soak` was asked: the camera, the clock and the nodes' parameters."""

    size: tuple[int, int]
    rate_hz: float
    duration_s: float = DURATION_S
    sample_s: float = SAMPLE_S
    timeout_s: float = 120.0
    device: str = 'auto'
    node_params: tuple[str, ...] = ()  # NAME=VALUE, for every node that declares NAME
    domain_id: int | None = None  # None: a random one

    @property
    def warmup_s(self) -> float:
        """Return the reference sample's time: ``WARMUP_S``, or a sixth of a shorter run."""
        return min(WARMUP_S, self.duration_s / 6)


@dataclass
class Sample:
    """
    One node's resident memory and open file descriptors at one time.

    The resident set in its three parts, so a growth tells where it is: anonymous (the heaps:
    Python objects, malloc'd native memory), file-backed (mapped libraries and files) and shared
    memory (Fast DDS' segments).
    """

    elapsed_s: float
    rss_kb: int
    fds: int
    anon_kb: int = 0
    file_kb: int = 0
    shmem_kb: int = 0


@dataclass
class SoakRow:
    """One node over the run: frames answered, and its samples."""

    node: str
    sent: int = 0
    answered: int = 0
    samples: list[Sample] = field(default_factory=list)

    def reference(self, warmup_s: float) -> Sample:
        """Return the first sample at or after ``warmup_s`` (else the last)."""
        return next((s for s in self.samples if s.elapsed_s >= warmup_s), self.samples[-1])

    def growth_mb_per_hour(self, warmup_s: float, part: str = 'rss_kb') -> float:
        """Return the growth of ``part`` (a Sample field) from the warm-up to the end, per hour."""
        start, end = self.reference(warmup_s), self.samples[-1]
        hours = (end.elapsed_s - start.elapsed_s) / 3600
        grown_kb = getattr(end, part) - getattr(start, part)
        return grown_kb / MIB_KB / hours if hours > 0 else float('nan')


def soak_specs(keys: list[str] | None) -> list[NodeSpec]:
    """Return the specs of the chosen nodes (default: all), each in its own namespace."""
    unknown = [k for k in keys or () if k not in SOAK_NODES]
    if unknown:
        raise ParameterError(f"--nodes: unknown node {', '.join(unknown)}; choose from "
                             f"{','.join(SOAK_NODES)}")
    return [wired(key, NODE_SCHEMAS[SOAK_NODES[key]], f'{NAMESPACE}/{key}', LAYOUT_BINDINGS, {})
            for key in keys or SOAK_NODES]


def node_values(schema: ParameterSchema, assignments: list[str],
                device: str) -> dict[str, Value]:
    """
    Return the ``NAME=VALUE`` assignments this node declares, validated, and the device.

    A name goes to every node that has it (``method=bm`` reaches flow_node alone).
    """
    mine = [a for a in assignments if a.partition('=')[0] in schema.specs]
    values = schema.parse_assignments(mine)
    chosen = {a.partition('=')[0]: values[a.partition('=')[0]] for a in mine}
    if device != 'auto':
        chosen['device'] = device
    return chosen


def check_assignments(specs: list[NodeSpec], assignments: list[str]) -> None:
    """Raise ParameterError for a ``--node-param`` that no chosen node declares."""
    for text in assignments:
        name = text.partition('=')[0]
        if not any(name in spec.schema.specs for spec in specs):
            raise ParameterError(f'--node-param {text!r}: none of the nodes '
                                 f"({', '.join(s.key for s in specs)}) has a parameter {name!r}")


STATUS_FIELDS = {'VmRSS': 'rss_kb', 'RssAnon': 'anon_kb', 'RssFile': 'file_kb',
                 'RssShmem': 'shmem_kb'}


def sample(pid: int, elapsed_s: float) -> Sample:
    """Read the resident set (/proc/PID/status) and the open file descriptors of ``pid``."""
    with open(f'/proc/{pid}/status') as status:
        sizes = {STATUS_FIELDS[name]: int(value.split()[0]) for name, _, value in
                 (line.partition(':') for line in status) if name in STATUS_FIELDS}
    return Sample(round(elapsed_s, 1), fds=len(os.listdir(f'/proc/{pid}/fd')), **sizes)


class AnswerCounter:
    """Frames answered per node (messages on its first output) and frames sent, from the link."""

    def __init__(self, link: Link, specs: list[NodeSpec], rows: dict[str, SoakRow],
                 first_stamp: int):
        self.link = link
        self.by_topic = {spec.main_output: rows[spec.key] for spec in specs}
        self.first_stamp = first_stamp  # answers to the priming frames come late, not counted
        self.sent = 0

    def take(self) -> None:
        """Count the subscriber's arrivals and the publisher's sends so far."""
        for child, handle in ((self.link.subscriber, self._arrived),
                              (self.link.publisher, self._sent)):
            while True:
                try:
                    handle(child.lines.get_nowait().split())
                except queue.Empty:
                    break

    def _arrived(self, words: list[str]) -> None:
        if words[0] == 'arrived' and words[1] in self.by_topic \
                and int(words[2]) >= self.first_stamp:
            self.by_topic[words[1]].answered += 1

    def _sent(self, words: list[str]) -> None:
        self.sent += words[0] == 'sent'


def soak(specs: list[NodeSpec], options: SoakOptions, workdir: Path) -> list[SoakRow]:
    """Run the nodes and the camera for ``options.duration_s`` seconds; return the rows."""
    width, height = options.size
    scene = make_scene(width, height)
    inputs = {t for spec in specs for t in spec.inputs}
    sets = {str(k): [m for t, m in scene.messages[k].items() if t in inputs] for k in (0, 1)}
    outputs = {t: m for spec in specs for t, m in spec.outputs.items()}
    env = node_environment(random.randint(1, 101) if options.domain_id is None
                           else options.domain_id)
    assignments = list(options.node_params)
    check_assignments(specs, assignments)
    nodes = [start_node(spec, node_values(spec.schema, assignments, options.device), workdir, env,
                        reliable=False) for spec in specs]
    rows = {spec.key: SoakRow(spec.key) for spec in specs}
    link = Link(sets, outputs, workdir / 'camera', env)
    try:
        link.wait_ready(options.timeout_s, nodes)
        link.prime(['0', '1'], {spec.main_output for spec in specs}, options.timeout_s, nodes)
        count = round(options.duration_s * options.rate_hz)
        counter = AnswerCounter(link, specs, rows, link.stamp)
        link.publisher.command(f'pace 0,1 {count} {round(1e9 / options.rate_hz)} {link.stamp}')
        run_loop(nodes, rows, counter, count, options)
    finally:
        link.close()
        stop_nodes(nodes)
    return list(rows.values())


def run_loop(nodes: list[NodeProcess], rows: dict[str, SoakRow], counter: AnswerCounter,
             count: int, options: SoakOptions) -> None:
    """Count answers while the camera sends; sample every node every ``options.sample_s``."""
    start = time.monotonic()
    next_sample = start
    done_at = None
    while done_at is None or time.monotonic() < done_at + LINGER_S:
        time.sleep(POLL_S)
        counter.take()
        now = time.monotonic()
        if done_at is None and counter.sent >= count:
            done_at = now
        if now >= next_sample or (done_at is not None and now >= done_at + LINGER_S):
            for node in nodes:
                node.check_alive()
                rows[node.spec.key].samples.append(sample(node.process.pid, now - start))
            next_sample += options.sample_s
            print(f'{now - start:7.0f} s, {counter.sent} frames sent: ' + ', '.join(
                f'{key} {row.answered} answered {row.samples[-1].rss_kb / MIB_KB:.1f} MiB '
                f'{row.samples[-1].fds} fds' for key, row in rows.items()), flush=True)
        if done_at is None and now > start + options.duration_s + options.timeout_s:
            raise CLVisionError(f'the camera sent {counter.sent} of {count} frames in '
                                f'{now - start:.0f} s')
    for row in rows.values():
        row.sent = counter.sent
