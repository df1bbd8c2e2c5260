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
`cl-vision eval BAG --out DIR`: run the nodes as real ROS processes on a dataset bag.

It records what they publish and reports timing and accuracy.

The bag follows ``bag_layout`` (`cl-vision make-bag` writes such bags). The evaluator starts
flow_node and surf_node in ``/camera/left`` and disparity_node in ``/camera`` (each a
``python -m`` process with its own log), then plays the bag in lockstep over DDS: it publishes one
frame (the stored CDR bytes of the left image, and for the stereo node the right image and both
camera infos), waits until every node due for that frame has published all its outputs with the
frame's stamp or ``--timeout`` has passed, and only then sends the next frame. A slow device
therefore never loses a frame to its keep-last-1 input queue: "dropped" counts only frames
without an answer within the timeout.

Everything the nodes publish is received as raw CDR (never deserialised for recording) and
written unchanged into DIR/bag (rosbag2 MCAP, with message definitions, for ``ros2 bag``),
next to the played inputs and the ground truth. Inputs are logged at their publish time and
outputs at their DDS receive time, as ``ros2 bag record`` would.

Measured per node: latency (input publish -> output receive on its main topic), throughput
(answered frames over the time spent answering them: what the node sustains when fed back to
back), dropped frames, and accuracy where the bag has ground truth: flow EPE/AAE/density,
disparity D1 (|d - gt| > 3 px and > 5 %, invalid counted as an error), bad > 2 px and density,
SURF repeatability and matching score of every frame against the first under the ground-truth
homography. DIR/report.json holds the numbers, DIR/report.md the same as tables with pictures.
"""
from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
import importlib.util
import json
import math
import os
from pathlib import Path
import random
import signal
import struct
import subprocess
import sys
import time
from typing import Any, Iterator, Protocol

import cl_vision_nodes
from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.elas.metrics import bad_pixel_errors, d1_errors
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import CLVisionError, DataFormatError, ParameterError
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.ros.dds_profile import use_large_image_profile
from cl_vision_nodes.surf.schema import SURF_SCHEMA
from cl_vision_nodes.tools import bag_layout as layout
from cl_vision_nodes.tools.cli_common import integer_in, output_folder, positive_number
from cl_vision_nodes.tools.replay import Bag, message_class, open_reader
import numpy as np

DEFAULT_TIMEOUT_S = 120.0
LOOKAHEAD_FRAMES = 2
SETTLE_S = 0.3
STOP_TIMEOUT_S = 15.0
POLL_S = 0.02
PROGRESS_PERIOD_S = 0.25
STATUS_PERIOD_S = 1.0
BAD_PIXELS = 2.0  # the report's bad-N, beside KITTI's D1
MAX_DOMAIN_ID = 232  # the largest ROS_DOMAIN_ID that DDS maps to valid UDP ports
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C; the partial report is still written
CLOUD_TYPE = 'sensor_msgs/msg/PointCloud2'
DISPARITY_TYPE = 'stereo_msgs/msg/DisparityImage'
DIAGNOSTICS_TYPE = 'diagnostic_msgs/msg/DiagnosticArray'


@dataclass(frozen=True)
class NodeSpec:
    """How the evaluator runs one node: where it lives in the graph and what it answers."""

    key: str
    module: str
    schema: ParameterSchema
    namespace: str
    remaps: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: dict[str, str]  # topic -> message type; the first is the node's main answer
    needs_previous_frame: bool = False  # flow: nothing for the first frame of a size

    @property
    def main_output(self) -> str:
        return next(iter(self.outputs))

    def available(self) -> bool:
        return importlib.util.find_spec(self.module) is not None


NODE_SPECS = {spec.key: spec for spec in (
    NodeSpec('flow', 'cl_vision_nodes.ros.flow_node', FLOW_SCHEMA, layout.LEFT_NAMESPACE,
             (f'image:={layout.LEFT_IMAGE}',), (layout.LEFT_IMAGE,),
             {layout.FLOW_OUTPUT: layout.IMAGE_TYPE,
              layout.FLOW_COLOR_OUTPUT: layout.IMAGE_TYPE},
             needs_previous_frame=True),
    NodeSpec('surf', 'cl_vision_nodes.ros.surf_node', SURF_SCHEMA, layout.LEFT_NAMESPACE,
             (f'image:={layout.LEFT_IMAGE}',), (layout.LEFT_IMAGE,),
             {layout.KEYPOINTS_OUTPUT: CLOUD_TYPE,
              layout.KEYPOINTS_IMAGE_OUTPUT: layout.IMAGE_TYPE}),
    NodeSpec('disparity', 'cl_vision_nodes.ros.disparity_node', ELAS_SCHEMA,
             layout.CAMERA_NAMESPACE, (), layout.STEREO_INPUTS,
             {layout.DISPARITY_OUTPUT: DISPARITY_TYPE,
              layout.DISPARITY_COLOR_OUTPUT: layout.IMAGE_TYPE}),
)}


# --- reading the bag ---------------------------------------------------------------------------


def cdr_stamp(data: bytes) -> int:
    """
    Read header.stamp (ns) off the CDR bytes of a serialized message.

    The message's first field is a std_msgs/Header (4-byte encapsulation, then int32 sec, uint32
    nanosec): matching answers to frames must not cost a deserialisation of every image.
    """
    order = '<' if data[1] & 1 else '>'
    sec, nanosec = struct.unpack_from(order + 'iI', data, 4)
    return sec * 1_000_000_000 + nanosec


@dataclass
class BagFrame:
    index: int
    stamp_ns: int
    messages: dict[str, bytes]  # layout topic -> CDR

    def decode(self, topic: str) -> Any:
        return deserialize(self.messages[topic], layout.INPUT_TYPES[topic])


def deserialize(data: bytes, msgtype: str) -> Any:
    from rclpy.serialization import deserialize_message
    return deserialize_message(data, message_class(msgtype))


def open_layout_bag(path: Path) -> Bag:
    """Open the bag restricted to the layout's topics; it must have left images."""
    topics = [t for t in layout.INPUT_TYPES if t in Bag(path).topics]
    if layout.LEFT_IMAGE not in topics:
        raise DataFormatError(f'{path}: no {layout.LEFT_IMAGE} topic; write dataset bags with '
                              'cl-vision make-bag (layout in cl_vision_nodes/tools/bag_layout.py)')
    return Bag(path, topics)


def read_frames(bag: Bag) -> Iterator[BagFrame]:
    """
    Yield the bag's frames in order: messages grouped by header stamp.

    The homography, which has no header, is grouped by bag time, equal to the stamp in dataset
    bags. A frame is complete once the left images of two later frames were read, so a frame's
    messages may be logged up to two frames apart; stamps without a left image are dropped.
    """
    pending: dict[int, dict[str, bytes]] = {}
    lefts: list[int] = []
    count = 0

    def pop(stamp: int) -> BagFrame:
        nonlocal count
        for orphan in [k for k in pending if k < stamp]:
            del pending[orphan]
        count += 1
        return BagFrame(count - 1, stamp, pending.pop(stamp))

    for msg in bag.messages():
        key = msg.timestamp_ns if msg.topic == layout.GT_HOMOGRAPHY else cdr_stamp(msg.data)
        pending.setdefault(key, {})[msg.topic] = msg.data
        if msg.topic == layout.LEFT_IMAGE:
            lefts.append(key)
            if len(lefts) > LOOKAHEAD_FRAMES:
                yield pop(lefts.pop(0))
    for stamp in lefts:
        yield pop(stamp)


def topic_counts(path: Path) -> dict[str, tuple[str, int]]:
    """Map topic -> (type, messages) from the bag's metadata, as ``ros2 bag info`` shows them."""
    with open_reader(path) as reader:
        return {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}


# --- nodes -------------------------------------------------------------------------------------


def parse_nodes(text: str) -> list[str]:
    names = [n.strip() for n in text.split(',') if n.strip()]
    unknown = [n for n in names if n not in NODE_SPECS]
    if unknown or not names:
        named = ', '.join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(f'unknown node {named}; choose from '
                                         f"{','.join(NODE_SPECS)}")
    return names


def select_nodes(requested: list[str] | None, topics: set[str]) -> tuple[list[NodeSpec],
                                                                         list[str]]:
    """
    Return the nodes to run and a note for each one left out.

    Without ``--nodes`` every node whose inputs the bag has runs; a node named explicitly must have
    them.
    """
    chosen, notes = [], []
    for key in requested or NODE_SPECS:
        spec = NODE_SPECS[key]
        missing = [t for t in spec.inputs if t not in topics]
        if not spec.available():
            notes.append(f'{key}: skipped, {spec.module} is not installed in this version')
        elif missing and requested:
            raise DataFormatError(f"{key} needs {', '.join(missing)}, which the bag lacks")
        elif missing:
            notes.append(f"{key}: skipped, the bag has no {', '.join(missing)}")
        else:
            chosen.append(spec)
    if not chosen:
        raise DataFormatError('no node to run: ' + '; '.join(notes))
    return chosen, notes


def node_parameters(specs: list[NodeSpec], assignments: list[str],
                    device: str) -> dict[str, dict[str, Value]]:
    """
    Return the explicitly set parameters per node key, validated against the node's schema.

    So a bad value fails here in one line instead of in a node's log.
    """
    by_node: dict[str, list[str]] = {key: [] for key in NODE_SPECS}
    for text in assignments:
        key, dot, assignment = text.partition('.')
        if not dot or key not in NODE_SPECS:
            raise ParameterError(f'--param expects NODE.NAME=VALUE with NODE one of '
                                 f"{', '.join(NODE_SPECS)}; got {text!r}")
        by_node[key].append(assignment)
    explicit = {}
    for spec in specs:
        values = spec.schema.parse_assignments(by_node[spec.key])
        names = {a.partition('=')[0] for a in by_node[spec.key]}
        chosen = {name: values[name] for name in names}
        if device != 'auto':
            chosen['device'] = spec.schema.validate(values, {'device': device},
                                                    allow_read_only=True)['device']
        explicit[spec.key] = chosen
    return explicit


@dataclass
class NodeProcess:
    spec: NodeSpec
    process: subprocess.Popen
    log: Path

    def check_alive(self) -> None:
        """Raise if the node died: it must end the run with its own last words, not a timeout."""
        code = self.process.poll()
        if code is not None:
            lines = self.log.read_text(errors='replace').strip().splitlines()
            raise CLVisionError(f'{self.spec.key} node exited with code {code}: '
                                f"{lines[-1] if lines else 'no output'} (log: {self.log})")


def reliable_inputs(spec: NodeSpec) -> dict[str, Any]:
    """
    Return the QoS overrides that make the node's input subscriptions reliable.

    Lockstep never queues more than one frame, so best effort buys nothing here, and Fast DDS drops
    best-effort samples larger than its shared-memory segment (a KITTI frame, ~0.5 MB per view,
    rarely arrives): a lost input would be misreported as the node dropping a frame.
    """
    return {'qos_overrides': {topic: {'subscription': {'reliability': 'reliable'}}
                              for topic in spec.inputs}}


def start_node(spec: NodeSpec, parameters: dict[str, Value], logs: Path,
               env: dict[str, str]) -> NodeProcess:
    import yaml
    params_file = logs / f'{spec.key}_params.yaml'
    params_file.write_text(yaml.safe_dump(
        {'/**': {'ros__parameters': {**parameters, **reliable_inputs(spec)}}}))
    command = [sys.executable, '-m', spec.module, '--ros-args', '-r', f'__ns:={spec.namespace}',
               *(arg for remap in spec.remaps for arg in ('-r', remap)),
               '--params-file', str(params_file)]
    log = logs / f'{spec.key}.log'
    with log.open('w') as stream:
        # A session of its own: Ctrl-C reaches only the evaluator, which stops the nodes after
        # recording what they answered so far.
        process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    return NodeProcess(spec, process, log)


def stop_nodes(nodes: list[NodeProcess]) -> dict[str, int]:
    """SIGINT (Ctrl-C) to all at once, then their exit codes; a node ignoring it is killed."""
    for node in nodes:
        if node.process.poll() is None:
            node.process.send_signal(signal.SIGINT)
    codes = {}
    for node in nodes:
        try:
            codes[node.spec.key] = node.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            node.process.kill()
            codes[node.spec.key] = node.process.wait()
    return codes


def node_environment(domain_id: int) -> dict[str, str]:
    """
    Return this process's environment for the nodes.

    Same domain, localhost discovery, and this copy of the package first on the path (a source
    checkout works without installing).
    """
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    root = str(Path(cl_vision_nodes.__file__).resolve().parents[1])
    env['PYTHONPATH'] = os.pathsep.join(p for p in (root, env.get('PYTHONPATH')) if p)
    return env


# --- DDS side ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Received:
    topic: str
    stamp_ns: int
    time_ns: int
    data: bytes


class Player:
    """
    The evaluator's ROS node: publishes frames as stored CDR bytes, takes answers as raw CDR.

    Every answer comes with its DDS receive time, so latency does not include our own spinning
    delays.
    """

    def __init__(self, inputs: list[str], outputs: dict[str, str]):
        import rclpy
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        self.node = rclpy.create_node('cl_vision_eval')
        # Reliable both ways: the nodes' inputs are made reliable for the run (reliable_inputs)
        # and their outputs are.
        publish_qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        record_qos = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST,
                                reliability=ReliabilityPolicy.RELIABLE)
        self.publishers = {t: self.node.create_publisher(message_class(layout.INPUT_TYPES[t]), t,
                                                         publish_qos) for t in inputs}
        self.subscriptions = {t: self.node.create_subscription(
            message_class(m), t, partial(self._on_output, t), record_qos, raw=True)
            for t, m in outputs.items()}
        self.inbox: list[Received] = []

    def _on_output(self, topic: str, data: bytes, info: dict) -> None:
        received = info.get('received_timestamp') or time.time_ns()
        self.inbox.append(Received(topic, cdr_stamp(data), received, data))

    def spin(self, seconds: float) -> None:
        import rclpy
        rclpy.spin_once(self.node, timeout_sec=seconds)

    def take(self) -> list[Received]:
        taken, self.inbox = self.inbox, []
        return taken

    def unconnected(self, nodes: list[NodeProcess]) -> list[str]:
        """Topics whose DDS endpoints have not all matched yet."""
        needed = Counter(t for node in nodes for t in node.spec.inputs)
        waiting = [t for t, n in needed.items() if self.publishers[t].get_subscription_count() < n]
        return waiting + [t for t, s in self.subscriptions.items() if s.get_publisher_count() < 1]

    def publish(self, frame: BagFrame) -> int:
        start = time.time_ns()
        for topic, publisher in self.publishers.items():
            if topic in frame.messages:
                publisher.publish(frame.messages[topic])
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
    end = time.monotonic() + SETTLE_S  # the nodes' side of the match lands right after ours
    while time.monotonic() < end:
        player.spin(POLL_S)


# --- accuracy ----------------------------------------------------------------------------------


def decode_image(data: bytes) -> np.ndarray:
    from cl_vision_nodes.ros.image_conversion import image_to_numpy
    return image_to_numpy(deserialize(data, layout.IMAGE_TYPE))


def mean(values: list[float]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(finite)) if finite else None


class Scorer(Protocol):
    """The accuracy of one node's answers: FlowScorer, DisparityScorer or SurfScorer."""

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None: ...

    def summary(self) -> dict[str, Any]: ...

    def pictures(self, out: Path) -> dict[str, str]: ...


class FlowScorer:
    """EPE/AAE/density of each flow against /camera/ground_truth/flow (flow.metrics)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.last: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        from cl_vision_nodes.flow.metrics import flow_errors
        if layout.GT_FLOW not in frame.messages:
            return
        estimate, truth = decode_image(answer), decode_image(frame.messages[layout.GT_FLOW])
        if estimate.shape != truth.shape:
            return
        errors = flow_errors(estimate, truth)
        self.rows.append({'frame': frame.index, 'epe': errors.epe, 'aae': errors.aae,
                          'density': errors.density})
        self.last = (estimate, truth)

    def summary(self) -> dict[str, Any]:
        return {'frames_scored': len(self.rows),
                **{k: mean([r[k] for r in self.rows]) for k in ('epe', 'aae', 'density')},
                'per_frame': self.rows}

    def pictures(self, out: Path) -> dict[str, str]:
        """
        Draw the estimate | ground truth on the same colour scale.

        The node's own flow/color scales each frame by its own maximum, which hides a wrong
        magnitude.
        """
        from cl_vision_nodes.flow.colorwheel import flow_to_color
        if self.last is None:
            return {}
        estimate, truth = self.last
        scale = float(np.nanmax(np.hypot(truth[..., 0], truth[..., 1]), initial=0.0))
        write_png(out / 'flow_vs_truth.png', np.hstack([flow_to_color(estimate, scale),
                                                       flow_to_color(truth, scale)]))
        return {'flow estimate | ground truth (same scale)': 'flow_vs_truth.png'}


def disparity_errors(estimate: np.ndarray, truth: np.ndarray,
                     min_disparity: float) -> dict[str, float]:
    """
    Return the report's row: KITTI D1, bad > 2 px and density over the pixels with ground truth.

    elas.metrics: an invalid estimate, below the message's min_disparity, is an error.
    """
    d1 = d1_errors(estimate, truth, min_disparity)
    bad = bad_pixel_errors(estimate, truth, BAD_PIXELS, min_disparity)
    return {'d1': d1.all, 'bad2': bad.all, 'density': d1.density}


class DisparityScorer:
    """
    D1, bad > 2 px and density of each disparity map against /camera/ground_truth/disparity.

    Computed by ``disparity_errors``.
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.last: tuple[np.ndarray, np.ndarray, float] | None = None

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        from cl_vision_nodes.ros.image_conversion import image_to_numpy
        if layout.GT_DISPARITY not in frame.messages:
            return
        msg = deserialize(answer, DISPARITY_TYPE)
        estimate = image_to_numpy(msg.image)
        truth = decode_image(frame.messages[layout.GT_DISPARITY])
        if estimate.shape != truth.shape or not np.isfinite(truth).any():
            return
        self.rows.append({'frame': frame.index,
                          **disparity_errors(estimate, truth, msg.min_disparity)})
        self.last = (estimate, truth, float(msg.min_disparity))

    def summary(self) -> dict[str, Any]:
        return {'frames_scored': len(self.rows),
                **{k: mean([r[k] for r in self.rows]) for k in ('d1', 'bad2', 'density')},
                'per_frame': self.rows}

    def pictures(self, out: Path) -> dict[str, str]:
        from cl_vision_nodes.elas.colormap import disparity_to_color
        if self.last is None:
            return {}
        estimate, truth, d_min = self.last
        d_max = float(np.nanmax(truth))
        write_png(out / 'disparity_vs_truth.png',
                  np.hstack([disparity_to_color(estimate, d_min, d_max),
                             disparity_to_color(truth, d_min, d_max)]))
        return {'disparity estimate | ground truth (same scale)': 'disparity_vs_truth.png'}


class SurfScorer:
    """
    Keypoints per frame; repeatability and matching score against the first frame.

    Every frame with a homography is compared with the first one (surf.evaluation), through H_k *
    H_first^-1.
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.reference: tuple[Any, np.ndarray, tuple[int, int]] | None = None

    def add(self, frame: BagFrame, answer: bytes, size: tuple[int, int]) -> None:
        from cl_vision_nodes.ros.keypoint_cloud import cloud_to_keypoints
        from cl_vision_nodes.surf.evaluation import pair_scores
        keypoints = cloud_to_keypoints(deserialize(answer, CLOUD_TYPE))
        row: dict[str, Any] = {'frame': frame.index, 'keypoints': len(keypoints)}
        if layout.GT_HOMOGRAPHY in frame.messages:
            h = np.asarray(frame.decode(layout.GT_HOMOGRAPHY).data, np.float64).reshape(3, 3)
            if self.reference is None:
                self.reference = (keypoints, h, size)
            else:
                first, h_first, first_size = self.reference
                scores = pair_scores(first, keypoints, h @ np.linalg.inv(h_first), first_size,
                                     size)
                row.update(repeatability=scores.repeatability,
                           matching_score=scores.matching_score)
        self.rows.append(row)

    def summary(self) -> dict[str, Any]:
        scored = [r for r in self.rows if 'repeatability' in r]
        return {'frames_scored': len(scored),
                'keypoints': mean([r['keypoints'] for r in self.rows]),
                'repeatability': mean([r['repeatability'] for r in scored]),
                'matching_score': mean([r['matching_score'] for r in scored]),
                'per_frame': self.rows}

    def pictures(self, out: Path) -> dict[str, str]:
        return {}


SCORERS = {'flow': FlowScorer, 'surf': SurfScorer, 'disparity': DisparityScorer}


# --- the run -----------------------------------------------------------------------------------


@dataclass
class NodeRun:
    """
    What one node did.

    The frames it was due to answer, the latency of each answer that came within the timeout, and
    its accuracy scorer.
    """

    spec: NodeSpec
    scorer: Scorer
    due: list[int] = field(default_factory=list)
    latency_ms: dict[int, float] = field(default_factory=dict)

    def is_due(self, frame: BagFrame, size: tuple[int, int],
               previous_size: tuple[int, int] | None) -> bool:
        if any(t not in frame.messages for t in self.spec.inputs):
            return False
        return not self.spec.needs_previous_frame or size == previous_size

    def fps(self) -> float | None:
        busy_s = sum(self.latency_ms.values()) / 1000.0
        return len(self.latency_ms) / busy_s if busy_s > 0 else None

    def summary(self) -> dict[str, Any]:
        latencies = np.array(list(self.latency_ms.values()))
        timing = ({'mean': float(latencies.mean()), 'p50': float(np.percentile(latencies, 50)),
                   'p95': float(np.percentile(latencies, 95)), 'max': float(latencies.max())}
                  if latencies.size else None)
        return {'module': self.spec.module, 'frames_due': len(self.due),
                'answered': len(self.latency_ms), 'dropped': len(self.due) - len(self.latency_ms),
                'latency_ms': timing, 'throughput_fps': self.fps(),
                'latency_per_frame_ms': [[i, ms] for i, ms in self.latency_ms.items()],
                'accuracy': self.scorer.summary()}


ACCURACY_HEADLINES = (('epe', 'EPE {:.3f} px'), ('d1', 'D1 {:.1%}'),
                      ('repeatability', 'repeatability {:.2f}'))


def node_status(run: NodeRun) -> str:
    """``flow 12.3 fps EPE 0.031 px``: a node's rate and its main accuracy figure so far."""
    summary = run.scorer.summary()
    accuracy = next((fmt.format(summary[key]) for key, fmt in ACCURACY_HEADLINES
                     if summary.get(key) is not None), '')
    return f'{run.spec.key} {run.fps() or 0.0:.1f} fps {accuracy}'.rstrip()


class Progress:
    """
    Progress on the terminal: a carriage-return bar on stderr, or status lines on stdout.

    With ``lines``, one status line a second on stdout with every node's rate and accuracy so far
    (the demo's view).
    """

    def __init__(self, total: int, lines: bool = False):
        self.total, self.lines = total, lines
        self.started, self.shown = time.monotonic(), 0.0

    def update(self, done: int, runs: list[NodeRun], force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.shown < (STATUS_PERIOD_S if self.lines else PROGRESS_PERIOD_S):
            return
        self.shown = now
        nodes = ', '.join(node_status(r) for r in runs)
        if self.lines:
            print(f'[{now - self.started:5.1f} s] frames {done}/{self.total}: {nodes}', flush=True)
            return
        width = 24
        filled = width * done // max(self.total, 1)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} frames"
                         f'  {nodes}  {now - self.started:.0f} s ')
        sys.stderr.flush()

    def finish(self) -> None:
        if not self.lines:
            sys.stderr.write('\n')


class Recorder:
    """The output rosbag2: one connection per topic, typestore message definitions included."""

    def __init__(self, writer: Any, types: dict[str, str]):
        from rosbags.typesys import get_typestore, Stores
        typestore = get_typestore(Stores.ROS2_KILTED)
        self.writer = writer
        self.connections = {t: writer.add_connection(t, m, typestore=typestore)
                            for t, m in types.items()}
        self.received: Counter[str] = Counter()

    def write(self, topic: str, time_ns: int, data: bytes) -> None:
        self.writer.write(self.connections[topic], time_ns, data)


def play_frame(frame: BagFrame, player: Player, recorder: Recorder, due: list[NodeRun],
               nodes: list[NodeProcess], timeout_s: float) -> tuple[int, dict[str, Received]]:
    """
    Publish one frame and wait for every output of the due nodes with its stamp.

    Records all that arrives meanwhile (late answers to earlier frames included). Returns the
    publish time and the answers by topic.
    """
    sent_ns = player.publish(frame)
    for topic, data in frame.messages.items():
        recorder.write(topic, sent_ns, data)
    expected = {topic for run in due for topic in run.spec.outputs}
    answers: dict[str, Received] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        for received in player.take():
            recorder.write(received.topic, received.time_ns, received.data)
            recorder.received[received.topic] += 1
            if received.stamp_ns == frame.stamp_ns and received.topic in expected:
                answers[received.topic] = received
        if expected <= answers.keys() or time.monotonic() > deadline:
            return sent_ns, answers
        for node in nodes:
            node.check_alive()
        player.spin(POLL_S)


def frame_size(frame: BagFrame) -> tuple[int, int]:
    image = frame.decode(layout.LEFT_IMAGE)
    return image.height, image.width


def play(bag: Bag, player: Player, recorder: Recorder, runs: list[NodeRun],
         nodes: list[NodeProcess], timeout_s: float, progress: Progress) -> tuple[int, bool]:
    """
    Play every frame in lockstep; return the frames sent and whether Ctrl-C ended the run.

    What was recorded until an early Ctrl-C is kept and reported.
    """
    from rclpy.executors import ExternalShutdownException
    previous_size = None
    sent, interrupted = 0, False
    try:
        for frame in read_frames(bag):
            size = frame_size(frame)
            due = [run for run in runs if run.is_due(frame, size, previous_size)]
            sent_ns, answers = play_frame(frame, player, recorder, due, nodes, timeout_s)
            sent += 1
            previous_size = size
            for run in due:
                run.due.append(frame.index)
                main = answers.get(run.spec.main_output)
                if main is not None:
                    run.latency_ms[frame.index] = (main.time_ns - sent_ns) / 1e6
                    run.scorer.add(frame, main.data, size)
            progress.update(sent, runs)
    except (KeyboardInterrupt, ExternalShutdownException):
        interrupted = True
    progress.update(sent, runs, force=True)
    progress.finish()
    return sent, interrupted


# --- report ------------------------------------------------------------------------------------


def json_ready(value: Any) -> Any:
    """Turn NaN and inf into null: report.json must be strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def last_messages(bag_path: Path, topics: list[str]) -> dict[str, bytes]:
    """Read back the last recorded message of each topic from the output bag."""
    present = [t for t in topics if t in topic_counts(bag_path)]
    last: dict[str, bytes] = {}
    if present:
        for msg in Bag(bag_path, present).messages():
            last[msg.topic] = msg.data
    return last


def node_pictures(bag_path: Path, out: Path, runs: list[NodeRun]) -> dict[str, str]:
    """
    Return the last frame of the nodes' own visual topics.

    flow/color, keypoints/image, disparity/color.
    """
    visual = [t for run in runs for t in list(run.spec.outputs)[1:]]
    pictures = {}
    for topic, data in last_messages(bag_path, visual).items():
        name = topic.strip('/').replace('/', '_') + '.png'
        write_png(out / name, decode_image(data))
        pictures[f'{topic} (as published, last frame)'] = name
    return pictures


def latency_plot(out: Path, runs: list[NodeRun]) -> str:
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator
    figure, axes = plt.subplots(figsize=(7, 3.5), dpi=100)
    for run in runs:
        frames = list(run.latency_ms)
        axes.plot(frames, [run.latency_ms[i] for i in frames], marker='o', markersize=3,
                  label=run.spec.key)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel('frame')
    axes.set_ylabel('latency, ms (publish -> answer)')
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(out / 'latency.png')
    plt.close(figure)
    return 'latency.png'


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return 'n/a'
    return f'{value:.{digits}f}' if isinstance(value, float) else str(value)


ACCURACY_COLUMNS = {
    'flow': [('epe', 'EPE px'), ('aae', 'AAE deg'), ('density', 'density')],
    'surf': [('keypoints', 'keypoints/frame'), ('repeatability', 'repeatability vs first'),
             ('matching_score', 'matching score vs first')],
    'disparity': [('d1', 'D1 (>3 px and >5 %)'), ('bad2', 'bad > 2 px'), ('density', 'density')],
}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# cl-vision eval: {report['bag']}", '',
             f"{report['frames_sent']} frames sent in lockstep in {report['wall_s']:.1f} s "
             f"({report['wall_fps']:.2f} frames/s), device `{report['device']}`, ROS domain "
             f"{report['domain_id']}, per-frame timeout {report['timeout_s']:g} s"
             + (', **interrupted**' if report['interrupted'] else '') + '.', '',
             '## Timing', '',
             '| node | due | answered | dropped | latency mean ms | p50 | p95 | max | '
             'throughput fps |', '|---|---|---|---|---|---|---|---|---|']
    for key, node in report['nodes'].items():
        lat = node['latency_ms'] or {}
        lines.append(f"| {key} | {node['frames_due']} | {node['answered']} | {node['dropped']} | "
                     + ' | '.join(_fmt(lat.get(k), 1) for k in ('mean', 'p50', 'p95', 'max'))
                     + f" | {_fmt(node['throughput_fps'], 2)} |")
    lines += ['', "Latency: input publish to DDS receive of the node's main output. Throughput: "
              'answered frames over the summed latencies (the rate when fed back to back). '
              'Dropped: due frames without an answer within the timeout.', '',
              '![latency per frame](latency.png)', '', '## Messages received', '',
              '| topic | type | received | expected |', '|---|---|---|---|']
    for topic, row in report['topics'].items():
        lines.append(f"| `{topic}` | {row['type']} | {row['received']} | {row['expected']} |")
    lines += ['', '## Accuracy', '']
    for key, node in report['nodes'].items():
        accuracy = node['accuracy']
        columns = ACCURACY_COLUMNS[key]
        lines += [f"### {key} ({accuracy['frames_scored']} frames scored)", '',
                  '| ' + ' | '.join(title for _, title in columns) + ' |',
                  '|' + '---|' * len(columns),
                  '| ' + ' | '.join(_fmt(accuracy.get(k)) for k, _ in columns) + ' |', '']
    lines += ['## Pictures', '']
    for caption, name in report['pictures'].items():
        lines += [f'{caption}:', '', f'![{caption}]({name})', '']
    lines += ['## Recorded bag', '', f"`{report['output_bag']}` (MCAP), read back:", '',
              '| topic | type | messages |', '|---|---|---|']
    for topic, row in report['recorded'].items():
        lines.append(f"| `{topic}` | {row['type']} | {row['count']} |")
    if report['notes']:
        lines += ['', '## Notes', ''] + [f'- {note}' for note in report['notes']]
    return '\n'.join(lines) + '\n'


def write_report(out: Path, report: dict[str, Any], runs: list[NodeRun]) -> None:
    bag_path = out / 'bag'
    report['recorded'] = {t: {'type': m, 'count': n} for t, (m, n) in
                          topic_counts(bag_path).items()}
    pictures = node_pictures(bag_path, out, runs)
    for run in runs:
        pictures.update(run.scorer.pictures(out))
    pictures['latency per frame'] = latency_plot(out, runs)
    report['pictures'] = pictures
    report = json_ready(report)
    (out / 'report.json').write_text(json.dumps(report, indent=2) + '\n')
    (out / 'report.md').write_text(markdown(report))


# --- command -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """How the lockstep run went, besides what each NodeRun holds."""

    sent: int
    interrupted: bool
    wall_s: float
    exit_codes: dict[str, int]
    received: Counter[str]


def evaluate_bag(bag: Bag, runs: list[NodeRun], parameters: dict[str, dict[str, Value]],
                 out: Path, env: dict[str, str], timeout_s: float,
                 status_lines: bool = False) -> Outcome:
    """Start the nodes, play the bag in lockstep into DIR/bag, stop the nodes."""
    import rclpy
    from rosbags.rosbag2 import StoragePlugin, Writer
    outputs = {t: m for run in runs for t, m in run.spec.outputs.items()}
    outputs[layout.DIAGNOSTICS] = DIAGNOSTICS_TYPE
    inputs = sorted({t for run in runs for t in run.spec.inputs})
    total = topic_counts(bag.path)[layout.LEFT_IMAGE][1]
    use_large_image_profile()
    rclpy.init()
    nodes: list[NodeProcess] = []
    player = None
    try:
        nodes = [start_node(run.spec, parameters[run.spec.key], out / 'logs', env)
                 for run in runs]
        player = Player(inputs, outputs)
        with Writer(out / 'bag', version=9, storage_plugin=StoragePlugin.MCAP) as writer:
            recorder = Recorder(writer, {t: layout.INPUT_TYPES[t] for t in bag.topics} | outputs)
            wait_connected(player, nodes, timeout_s)
            started = time.monotonic()
            sent, interrupted = play(bag, player, recorder, runs, nodes, timeout_s,
                                     Progress(total, status_lines))
            wall_s = time.monotonic() - started
    finally:
        exit_codes = stop_nodes(nodes)
        if player is not None:
            player.destroy()
        rclpy.try_shutdown()
    return Outcome(sent, interrupted, wall_s, exit_codes, recorder.received)


def build_report(args: argparse.Namespace, domain_id: int, runs: list[NodeRun],
                 parameters: dict[str, dict[str, Value]], outcome: Outcome,
                 notes: list[str]) -> dict[str, Any]:
    return {
        'bag': str(args.bag), 'output_bag': str(Path(args.out) / 'bag'), 'device': args.device,
        'domain_id': domain_id, 'timeout_s': args.timeout, 'interrupted': outcome.interrupted,
        'frames_sent': outcome.sent, 'wall_s': outcome.wall_s,
        'wall_fps': outcome.sent / outcome.wall_s if outcome.wall_s else None,
        'nodes': {run.spec.key: {**run.summary(), 'parameters': parameters[run.spec.key],
                                 'exit_code': outcome.exit_codes[run.spec.key]} for run in runs},
        'topics': {t: {'type': m, 'received': outcome.received[t], 'expected': len(run.due)}
                   for run in runs for t, m in run.spec.outputs.items()},
        'notes': notes + [f'{key} node exited with code {code} on SIGINT (see logs/{key}.log)'
                          for key, code in outcome.exit_codes.items() if code != 0],
    }


def run(args: argparse.Namespace) -> int:
    bag = open_layout_bag(Path(args.bag))
    specs, notes = select_nodes(args.nodes, set(bag.topics))
    parameters = node_parameters(specs, args.param, args.device)
    notes += [f'--param for {key} ignored: that node does not run'
              for key in sorted({a.partition('.')[0] for a in args.param} - parameters.keys())]
    out = Path(args.out)
    if (out / 'bag').exists():
        raise DataFormatError(f'{out / "bag"} exists already, not overwriting')
    (out / 'logs').mkdir(parents=True, exist_ok=True)
    for note in notes:
        print(f'cl-vision eval: {note}', file=sys.stderr)
    domain_id = random.randint(1, 101) if args.domain_id is None else args.domain_id
    env = node_environment(domain_id)
    os.environ.update(ROS_DOMAIN_ID=env['ROS_DOMAIN_ID'],
                      ROS_AUTOMATIC_DISCOVERY_RANGE=env['ROS_AUTOMATIC_DISCOVERY_RANGE'])
    runs = [NodeRun(spec, SCORERS[spec.key]()) for spec in specs]
    outcome = evaluate_bag(bag, runs, parameters, out, env, args.timeout, args.status_lines)
    report = build_report(args, domain_id, runs, parameters, outcome, notes)
    write_report(out, report, runs)
    for key, node in report['nodes'].items():
        print(f"{key}: {node['answered']}/{node['frames_due']} answered, latency mean "
              f"{_fmt((node['latency_ms'] or {}).get('mean'), 1)} ms")
    print(f'report: {(out / "report.md").resolve()}')
    return EXIT_INTERRUPTED if outcome.interrupted else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('eval', help='run the nodes over DDS on a dataset bag, record and '
                                         'report timing and accuracy',
                            description=__doc__.strip().split('\n\n')[0])
    parser.add_argument('bag', help='dataset bag (cl-vision make-bag; layout in bag_layout.py)')
    parser.add_argument('--out', required=True, type=output_folder,
                        help='output folder: bag/, logs/, report.md, report.json, pictures')
    parser.add_argument('--nodes', type=parse_nodes,
                        help='comma-separated subset of flow,surf,disparity (default: every '
                             'node whose inputs the bag has)')
    parser.add_argument('--device', default='auto', help='OpenCL device of every node')
    parser.add_argument('--param', action='append', default=[], metavar='NODE.NAME=VALUE',
                        help='a node parameter, e.g. flow.method=lk (repeatable)')
    parser.add_argument('--timeout', type=positive_number, default=DEFAULT_TIMEOUT_S,
                        help='seconds to wait for the nodes to connect, and for the answers to '
                             'each frame (the first includes kernel builds)')
    parser.add_argument('--domain-id', type=integer_in(0, MAX_DOMAIN_ID),
                        help='ROS_DOMAIN_ID of the run (default: a random one, so that live '
                             'camera traffic cannot mix in)')
    parser.add_argument('--status-lines', action='store_true',
                        help='one status line a second (frames, fps and accuracy per node) '
                             'instead of a progress bar')
    parser.set_defaults(run=run)
