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
Ctrl-C while frames flow: every node and `cl-vision replay` exit 0, without a traceback.

SIGINT reaches a process while a callback is publishing; rclpy's handler invalidates the context
under it. Each run waits for the first output (the process is busy from then on) and interrupts
at once while a feeder keeps every input saturated. Every other run starts the processes with
SIGINT ignored, as a shell starts background jobs: then no KeyboardInterrupt comes first and
only rclpy's handler acts, which is where the race shows.
"""
from __future__ import annotations

from dataclasses import dataclass
import signal
import subprocess
import sys
import threading
from typing import Any

from bagutil import write_image_bag
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.ros.image_conversion import numpy_to_image
import pytest
from rclpy.qos import qos_profile_sensor_data
from rosbags.rosbag2 import StoragePlugin
from rosutil import command, NodeProcess, REPO, RosHarness
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

pytestmark = [pytest.mark.ros, pytest.mark.slow]

RUNS = 10
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


class Feeder:
    """Publishes every input of every case, one stamp per round, as fast as it can."""

    def __init__(self, ros: RosHarness):
        self.inputs = [(ros.publisher(type(msg), case.topic(name)), msg)
                       for case in CASES for name, msg in case.inputs]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sec = 0
        while not self._stop.is_set():
            sec += 1
            for publisher, msg in self.inputs:
                msg.header.stamp.sec = sec
                publisher.publish(msg)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10.0)


@pytest.fixture(scope='module')
def ros():
    harness = RosHarness('shutdown_test_harness')
    yield harness
    harness.close()


def start(case: Case, run: int) -> NodeProcess:
    params = [a for p in case.params for a in ('-p', p)]
    return NodeProcess(f'cl_vision_nodes.ros.{case.node}',
                       ['-r', f'__ns:={NS}/{case.node}', *params], sigint_ignored=run % 2 == 0)


def interrupt(procs: dict[str, NodeProcess]) -> dict[str, int]:
    """One SIGINT to each (as Ctrl-C in a terminal sends to its process group), exit codes."""
    for proc in procs.values():
        proc.proc.send_signal(signal.SIGINT)
    codes = {}
    for node, proc in procs.items():
        try:
            codes[node] = proc.proc.wait(30.0)
        except subprocess.TimeoutExpired:
            proc.proc.kill()
            codes[node] = proc.proc.wait()
    return codes


def test_nodes_exit_0_on_ctrl_c_while_frames_flow(ros):
    outputs = {case.node: ros.collect(case.output[1], case.topic(case.output[0]))
               for case in CASES}
    feeder = Feeder(ros)
    try:
        for run in range(RUNS):
            seen = {node: len(out.messages) for node, out in outputs.items()}
            procs = {case.node: start(case, run) for case in CASES}
            try:
                for node, proc in procs.items():
                    assert outputs[node].wait_for(lambda msgs: len(msgs) > seen[node],
                                                  timeout=120.0), f'{node}:\n{proc.output()}'
            finally:
                codes = interrupt(procs)
            for node, proc in procs.items():
                assert codes[node] == 0 and 'Traceback' not in proc.output(), \
                    f'run {run}, {node} exited with {codes[node]}:\n{proc.output()}'
    finally:
        feeder.close()


def test_replay_exits_0_on_ctrl_c_while_publishing(ros, tmp_path):
    bag = tmp_path / 'bag'
    write_image_bag(bag, StoragePlugin.MCAP)
    images = ros.collect(Image, '/cam/image', qos_profile_sensor_data)
    for run in range(RUNS):
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
