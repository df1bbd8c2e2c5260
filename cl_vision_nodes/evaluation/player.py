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
The lockstep player: one frame out, every due answer in, then the next frame.

The evaluator's own ROS node publishes a frame as the bag's stored CDR bytes (camera infos
first), waits until every node due for that frame has published all its outputs with the
frame's stamp or the timeout has passed, and only then sends the next frame. A slow device
therefore never loses a frame to its keep-last-1 input queue: "dropped" counts only frames
without an answer within the timeout. Everything the nodes publish is taken as raw CDR (never
deserialised for recording) with its DDS receive time and written unchanged into the output bag,
next to the played inputs: inputs logged at their publish time, outputs at their receive time,
as ``ros2 bag record`` would. The nodes' /diagnostics are kept for the per-stage timing.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
import math
from pathlib import Path
import time
from typing import Any, Iterable, Iterator, Protocol

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.storage import BagWriter, message_class, open_writer
from cl_vision_nodes.errors import CLVisionError
from cl_vision_nodes.evaluation.frames import BagFrame, CAMERA_INFO_TYPE, deserialize
from cl_vision_nodes.evaluation.progress_bar import bar, StatusLine
from cl_vision_nodes.params import Value
from cl_vision_nodes.processes.nodes import NodeProcess, NodeSpec, start_node, stop_nodes
from cl_vision_nodes.ros.cdr import read_stamp
from cl_vision_nodes.ros.dds_profile import use_large_image_profile
import numpy as np

# rclpy is imported inside the functions that use it: tools import without ROS (test_layers).

SETTLE_S = 0.3
POLL_S = 0.02
STATUS_PERIOD_S = 1.0
DIAGNOSTICS_TYPE = 'diagnostic_msgs/msg/DiagnosticArray'
DIAGNOSTICS_GRACE_S = 1.0  # beyond a diagnostics period, for the last window to arrive
MAX_DIAGNOSTICS_WAIT_S = 6.0


class Scorer(Protocol):
    """The accuracy of one node's answers (scorers.py)."""

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None: ...

    def summary(self) -> dict[str, Any]: ...

    def pictures(self, out: Path) -> dict[str, str]: ...


@dataclass(frozen=True)
class Received:
    topic: str
    stamp_ns: int
    time_ns: int
    data: bytes


def mean(values: Iterable[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(finite)) if finite else None


@dataclass
class NodeRun:
    """
    What one node did.

    The frames it was fed and those it was due to answer (flow answers from the second frame of a
    size), the latency of each answer that came within the timeout, and its accuracy scorer (None
    for a helper such as rectify_node).
    """

    spec: NodeSpec
    scorer: Scorer | None
    fed: int = 0
    due: list[int] = field(default_factory=list)
    latency_ms: dict[int, float] = field(default_factory=dict)

    def feeds(self, frame: BagFrame) -> bool:
        return all(t in frame.messages for t in self.spec.needs)

    def is_due(self, frame: BagFrame, size: tuple[int, int],
               previous_size: tuple[int, int] | None) -> bool:
        return self.feeds(frame) and (not self.spec.needs_previous_frame or size == previous_size)

    def steady_latencies_ms(self) -> list[float]:
        """Return the latencies of the answers after the first (the node's steady state)."""
        return [self.latency_ms[i] for i in sorted(self.latency_ms)[1:]]

    def fps(self) -> float | None:
        """Return the answers after the first over their summed latencies."""
        steady = self.steady_latencies_ms()
        busy_s = sum(steady) / 1000.0
        return len(steady) / busy_s if busy_s > 0 else None

    def summary(self) -> dict[str, Any]:
        """
        Return the counts, timing and accuracy of the run.

        The first answer apart (``first_latency_ms``: a cold device cache compiles then), the
        latency statistics and throughput of the answers after it.
        """
        latencies = np.array(self.steady_latencies_ms())
        timing = ({'mean': float(latencies.mean()), 'p50': float(np.percentile(latencies, 50)),
                   'p95': float(np.percentile(latencies, 95)), 'max': float(latencies.max())}
                  if latencies.size else None)
        summary = {'module': self.spec.module, 'frames_fed': self.fed,
                   'frames_due': len(self.due),
                   'answered': len(self.latency_ms),
                   'dropped': len(self.due) - len(self.latency_ms),
                   'first_latency_ms': (self.latency_ms[min(self.latency_ms)]
                                        if self.latency_ms else None),
                   'latency_ms': timing, 'throughput_fps': self.fps(),
                   'latency_per_frame_ms': [[i, ms] for i, ms in self.latency_ms.items()]}
        if self.scorer is not None:
            summary['accuracy'] = self.scorer.summary()
        return summary


class StageTiming:
    """
    The nodes' own timing from their /diagnostics: per-stage means weighted by frames.

    Each node publishes, every diagnostics_period, the mean ms per frame of each stage of its last
    window (``stage_<name>_ms``: receive, upload, compute, download, publish, visual...) and the
    window's frame count; the run's mean of a stage is the frame-weighted mean of its windows.
    """

    def __init__(self, names: dict[str, str]):
        """``names`` maps a node's fully qualified name to its key in the report."""
        self.names = names
        self.frames: Counter[str] = Counter()
        self.sums: dict[str, dict[str, float]] = {key: {} for key in names.values()}

    def add(self, data: bytes) -> None:
        for status in deserialize(data, DIAGNOSTICS_TYPE).status:
            key = self.names.get(status.name.rpartition(': ')[0])
            values = {kv.key: kv.value for kv in status.values}
            frames = int(values.get('frames', 0))
            if key is None or not frames:
                continue
            self.frames[key] += frames
            sums = self.sums[key]
            for name, value in values.items():
                if (name.startswith('stage_') and name.endswith('_ms')) or \
                        name == 'latency_mean_ms':
                    sums[name] = sums.get(name, 0.0) + float(value) * frames

    def summary(self, key: str) -> dict[str, Any] | None:
        """Return the frames and mean ms per stage of node ``key`` (None without diagnostics)."""
        frames = self.frames[key]
        if not frames:
            return None
        sums = self.sums[key]
        stages = {name[len('stage_'):-len('_ms')]: total / frames
                  for name, total in sums.items() if name.startswith('stage_')}
        return {'frames': frames, 'stage_ms': stages,
                'node_latency_mean_ms': sums.get('latency_mean_ms', 0.0) / frames}


class Player:
    """
    The evaluator's ROS node: publishes frames as stored CDR bytes, takes answers as raw CDR.

    Every answer comes with its DDS receive time, so latency does not include our own spinning
    delays.
    """

    def __init__(self, inputs: dict[str, str], outputs: dict[str, str]):
        """Publish ``inputs`` and subscribe ``outputs`` (topic -> message type each)."""
        from cl_vision_nodes.ros.rclpy_compat import with_message_info
        import rclpy
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        self.node = rclpy.create_node('cl_vision_eval')
        # Reliable both ways: the nodes' inputs are made reliable for the run (reliable_inputs)
        # and their outputs are.
        publish_qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        record_qos = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST,
                                reliability=ReliabilityPolicy.RELIABLE)
        self.publishers = {t: self.node.create_publisher(message_class(m), t, publish_qos)
                           for t, m in inputs.items()}
        self.infos = {t for t, m in inputs.items() if m == CAMERA_INFO_TYPE}
        self.subscriptions = {t: self.node.create_subscription(
            message_class(m), t, with_message_info(partial(self._on_output, t)), record_qos,
            raw=True)
            for t, m in outputs.items()}
        self.inbox: list[Received] = []

    def _on_output(self, topic: str, data: bytes, info: dict | None) -> None:
        received = (info or {}).get('received_timestamp') or time.time_ns()  # None on Humble
        self.inbox.append(Received(topic, read_stamp(data), received, data))

    def spin(self, seconds: float) -> None:
        import rclpy
        rclpy.spin_once(self.node, timeout_sec=seconds)

    def take(self) -> list[Received]:
        taken, self.inbox = self.inbox, []
        return taken

    def unconnected(self, nodes: list[NodeProcess]) -> list[str]:
        """
        Return the topics whose endpoints have not all matched yet.

        Topics between two nodes (rectify_node -> flow_node) are checked in the ROS graph.
        """
        from cl_vision_nodes.ros.rclpy_compat import publisher_count
        needed = Counter(t for node in nodes for t in node.spec.inputs)
        waiting = [t for t, n in needed.items() if t in self.publishers
                   and self.publishers[t].get_subscription_count() < n]
        waiting += [t for t, n in needed.items() if t not in self.publishers and
                    self.node.count_subscribers(t) < n + (t in self.subscriptions)]
        return waiting + [t for t, s in self.subscriptions.items()
                          if publisher_count(self.node, s) < 1]

    def publish(self, messages: dict[str, bytes], only: set[str] | None = None) -> int:
        """Publish ``messages`` (played topic -> CDR), camera infos first; return the time."""
        start = time.time_ns()
        for topic in sorted(messages, key=lambda t: t not in self.infos):
            if only is None or topic in only:
                self.publishers[topic].publish(messages[topic])
        return start

    def destroy(self) -> None:
        self.node.destroy_node()


def wait_connected(player: Player, nodes: list[NodeProcess], timeout_s: float) -> None:
    """Until every node's inputs and outputs are matched: a frame sent before that is lost."""
    deadline = time.monotonic() + timeout_s
    while waiting := player.unconnected(nodes):
        for node in nodes:
            node.check_alive()
        if time.monotonic() > deadline:
            raise CLVisionError(f'nodes not connected after {timeout_s:g} s on '
                                f"{', '.join(waiting)} (logs in {nodes[0].log.parent})")
        player.spin(POLL_S)
    settle(player)


def settle(player: Player) -> None:
    """Spin a moment: the nodes' side of a match (or a message) lands right after ours."""
    end = time.monotonic() + SETTLE_S
    while time.monotonic() < end:
        player.spin(POLL_S)


ACCURACY_HEADLINES = (('epe', 'EPE {:.3f} px'), ('d1', 'D1 {:.1%}'),
                      ('repeatability', 'repeatability {:.2f}'))


def node_status(run: NodeRun) -> str:
    """``flow 12.3 fps EPE 0.031 px``: a node's rate and its main accuracy figure so far."""
    summary = run.scorer.summary() if run.scorer is not None else {}
    accuracy = next((fmt.format(summary[key]) for key, fmt in ACCURACY_HEADLINES
                     if summary.get(key) is not None), '')
    return f'{run.spec.key} {run.fps() or 0.0:.1f} fps {accuracy}'.rstrip()


def nodes(runs: list[NodeRun]) -> str:
    """Return every scored node's status (``node_status``), comma-separated."""
    return ', '.join(node_status(r) for r in runs if r.scorer is not None)


class Progress:
    """
    Progress on the terminal: a bar on stderr (progress_bar.py), or status lines on stdout.

    With ``lines``, one status line a second on stdout with every node's rate and accuracy so far
    (the demo's view). ``total`` is an estimate when frames are selected by time.
    """

    def __init__(self, total: int, lines: bool = False):
        self.total, self.lines = total, lines
        self.started, self.shown = time.monotonic(), 0.0
        self.bar = StatusLine()

    def update(self, done: int, runs: list[NodeRun], force: bool = False) -> None:
        now = time.monotonic()
        if self.lines and (force or now - self.shown >= STATUS_PERIOD_S):
            self.shown = now
            print(f'[{now - self.started:5.1f} s] frames {done}/{self.total}: {nodes(runs)}',
                  flush=True)
        elif not self.lines and self.bar.due(force):
            self.bar.show(f'{bar(done, self.total)} frames  {nodes(runs)}  '
                          f'{now - self.started:.0f} s')

    def finish(self) -> None:
        self.bar.finish()


class Recorder:
    """The output rosbag2: one connection per topic, typestore message definitions included."""

    def __init__(self, writer: BagWriter, types: dict[str, str]):
        self.writer = writer
        for topic, msgtype in types.items():
            writer.add_topic(topic, msgtype)
        self.received: Counter[str] = Counter()

    def write(self, topic: str, time_ns: int, data: bytes) -> None:
        self.writer.write(topic, time_ns, data)


@dataclass
class Session:
    """The DDS side of a run: the player, the recorder, the node processes and their timing."""

    player: Player
    recorder: Recorder
    nodes: list[NodeProcess]
    timing: StageTiming
    played: dict[str, str]  # bag topic -> the topic it is published on
    timeout_s: float

    def collect(self, answers: dict[str, Received] | None = None, stamp_ns: int = 0,
                expected: set[str] = frozenset()) -> None:
        """Record what arrived; keep the expected answers to ``stamp_ns`` in ``answers``."""
        for received in self.player.take():
            self.recorder.write(received.topic, received.time_ns, received.data)
            self.recorder.received[received.topic] += 1
            if received.topic == layout.DIAGNOSTICS:
                self.timing.add(received.data)
            elif answers is not None and received.stamp_ns == stamp_ns and \
                    received.topic in expected:
                answers[received.topic] = received

    def play_frame(self, frame: BagFrame, due: list[NodeRun]) -> tuple[int, dict[str, Received]]:
        """
        Publish one frame and wait for every output of the due nodes with its stamp.

        Records all that arrives meanwhile (late answers to earlier frames included). Returns the
        publish time and the answers by topic.
        """
        messages = {self.played.get(t, t): d for t, d in frame.messages.items()
                    if self.played.get(t, t) in self.player.publishers}
        sent_ns = self.player.publish(messages)
        for topic, data in frame.messages.items():
            self.recorder.write(self.played.get(topic, topic), sent_ns, data)
        expected = {topic for run in due for topic in run.spec.outputs}
        answers: dict[str, Received] = {}
        deadline = time.monotonic() + self.timeout_s
        while True:
            self.collect(answers, frame.stamp_ns, expected)
            if expected <= answers.keys() or time.monotonic() > deadline:
                return sent_ns, answers
            for node in self.nodes:
                node.check_alive()
            self.player.spin(POLL_S)

    def preroll(self, frame: BagFrame) -> None:
        """Send the first frame's camera infos once ahead: rectify_node needs one before images."""
        infos = {self.played.get(t, t): d for t, d in frame.messages.items()
                 if self.played.get(t, t) in self.player.infos}
        self.player.publish(infos)
        settle(self.player)

    def await_diagnostics(self, runs: list[NodeRun], periods: dict[str, float]) -> None:
        """
        Wait for the nodes' last diagnostics window, which closes a period after the last frame.

        Until each node with diagnostics reported as many frames as it was fed, for at most a
        period plus a grace (``MAX_DIAGNOSTICS_WAIT_S`` in all; a frame it refused never comes).
        """
        waits = [p for p in periods.values() if p > 0]
        deadline = time.monotonic() + min(max(waits, default=0.0) + DIAGNOSTICS_GRACE_S,
                                          MAX_DIAGNOSTICS_WAIT_S)
        while waits and time.monotonic() < deadline:
            self.collect()
            if all(self.timing.frames[r.spec.key] >= r.fed for r in runs
                   if periods.get(r.spec.key, 0) > 0):
                return
            self.player.spin(POLL_S)


def play(session: Session, frames: Iterator[BagFrame], runs: list[NodeRun], size_of: Any,
         progress: Progress) -> tuple[int, bool]:
    """
    Play every frame in lockstep; return the frames sent and whether Ctrl-C ended the run.

    What was recorded until an early Ctrl-C is kept and reported. ``size_of(frame)`` gives the
    frame's image size (flow answers from the second frame of a size).
    """
    from rclpy.executors import ExternalShutdownException
    previous_size = None
    sent, interrupted = 0, False
    try:
        for frame in frames:
            size = size_of(frame)
            due = [run for run in runs if run.is_due(frame, size, previous_size)]
            sent_ns, answers = session.play_frame(frame, due)
            sent += 1
            previous_size = size
            for run in runs:
                run.fed += run.feeds(frame)
            for run in due:
                run.due.append(frame.index)
                main = answers.get(run.spec.main_output)
                if main is not None:
                    run.latency_ms[frame.index] = (main.time_ns - sent_ns) / 1e6
                    if run.scorer is not None:
                        run.scorer.add(frame, main.data, size)
            progress.update(sent, runs)
    except (KeyboardInterrupt, ExternalShutdownException):
        interrupted = True
    progress.update(sent, runs, force=True)
    progress.finish()
    return sent, interrupted


@dataclass
class Outcome:
    """How the lockstep run went, besides what each NodeRun holds."""

    sent: int
    interrupted: bool
    wall_s: float
    exit_codes: dict[str, int]
    received: Counter[str]
    timing: StageTiming


def evaluate_bag(frames: Iterator[BagFrame], inputs: dict[str, str], played: dict[str, str],
                 runs: list[NodeRun], parameters: dict[str, dict[str, Value]], out: Path,
                 env: dict[str, str], timeout_s: float, progress: Progress,
                 size_of: Any, preroll: bool = False) -> Outcome:
    """
    Start the nodes, play the frames in lockstep into DIR/bag, stop the nodes.

    ``inputs`` maps every played topic to its type (those the nodes subscribe are published, all
    are recorded), ``played`` a bag topic to its played name where they differ, ``parameters``
    each node's parameters by key. ``preroll`` sends the first camera infos ahead.
    """
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    outputs = {t: m for run in runs for t, m in run.spec.outputs.items()}
    outputs[layout.DIAGNOSTICS] = DIAGNOSTICS_TYPE
    published = {t: m for t, m in inputs.items() if any(t in r.spec.inputs for r in runs)}
    timing = StageTiming({run.spec.name: run.spec.key for run in runs})
    periods = {run.spec.key: float({**run.spec.schema.defaults(), **parameters[run.spec.key],
                                    **run.spec.parameters}['diagnostics_period'])
               for run in runs}
    use_large_image_profile()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)  # child_processes has them
    nodes: list[NodeProcess] = []
    player = None
    wall_s, sent, interrupted = 0.0, 0, False
    try:
        nodes = [start_node(run.spec, parameters[run.spec.key], out / 'logs', env)
                 for run in runs]
        player = Player(published, outputs)
        with open_writer(out / 'bag') as writer:
            recorder = Recorder(writer, inputs | outputs)
            session = Session(player, recorder, nodes, timing, played, timeout_s)
            wait_connected(player, nodes, timeout_s)
            first = next(frames, None)
            if first is not None and preroll:
                session.preroll(first)
            started = time.monotonic()
            sent, interrupted = play(session, chain([first] if first else [], frames), runs,
                                     size_of, progress)
            wall_s = time.monotonic() - started
            if not interrupted:
                session.await_diagnostics(runs, periods)
    finally:
        exit_codes = stop_nodes(nodes)
        if player is not None:
            player.destroy()
        rclpy.try_shutdown()
    return Outcome(sent, interrupted, wall_s, exit_codes, recorder.received, timing)
