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
A node's latency through real DDS, against its compute and the floor (`cl-vision bench node`).

Per node and frame size, with and without its visual topics subscribed: a publisher process
sends generated frames (a synthetic stereo scene, two frames alternating, so flow sees motion)
to the node process, node defaults, and a subscriber process takes its answers raw
(processes/transport_link.py). Frames go in lockstep: the next one once every subscribed output of
the previous one arrived, so nothing queues; warm-up frames (kernel builds, a flow node's first
frame of a size) are not counted. Latency: the publish of a frame's first input message to the
subscriber's callback for its last answer.

In the same run, after the node stopped: the transport floor, the same input messages and the
node's own last answers (same sizes) sent publisher -> subscriber without a node, floor = p50 of
the inputs + p50 of the answers; then the compute time, the algorithm timed in this process on
the same device as `cl-vision bench flow/surf/elas` time it (mean ms, upload and download
included). Overhead = latency - compute - floor: what the node adds (message conversion, the
executor, visual topics drawn on the host).

Beside each lockstep row, the share of frames answered at input rates (``--rates``, default 30,
60 and 120 Hz): the same publisher process sends ``--frames`` frames at the rate, alternating,
whatever the node answers (a camera does not wait), and the subscriber counts the frames for
which every subscribed output arrived with the frame's stamp by ``RATE_LINGER_S`` (or twice the
lockstep p90, if longer) after the last one was sent; latency p50 and p95 of those answered.
The node's keep-last-1 input drops what it cannot take, so answered/sent is the share of a
camera at that rate the node keeps up with. Where the others went, in the nodes' own words: the
nodes publish /diagnostics every ``DIAGNOSTICS_PERIOD_S`` here, and the subscriber sums the
windows that arrive during the run (every node process: frames taken, lost before the node,
skipped for a newer one, without a partner (stereo side, camera_info), bad input).

Nodes are data: BENCH_NODES names evaluation.nodes.NODE_SPECS entries (or ``pipeline``:
vision_pipeline on the stereo inputs, its flow and keypoints remapped to where flow_node and
surf_node publish them) with their parameters and their in-process compute, so another node is
one more entry. A node with a ``rate_hz`` is also fed at that rate, frames alternating, with
every output subscribed, for a sustained load: frames answered and latency under it.

A user's camera instead of ours (``--camera dds-defaults``): the publisher process runs without
the package's Fast DDS profile, reliable keep-last 5, as a driver on Fast DDS' defaults, and
``--node-inputs best_effort,default`` runs each node twice in the run, its inputs forced best
effort (as before the inputs took the publisher's reliability) and as it declares them: the
rows name the mode beside the node. ``--encodings`` bgr8 sends colour frames.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
import functools
import math
import os
from pathlib import Path
import time
from typing import Callable

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.datasets import Frame
from cl_vision_nodes.benchmarks.frame_work import extraction, FlowStream, matching, streaming
from cl_vision_nodes.benchmarks.scene import Scene
from cl_vision_nodes.benchmarks.timing import time_ms
from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
from cl_vision_nodes.processes.nodes import (LAYOUT_BINDINGS, node_parameters, NODE_SPECS,
                                             NodeProcess, NodeSpec, start_node, stop_nodes,
                                             wired)
from cl_vision_nodes.processes.transport_link import Link, Message, Series
from cl_vision_nodes.schemas import PIPELINE_SCHEMA

FRAMES = 30
WARMUP = 3
COMPUTE_REPEATS = 20
RATES_HZ = (30.0, 60.0, 120.0)
RATE_LINGER_S = 2.0  # after the last frame at a rate, for the answers still on their way
BEST_EFFORT_WAIT_S = 10.0  # for a warm-up answer with best-effort inputs (kernels built at start)
FIRST_FRAME_SETTLE_S = 0.5  # a node that answers from the second frame takes the first meanwhile
DIAGNOSTICS_PERIOD_S = 0.5  # the nodes' windows, short so that a rate's own are told apart
NODE_COUNTS = ('frames', 'lost_in_transport', 'skipped_for_newer', 'unmatched',
               'rejected_bad_input')  # FrameReport.key_values of each window, summed per rate
FLOOR_PREFIX = '/cl_vision_floor'
VISUAL_TOPICS = frozenset({layout.FLOW_COLOR_OUTPUT, layout.KEYPOINTS_IMAGE_OUTPUT,
                           layout.DISPARITY_COLOR_OUTPUT})

Prepare = Callable[[ClRuntime], Callable[[], object]]


def flow_compute(parameters: dict[str, Value], frames: list[Frame]) -> Prepare:
    """flow_node's frame work with the node's flow parameters (the dis preset's, say)."""
    flow = {name: value for name, value in parameters.items() if name in FLOW_SCHEMA.specs}
    return streaming(str(parameters['method']), [gray_to_raw(f.left) for f in frames], flow)


def surf_compute(parameters: dict[str, Value], frames: list[Frame]) -> Prepare:
    return extraction(parameters, gray_to_raw(frames[0].left))


def disparity_compute(parameters: dict[str, Value], frames: list[Frame]) -> Prepare:
    return matching(str(parameters.get('preset', 'robotics')), frames[0].left, frames[0].right)


def pipeline_compute(parameters: dict[str, Value], frames: list[Frame]) -> Prepare:
    """Flow (hs), SURF and ELAS one after the other on one runtime (each uploads its frame)."""
    parts = [flow_compute({'method': parameters['flow.method']}, frames),
             surf_compute({}, frames), disparity_compute({}, frames)]

    def prepare(runtime: ClRuntime) -> Callable[[], object]:
        calls = [part(runtime) for part in parts]
        return lambda: [call() for call in calls]
    return prepare


PIPELINE_OUTPUTS = {'flow': layout.FLOW_OUTPUT, 'flow/color': layout.FLOW_COLOR_OUTPUT,
                    'keypoints': layout.KEYPOINTS_OUTPUT,
                    'keypoints/image': layout.KEYPOINTS_IMAGE_OUTPUT,
                    'disparity': layout.DISPARITY_OUTPUT,
                    'disparity/color': layout.DISPARITY_COLOR_OUTPUT}
"""The pipeline's answers, remapped to where the separate nodes publish them (as the launch
file's pipeline:=true does)."""


@functools.cache
def pipeline_spec() -> NodeSpec:
    """Return vision_pipeline on the stereo inputs, every capability on, all outputs awaited."""
    # topics imports sensor_msgs: tools import without ROS (test_layers).
    from cl_vision_nodes.ros.topics import node_topics
    spec = wired('pipeline', PIPELINE_SCHEMA, layout.CAMERA_NAMESPACE, LAYOUT_BINDINGS, {})
    types = {t.name: t.type_name
             for t in node_topics('vision_pipeline', PIPELINE_SCHEMA.defaults()).outputs}
    return replace(spec, remaps=spec.remaps + tuple(f'{name}:={topic}' for name, topic
                                                    in PIPELINE_OUTPUTS.items()),
                   outputs={topic: types[name] for name, topic in PIPELINE_OUTPUTS.items()},
                   needs_previous_frame=True)


@dataclass(frozen=True)
class BenchNode:
    """
    A node the bench runs.

    ``specs`` name its evaluate.NODE_SPECS entries (process, namespace, inputs, outputs): one
    node, or several side by side on one device, beside the node parameters that differ from
    the defaults and the in-process compute of the same work (parameters, the two frames -> a
    prepare function as bench_timing.device_stages takes).
    """

    key: str
    specs: tuple[str, ...]
    parameters: dict[str, Value]
    compute: Callable[[dict[str, Value], list[Frame]], Prepare]
    rate_hz: float | None = None  # also fed at this rate (sustained load), frames alternating

    @property
    def node_specs(self) -> list[NodeSpec]:
        return [pipeline_spec() if name == 'pipeline' else NODE_SPECS[name]
                for name in self.specs]

    @property
    def node_spec(self) -> NodeSpec:
        """Return the node, or its processes as one: their inputs and answers together."""
        specs = self.node_specs
        return replace(specs[0], inputs=tuple(dict.fromkeys(t for s in specs for t in s.inputs)),
                       outputs={t: m for s in specs for t, m in s.outputs.items()},
                       needs_previous_frame=any(s.needs_previous_frame for s in specs))


def separate_compute(parameters: dict[str, Value], frames: list[Frame]) -> Prepare:
    """Return the work of flow_node (``method`` of ``parameters``), surf_node, disparity_node."""
    return pipeline_compute({'flow.method': parameters['method']}, frames)


BENCH_NODES = {node.key: node for node in (
    BenchNode('flow', ('flow',), {'method': 'hs'}, flow_compute),
    BenchNode('surf', ('surf',), {}, surf_compute),
    BenchNode('disparity', ('disparity',), {}, disparity_compute),
    BenchNode('pipeline', ('pipeline',), {}, pipeline_compute, rate_hz=150.0),
    BenchNode('separate', ('flow', 'surf', 'disparity'), {}, separate_compute),
)}
"""``separate``: flow_node, surf_node and disparity_node side by side on one device, as the
launch files' ``pipeline:=false``, against ``pipeline`` (the same answers from one process)."""


@dataclass
class RateResult:
    """Frames sent at a rate whatever the answers, and those answered (every output) in time."""

    rate_hz: float
    sent: int
    answered: int
    latency_p50_ms: float
    latency_p95_ms: float
    cpu_ms_per_frame: float = math.nan  # the node processes' host CPU (all threads) per frame sent
    node_counts: dict[str, int] = field(default_factory=dict)  # NODE_COUNTS, every node process

    @property
    def counts_line(self) -> str:
        """Return the nonzero node counts: ``node: 296 frames, 4 skipped_for_newer``."""
        return 'node: ' + ', '.join(f'{n} {k}' for k, n in self.node_counts.items()
                                    if n or k == 'frames')

    @property
    def cell(self) -> str:
        return (f'{self.answered}/{self.sent} {self.latency_p50_ms:.1f}/'
                f'{self.latency_p95_ms:.1f}')


@dataclass
class NodeRow:
    """One line of the table: a node at a size, visual topics subscribed or not."""

    node: str
    size: str
    visuals: bool
    latency_p50_ms: float
    latency_p90_ms: float
    answered: int
    unanswered: int
    floor_in_ms: float = math.nan
    floor_out_ms: float = math.nan
    compute_ms: float = math.nan
    input_bytes: int = 0
    output_bytes: int = 0
    rate_hz: float = math.nan  # the sustained load, when the node has one
    rate_answered: int = 0
    rate_sent: int = 0
    rate_latency_p50_ms: float = math.nan
    rates: list[RateResult] = field(default_factory=list)  # the answered share at input rates

    @property
    def floor_ms(self) -> float:
        return self.floor_in_ms + self.floor_out_ms

    @property
    def overhead_ms(self) -> float:
        return self.latency_p50_ms - self.compute_ms - self.floor_ms

    def as_dict(self) -> dict:
        return {**asdict(self), 'floor_ms': self.floor_ms, 'overhead_ms': self.overhead_ms}


@dataclass(frozen=True)
class Settings:
    """What every node of the run shares."""

    frames: int
    timeout_s: float
    env: dict[str, str]
    workdir: Path
    device: str
    rates_hz: tuple[float, ...] = RATES_HZ
    inputs: str = 'reliable'  # the nodes' input QoS: 'reliable', 'best_effort' or 'default'
    node_params: tuple[str, ...] = ()  # NAME=VALUE for every node process (e.g. executor=...)
    camera_dds_defaults: bool = False  # the publisher without the package's Fast DDS profile


INPUT_MODES = ('reliable', 'best_effort', 'default')
"""--node-inputs: reliable, two deep (a frame lost in transport is not the node's: evaluation's
reliable_inputs); best effort, keep-last 1 (the nodes before their inputs took the publisher's
reliability); or as the node declares them (a user's run)."""


def input_overrides(spec: NodeSpec, mode: str) -> dict[str, Value]:
    """Return the QoS overrides of ``mode`` beyond start_node's reliable ones (best effort)."""
    if mode != 'best_effort':
        return {}
    return {'qos_overrides': {topic: {'subscription': {'reliability': 'best_effort'}}
                              for topic in spec.inputs}}


def outputs_of(spec: NodeSpec, visuals: bool) -> dict[str, str]:
    return {t: m for t, m in spec.outputs.items() if visuals or t not in VISUAL_TOPICS}


def run_node(bench: BenchNode, scenes: list[Scene],
             settings: Settings) -> tuple[list[NodeRow], dict[tuple[str, bool], dict]]:
    """
    Measure one node process at every size, without then with its visual topics.

    Returns the rows and the node's last answers per (size, visuals), for the floor.
    """
    spec = bench.node_spec
    assignments = [f'{spec.key}.{name}={value}' for name, value in bench.parameters.items()]
    parameters = node_parameters(bench.node_specs, assignments, settings.device)
    for s in bench.node_specs:  # --node-param: every process, checked against its own schema
        parameters[s.key].update(node_param_values(s, settings.node_params))
    logs = settings.workdir / f'{bench.key}_{settings.inputs}'
    logs.mkdir(parents=True)
    nodes = [start_node(s, {'diagnostics_period': DIAGNOSTICS_PERIOD_S, **parameters[s.key],
                            **input_overrides(s, settings.inputs)}, logs,
                        settings.env, settings.inputs == 'reliable')
             for s in bench.node_specs]
    label = bench.key if settings.inputs == 'reliable' else f'{bench.key}:{settings.inputs}'
    rows, answers = [], {}
    try:
        for visuals in (False, True):
            outputs = outputs_of(spec, visuals)
            expected = set(outputs)
            sets = {f'{s.size} {k}': s.inputs(spec, k) for s in scenes for k in (0, 1)}
            link = Link(sets, outputs, logs / f'visuals_{visuals}', settings.env,
                        dds_defaults=settings.camera_dds_defaults, diagnostics=True)
            try:
                link.wait_ready(settings.timeout_s, nodes)
                for scene in scenes:
                    names = [f'{scene.size} 0', f'{scene.size} 1']
                    if spec.needs_previous_frame:
                        link.send(names[1])
                        time.sleep(FIRST_FRAME_SETTLE_S)
                    warmup = link.lockstep(names, WARMUP, expected,
                                           answer_wait_s(None, settings), nodes)
                    if not warmup.latency_ms and settings.inputs != 'best_effort':
                        raise CLVisionError(f'{bench.key} answered none of {WARMUP} warm-up '
                                            f'frames at {scene.size} (logs: {logs})')
                    series = link.lockstep(names, settings.frames, expected,
                                           answer_wait_s(warmup, settings), nodes)
                    at_rates = [at_rate(link, names, rate, expected, settings, nodes, series)
                                for rate in settings.rates_hz]
                    rate = sustained(link, bench, names, expected, settings, nodes) \
                        if visuals and bench.rate_hz else {}
                    if settings.inputs != 'best_effort':  # its frames may never arrive
                        answers[scene.size, visuals] = link.save(
                            logs / f'answers_{scene.size}_{visuals}', names[0], expected,
                            settings.timeout_s, nodes)
                    rows.append(NodeRow(
                        label, scene.size, visuals, series.p(50), series.p(90),
                        len(series.latency_ms), series.lost,
                        input_bytes=sum(len(m.data) for m in scene.inputs(spec, 0)),
                        output_bytes=sum(map(len, answers.get((scene.size, visuals),
                                                              {}).values())),
                        rates=at_rates, **rate))
                    print(f'  {label} {scene.size} visuals {"yes" if visuals else "no"}: '
                          f'latency p50 {series.p(50):.2f} ms'
                          + ''.join(f'; at {r.rate_hz:g} Hz {r.answered}/{r.sent} answered, '
                                    f'p50 {r.latency_p50_ms:.2f} p95 {r.latency_p95_ms:.2f} ms, '
                                    f'node CPU {r.cpu_ms_per_frame:.2f} ms/frame '
                                    f'({r.counts_line})'
                                    for r in at_rates), flush=True)
            finally:
                link.close()
    finally:
        stop_nodes(nodes)
    for node in nodes:  # where the node's time went, in its own words (frame_stats' stages)
        timing = [line.split(']: ', 1)[-1] for line in node.log.read_text(errors='replace')
                  .splitlines() if ' fps, latency mean ' in line]
        if timing:
            print(f'  {node.spec.key} node, last window: {timing[-1]}', flush=True)
    return rows, answers


def answer_wait_s(warmup: Series | None, settings: Settings) -> float:
    """
    Return how long lockstep waits for an answer: in the warm-up (None), or after it.

    A frame lost before the node is never answered: with best-effort inputs, wait
    ``BEST_EFFORT_WAIT_S`` in the warm-up, then four times its last answer (at least
    ``RATE_LINGER_S``), not the start-up timeout.
    """
    if settings.inputs != 'best_effort':
        return settings.timeout_s
    if warmup is None or not warmup.latency_ms:
        return min(settings.timeout_s, BEST_EFFORT_WAIT_S)
    return min(settings.timeout_s, max(RATE_LINGER_S, 4 * warmup.latency_ms[-1] / 1e3))


def at_rate(link: Link, names: list[str], rate_hz: float, expected: set[str],
            settings: Settings, nodes: list[NodeProcess], lockstep: Series) -> RateResult:
    """Send ``settings.frames`` frames at ``rate_hz`` whatever the answers; count the answered."""
    check_alive(nodes)
    linger_s = max(RATE_LINGER_S, 2 * lockstep.p(90) / 1e3) if lockstep.latency_ms \
        else RATE_LINGER_S
    since = link.settle(1.5 * DIAGNOSTICS_PERIOD_S)  # the windows before this rate arrived
    cpu_before = sum(cpu_seconds(node.process.pid) for node in nodes)
    series = link.paced(names, settings.frames, rate_hz, expected, linger_s=linger_s)
    cpu_s = sum(cpu_seconds(node.process.pid) for node in nodes) - cpu_before
    every = settings.frames * len(nodes)  # each node process counts each frame once
    deadline = time.monotonic() + max(RATE_LINGER_S, 4 * DIAGNOSTICS_PERIOD_S)
    while sum(link.frame_counts(since, NODE_COUNTS).values()) < every \
            and time.monotonic() < deadline:  # a frame lost last is never counted
        link.settle(DIAGNOSTICS_PERIOD_S)
    check_alive(nodes)
    return RateResult(rate_hz, settings.frames, len(series.latency_ms), series.p(50),
                      series.p(95), 1e3 * cpu_s / settings.frames,
                      link.frame_counts(since, NODE_COUNTS))


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU seconds of process ``pid`` so far (Linux; else NaN)."""
    try:
        fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def sustained(link: Link, bench: BenchNode, names: list[str], expected: set[str],
              settings: Settings, nodes: list[NodeProcess]) -> dict[str, float | int]:
    """Feed the node at its ``rate_hz``, frames alternating; answered frames and latency."""
    count = max(settings.frames, round(2 * bench.rate_hz))  # at least two seconds
    link.paced(names, WARMUP, bench.rate_hz, expected)
    check_alive(nodes)
    series = link.paced(names, count, bench.rate_hz, expected, linger_s=2.0)
    print(f'  {bench.key} at {bench.rate_hz:g} Hz: {len(series.latency_ms)}/{count} answered, '
          f'latency p50 {series.p(50):.2f} ms', flush=True)
    return {'rate_hz': bench.rate_hz, 'rate_answered': len(series.latency_ms),
            'rate_sent': count, 'rate_latency_p50_ms': series.p(50)}


def check_alive(nodes: list[NodeProcess]) -> None:
    """Raise if a node died (``NodeProcess.check_alive``)."""
    for node in nodes:
        node.check_alive()


def measure_floor(bench: BenchNode, scenes: list[Scene], rows: list[NodeRow],
                  answers: dict[tuple[str, bool], dict], settings: Settings) -> None:
    """Send the node's inputs and its answers publisher -> subscriber; fill the rows' floor."""
    spec = bench.node_spec
    sets = {}
    for scene in scenes:
        sets[f'{scene.size} in'] = scene.inputs(spec, 0, FLOOR_PREFIX)
        for visuals in (False, True):
            sets[f'{scene.size} out {visuals}'] = [
                Message(FLOOR_PREFIX + t, spec.outputs[t], data)
                for t, data in answers[scene.size, visuals].items()]
    topics = {m.topic: m.msgtype for messages in sets.values() for m in messages}
    link = Link(sets, topics, settings.workdir / bench.key / 'floor', settings.env)
    try:
        link.wait_ready(settings.timeout_s)
        floor = {}
        for name, messages in sets.items():
            expected = {m.topic for m in messages}
            link.lockstep([name], WARMUP, expected, settings.timeout_s)
            floor[name] = link.lockstep([name], settings.frames, expected,
                                        settings.timeout_s).p(50)
    finally:
        link.close()
    for row in rows:
        row.floor_in_ms = floor[f'{row.size} in']
        row.floor_out_ms = floor[f'{row.size} out {row.visuals}']


def node_param_values(spec: NodeSpec, node_params: tuple[str, ...]) -> dict[str, Value]:
    """Return the --node-param values (NAME=VALUE) as ``spec``'s schema reads them."""
    values = spec.schema.parse_assignments(list(node_params))
    return {name: values[name] for name in (a.partition('=')[0] for a in node_params)}


def measure_compute(bench: BenchNode, scenes: list[Scene], rows: list[NodeRow],
                    runtime: ClRuntime, node_params: tuple[str, ...]) -> None:
    """
    Time the node's algorithm in this process, as the node ran (``node_params`` too).

    Flow's frame from its bytes to its flow, the next one enqueued between frames as in flow_node.
    """
    spec = bench.node_spec
    parameters = {**spec.schema.defaults(), **bench.parameters,
                  **node_param_values(spec, node_params)}
    for scene in scenes:
        call = bench.compute(parameters, scene.frames)(runtime)
        between = call.between if isinstance(call, FlowStream) else lambda: None
        mean_ms = time_ms(call, COMPUTE_REPEATS, between=between).mean_ms
        for row in rows:
            if row.size == scene.size:
                row.compute_ms = mean_ms


def select(names: list[str] | None) -> list[BenchNode]:
    unknown = [n for n in names or () if n not in BENCH_NODES]
    if unknown:
        raise ParameterError(f"--nodes: unknown node {', '.join(unknown)}; choose from "
                             f"{', '.join(BENCH_NODES)}")
    chosen = [BENCH_NODES[n] for n in names or BENCH_NODES]
    missing = [b.key for b in chosen
               if any(name != 'pipeline' and name not in NODE_SPECS for name in b.specs)
               or not all(spec.available() for spec in b.node_specs)]
    if missing:
        raise ParameterError(f"--nodes: {', '.join(missing)} not available in this version")
    return chosen


def input_modes(names: list[str] | None) -> list[str]:
    """Return the --node-inputs modes (ParameterError naming an unknown one)."""
    unknown = [n for n in names or () if n not in INPUT_MODES]
    if unknown:
        raise ParameterError(f"--node-inputs: unknown {', '.join(unknown)}; choose from "
                             f"{', '.join(INPUT_MODES)}")
    return list(names or ['reliable'])


def bench_nodes(benches: list[BenchNode], scenes: list[Scene], settings: Settings,
                modes: list[str], runtime: ClRuntime) -> list[NodeRow]:
    """Measure each node in each input mode, then its floor and its in-process compute."""
    rows: list[NodeRow] = []
    for bench in benches:
        node_rows: list[NodeRow] = []
        answers: dict[tuple[str, bool], dict] = {}
        for mode in modes:  # the same node, each way its inputs can be, in one run
            mode_rows, mode_answers = run_node(bench, scenes, replace(settings, inputs=mode))
            node_rows += mode_rows
            answers.update(mode_answers)
        if answers:  # the floor needs answers: a best_effort run alone saves none
            measure_floor(bench, scenes, node_rows, answers, settings)
        measure_compute(bench, scenes, node_rows, runtime, settings.node_params)
        rows += node_rows
    return rows
