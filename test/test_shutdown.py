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
Ctrl-C and SIGTERM: every node and `cl-vision replay` exit 0, without a traceback, however often.

Under ``ros2 launch`` one Ctrl-C reaches a node twice: from the terminal to the process group,
then from launch, a few to a few hundred milliseconds later; launch sends SIGTERM 5 s after.
Each run starts every node, waits for its first output (busy from then on, a feeder saturating
every input) or for a moment named by the run, and sends a sequence of signals: once, twice,
three times, 0 to 0.5 s apart, SIGTERM among them, or through a launch-like parent. Every other
run starts the processes with SIGINT ignored, as a shell starts background jobs. A run that
signals while kernels compile gives each node an empty PoCL kernel cache, so the build is long
enough to be cut short, and shows the bounded clean-up.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from bagutil import write_image_bag
from cl_vision_nodes.dataio.synthetic import stereo_pair
import pytest
from rclpy.qos import qos_profile_sensor_data
from rosbags.rosbag2 import StoragePlugin
from rosutil import command, NodeProcess, numpy_to_image, REPO, RosHarness
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

pytestmark = [pytest.mark.ros, pytest.mark.slow]

REPLAY_RUNS = 10
NS = '/shutdown_test'
PAIR = stereo_pair(48, 64, seed=5, max_disparity=8.0)


def camera_info(right: bool) -> CameraInfo:
    msg = CameraInfo(width=64, height=48, distortion_model='plumb_bob', d=[0.0] * 5)
    msg.k = [50.0, 0.0, 32.0, 0.0, 50.0, 24.0, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [50.0, 0.0, 32.0, -5.0 if right else 0.0, 0.0, 50.0, 24.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


@dataclass(frozen=True)
class Case:
    """A node under test: its inputs (topic, message) and its main output."""

    node: str
    params: tuple[str, ...]
    inputs: tuple[tuple[str, Any], ...]
    output: tuple[str, type]

    def topic(self, name: str) -> str:
        return f'{NS}/{self.node}/{name}'


MONO = numpy_to_image(PAIR.left, 'mono8')
CASES = (
    Case('convert_node', (), (('image', MONO),), ('image_out', Image)),
    # max_span off: the feeder stamps 1 s a round, far more rounds than the node takes frames
    Case('flow_node', ('method:=lk', 'pyramid_levels:=2', 'max_span:=0.0'), (('image', MONO),),
         ('flow', Image)),
    Case('surf_node', (), (('image', MONO),), ('keypoints', PointCloud2)),
    Case('rectify_node', (), (('image_raw', MONO), ('camera_info', camera_info(False))),
         ('image_rect', Image)),
    Case('disparity_node', ('disp_max:=16',),
         (('left/image_rect', MONO), ('right/image_rect', numpy_to_image(PAIR.right, 'mono8')),
          ('left/camera_info', camera_info(False)), ('right/camera_info', camera_info(True))),
         ('disparity', DisparityImage)),
    Case('vision_pipeline', ('disparity.disp_max:=16', 'flow.method:=lk',
                             'flow.pyramid_levels:=2'),
         (('left/image_rect', MONO), ('right/image_rect', numpy_to_image(PAIR.right, 'mono8')),
          ('left/camera_info', camera_info(False)), ('right/camera_info', camera_info(True))),
         ('disparity', DisparityImage)),
)


ROUND_PERIOD_S = 1.0 / 30.0
"""The feeder's rounds come at 30 Hz, a camera's rate, so every node is busy with frames when it
is signalled. Jazzy's node teardown can outlast the stop deadline holding the interpreter lock
(Fast DDS 2.14's participant deletion spinning while the other nodes' endpoints go away, under
rclpy's destroy_node; stop_signals' C library timer then ends it, exit 0): a node in a few
hundred at 30 Hz, more often with a thousand 640x480 rounds a second."""


class Feeder:
    """Publishes every input of every case, one stamp per round, a round every ROUND_PERIOD_S."""

    def __init__(self, ros: RosHarness):
        self.inputs = [(ros.publisher(type(msg), case.topic(name)), msg)
                       for case in CASES for name, msg in case.inputs]
        self._stop = threading.Event()
        self._feeding = threading.Event()
        self._feeding.set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def pause(self) -> None:
        self._feeding.clear()

    def resume(self) -> None:
        self._feeding.set()

    def _run(self) -> None:
        sec = 0
        while not self._stop.is_set():
            self._feeding.wait(0.1)
            if not self._feeding.is_set():
                continue
            sec += 1
            for publisher, msg in self.inputs:
                msg.header.stamp.sec = sec
                publisher.publish(msg)
            self._stop.wait(ROUND_PERIOD_S)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10.0)


@pytest.fixture(scope='module')
def outputs(ros):
    return {case.node: ros.collect(case.output[1], case.topic(case.output[0]))
            for case in CASES}


@pytest.fixture(scope='module')
def feeder(ros):
    feeding = Feeder(ros)
    yield feeding
    feeding.close()


@dataclass(frozen=True)
class Run:
    """
    One run of every node: when to signal and what to send.

    ``moment``: 'frames' (inputs saturated, after the first output), 'idle' (inputs paused,
    after the first output) or 'compiling' (at the 'compiling' line, kernel cache off).
    ``signals``: signal names and pauses (seconds, as floats) in order.
    ``forward_after``: send the first signal to the process group under a launch-like parent
    that forwards it to the node this many seconds later.
    """

    moment: str
    signals: tuple[str | float, ...]
    forward_after: float | None = None


RUNS = (
    Run('frames', ('SIGINT',)),
    Run('frames', ('SIGINT', 0.0, 'SIGINT')),
    Run('frames', ('SIGINT', 0.01, 'SIGINT')),
    Run('frames', ('SIGINT', 0.1, 'SIGINT', 0.1, 'SIGINT')),
    Run('frames', ('SIGINT', 0.5, 'SIGINT', 0.5, 'SIGINT')),
    Run('frames', ('SIGTERM', 0.05, 'SIGINT', 0.3, 'SIGTERM')),
    Run('idle', ('SIGINT', 0.1, 'SIGINT')),
    Run('frames', ('SIGINT',), forward_after=0.02),
    Run('frames', ('SIGINT', 0.3, 'SIGINT'), forward_after=0.2),
    Run('compiling', ('SIGINT', 0.1, 'SIGINT', 0.5, 'SIGTERM')),
)


def start(case: Case, index: int, run: Run, tmp_path: Path) -> NodeProcess:
    params = [a for p in case.params for a in ('-p', p)]
    parent = () if run.forward_after is None else \
        (sys.executable, str(REPO / 'test' / 'launch_like.py'), str(run.forward_after))
    # an empty kernel cache of its own: PoCL builds from source (with POCL_KERNEL_CACHE=0
    # concurrent processes race on PoCL's shared temporary files)
    env = {'POCL_CACHE_DIR': str(tmp_path / f'pocl_{case.node}')} \
        if run.moment == 'compiling' else {}
    return NodeProcess(f'cl_vision_nodes.ros.{case.node}',
                       ['-r', f'__ns:={NS}/{case.node}', *params],
                       sigint_ignored=index % 2 == 1, parent=parent, env=env)


def send(proc: NodeProcess, run: Run) -> None:
    """Send the run's signals to one process (the first to its group under a parent)."""
    first = True
    for item in run.signals:
        if isinstance(item, float):
            time.sleep(item)
            continue
        signum = signal.Signals[item]
        if first and run.forward_after is not None:
            proc.signal_group(signum)
        else:
            proc.proc.send_signal(signum)
        first = False


def interrupt(procs: dict[str, NodeProcess], run: Run) -> dict[str, int]:
    """Signal every process at the same time (a thread each), then collect the exit codes."""
    senders = [threading.Thread(target=send, args=(proc, run)) for proc in procs.values()]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    codes = {}
    for node, proc in procs.items():
        try:
            codes[node] = proc.proc.wait(30.0)
        except subprocess.TimeoutExpired:
            hung[node] = thread_states(proc.proc.pid)
            proc.proc.kill()
            codes[node] = proc.proc.wait()
    return codes


hung: dict[str, str] = {}
"""What the threads of a process that did not stop were doing (for the failure message)."""


def thread_states(pid: int) -> str:
    """Return each thread's name, state, kernel wait channel and pending/blocked signals."""
    lines = []
    for task in sorted(Path(f'/proc/{pid}/task').glob('*')):
        try:
            status = dict(line.split(':\t', 1) for line in
                          (task / 'status').read_text().splitlines() if ':\t' in line)
            wchan = (task / 'wchan').read_text()
        except OSError:
            continue
        lines.append(f"{status.get('Name')} {status.get('State')} wchan={wchan} "
                     f"SigPnd={status.get('SigPnd')} SigBlk={status.get('SigBlk')}")
    return '\n'.join(lines)


def wait_for_moment(run: Run, procs: dict[str, NodeProcess], outputs: dict[str, Any],
                    feeder: Feeder) -> None:
    if run.moment == 'compiling':
        for node, proc in procs.items():
            assert proc.wait_for_output('compiling OpenCL kernels', 60.0), \
                f'{node}:\n{proc.output()}'
        return
    seen = {node: len(out.messages) for node, out in outputs.items()}
    for node, proc in procs.items():
        assert outputs[node].wait_for(lambda msgs: len(msgs) > seen[node], timeout=120.0), \
            f'{node}:\n{proc.output()}'
    if run.moment == 'idle':
        feeder.pause()
        time.sleep(0.5)  # the frames in flight are done


@pytest.mark.parametrize('index, run', list(enumerate(RUNS)), ids=lambda value: str(value))
def test_nodes_exit_0_on_any_stop_signals(ros, outputs, feeder, index, run, tmp_path):
    feeder.resume()
    procs = {case.node: start(case, index, run, tmp_path) for case in CASES}
    try:
        wait_for_moment(run, procs, outputs, feeder)
    finally:
        codes = interrupt(procs, run)
    for node, proc in procs.items():
        output = proc.output()
        assert codes[node] == 0 and 'Traceback' not in output and 'RCLError' not in output, \
            f'{run}, {node} exited with {codes[node]}:\n{output}\n{hung.get(node, "")}'


def test_replay_exits_0_on_ctrl_c_while_publishing(ros, tmp_path):
    bag = tmp_path / 'bag'
    write_image_bag(bag, StoragePlugin.MCAP)
    images = ros.collect(Image, '/cam/image', qos_profile_sensor_data)
    for run in range(REPLAY_RUNS):
        seen = len(images.messages)
        proc = subprocess.Popen(
            command([sys.executable, '-m', 'cl_vision_nodes.tools.cli', 'replay', str(bag),
                     '--loop', '--rate', '1000', '--topics', '/cam/image',
                     '--wait-subscribers', '10'], run % 2 == 0),
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert images.wait_for(lambda msgs: len(msgs) > seen, timeout=60.0), \
                f'run {run}: nothing replayed'
        finally:
            proc.send_signal(signal.SIGINT)
            output, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and 'Traceback' not in output, \
            f'run {run}: exit code {proc.returncode}:\n{output}'


def signals_taken(pid: int) -> bool:
    """Return whether the process's main thread blocks SIGINT: StopSignals is installed."""
    status = Path(f'/proc/{pid}/status').read_text()
    blocked = int(next(line for line in status.splitlines() if line.startswith('SigBlk:'))
                  .split()[1], 16)
    return bool(blocked & 1 << (signal.SIGINT - 1))


@pytest.mark.parametrize('delay_s', [0.0, 0.3, 0.6])
@pytest.mark.parametrize('executable', ['flow_node', 'vision_pipeline'])
def test_a_stop_while_the_node_loads_exits_0(executable, delay_s):
    """
    Ctrl-C right after ``ros2 launch`` started: the console script is importing its node.

    Loading takes about a second after the script took the signals (``executables``); before
    that, only the interpreter's own start-up (tenths of a second) is exposed.
    """
    proc = subprocess.Popen(
        [sys.executable, '-c', f'from cl_vision_nodes.ros.executables import {executable}; '
         f'{executable}()', '--ros-args', '-r', f'__ns:={NS}/loading'],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30.0
    while not signals_taken(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and 'Traceback' not in output, output
