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
The nodes' inputs take the publisher's reliability, over real Fast DDS (ros/input_qos.py).

A camera process on Fast DDS' defaults (no profile of ours: a user's driver), reliable keep-last
5, 640x480 bgr8 to flow_node and a mono8 stereo pair to disparity_node, frames in lockstep: once
the node answered one (the match complete), every frame answered. A best-effort publisher is
heard, a QoS override keeps its reliability, and frames withheld on purpose put /diagnostics at
WARN with the right words in the log.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from cl_vision_nodes.benchmarks.scene import make_scene
from cl_vision_nodes.processes.transport_link import Link, Message
from cl_vision_nodes.ros.executor_choice import EventsExecutor
from cl_vision_nodes.ros.input_qos import InputQos
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import serialize_message
from rosutil import NodeProcess, numpy_to_image, publish_each, publish_until_answered
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from stereo_msgs.msg import DisparityImage
from test_disparity_node import stereo_msgs, TOPICS

pytestmark = pytest.mark.ros

FRAMES = 12
ANSWER_TIMEOUT_S = 120.0  # a bound on waiting for one answer (kernel builds on a busy PoCL)
IMAGE_TYPE = 'sensor_msgs/msg/Image'


def stopped(proc: NodeProcess) -> str:
    """Stop the node; return its log (it must end cleanly)."""
    code = proc.stop()
    log = proc.output()
    assert code == 0 and 'Traceback' not in log, log
    return log


def lockstep_all_answered(link: Link, names: list[str], expected: set[str],
                          proc: NodeProcess) -> None:
    """Once the node answered (the match complete, kernels built), every set is answered."""
    link.prime(names, expected, ANSWER_TIMEOUT_S)
    series = link.lockstep(names, FRAMES, expected, ANSWER_TIMEOUT_S)
    assert (len(series.latency_ms), series.lost) == (FRAMES, 0), proc.output()


def test_bgr8_camera_on_dds_defaults_every_flow_frame_answered(ros, tmp_path: Path):
    rng = np.random.default_rng(4)
    texture = rng.integers(0, 256, (480, 660, 3), dtype=np.uint8)
    frames = [texture[:, shift:shift + 640].copy() for shift in (0, 2)]
    sets = {f'f{k}': [Message('/qos_cam/image', IMAGE_TYPE,
                              bytes(serialize_message(numpy_to_image(f, 'bgr8'))))]
            for k, f in enumerate(frames)}
    proc = NodeProcess('cl_vision_nodes.ros.flow_node', [
        '-p', 'diagnostics_period:=0.5', '-r', 'image:=/qos_cam/image',
        '-r', 'flow:=/qos_cam/flow'])
    link = Link(sets, {'/qos_cam/flow': IMAGE_TYPE}, tmp_path, dict(os.environ),
                dds_defaults=True)
    try:
        link.wait_ready(ANSWER_TIMEOUT_S)
        lockstep_all_answered(link, ['f0', 'f1'], {'/qos_cam/flow'}, proc)
    finally:
        link.close()
        log = stopped(proc)
    assert log.count('input /qos_cam/image: publisher reliable, subscribed reliable, '
                     'keep-last 1') == 1, log
    assert 'lost before the node: ' not in log, log


def test_stereo_camera_on_dds_defaults_every_set_answered(tmp_path: Path):
    scene = make_scene(640, 480)
    prefix = '/qos_stereo'
    sets = {f's{k}': [Message(prefix + topic, m.msgtype, m.data)
                      for topic, m in messages.items() if 'ground_truth' not in topic]
            for k, messages in enumerate(scene.messages)}
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node', [
        '-p', 'subsampling:=true', '-r', f'__ns:={prefix}/camera',
        '-r', f'left/image_rect:={prefix}/camera/left/image_rect',
        '-r', f'right/image_rect:={prefix}/camera/right/image_rect',
        '-r', f'left/camera_info:={prefix}/camera/left/camera_info',
        '-r', f'right/camera_info:={prefix}/camera/right/camera_info'])
    output = f'{prefix}/camera/disparity'
    link = Link(sets, {output: 'stereo_msgs/msg/DisparityImage'}, tmp_path,
                dict(os.environ), dds_defaults=True)
    try:
        link.wait_ready(ANSWER_TIMEOUT_S)
        lockstep_all_answered(link, ['s0', 's1'], {output}, proc)
    finally:
        link.close()
        log = stopped(proc)
    for side in ('left/image_rect', 'right/image_rect', 'left/camera_info', 'right/camera_info'):
        assert f'input {prefix}/camera/{side}: publisher reliable, subscribed reliable, ' \
               'keep-last 5' in log, log
    assert 'found no partner' not in log and 'lost before the node: ' not in log, log


@pytest.mark.parametrize('executor', ['single_threaded', pytest.param('events', marks=(
    pytest.mark.skipif(EventsExecutor is None, reason='this rclpy has no EventsExecutor'),))])
def test_best_effort_publisher_is_heard(ros, executor):
    """The subscription made again for a best-effort publisher, under either executor."""
    proc = NodeProcess('cl_vision_nodes.ros.convert_node', [
        '-p', f'executor:={executor}', '-r', f'image:=/qos_be_{executor}/in',
        '-r', f'image_out:=/qos_be_{executor}/out'])
    out = ros.collect(Image, f'/qos_be_{executor}/out')
    pub = ros.publisher(Image, f'/qos_be_{executor}/in', qos_profile_sensor_data)
    tags = iter(range(1000))

    def send():
        tag = f'be-{next(tags)}'
        msg = numpy_to_image(np.zeros((8, 8), np.uint8), 'mono8')
        msg.header.frame_id = tag
        pub.publish(msg)
        return tag
    try:
        publish_until_answered(send, out, tries=8, log=proc.output)
        assert proc.wait_for_output(f'input /qos_be_{executor}/in: publisher best_effort, '
                                    'subscribed best_effort, keep-last 1'), proc.output()
        values = ros.get_parameters('convert_node', [
            f'qos_overrides./qos_be_{executor}/in.subscription.reliability'])
        assert list(values.values()) == ['best_available']
    finally:
        log = stopped(proc)
    assert 'incompatible QoS' not in log, log  # rclpy's own warning, before the switch


def test_reliable_override_is_kept_and_its_silence_named(ros):
    proc = NodeProcess('cl_vision_nodes.ros.convert_node', [
        '-r', 'image:=/qos_fixed/in', '-r', 'image_out:=/qos_fixed/out',
        '-p', 'qos_overrides./qos_fixed/in.subscription.reliability:=reliable'])
    pub = ros.publisher(Image, '/qos_fixed/in', qos_profile_sensor_data)
    try:
        assert proc.wait_for_output('input /qos_fixed/in: publisher best_effort, subscribed '
                                    'reliable (qos_overrides), keep-last 1'), proc.output()
        pub.publish(numpy_to_image(np.zeros((8, 8), np.uint8), 'mono8'))
        assert proc.wait_for_output('no input 10 s after ready: /qos_fixed/in: '), proc.output()
    finally:
        log = stopped(proc)
    assert 'publishes best_effort, incompatible with the reliable override' in log, log


def withheld_status(proc: NodeProcess, diagnostics, publishers, right_offset_ns: int = 0,
                    until: Callable[[], bool] = lambda: True):
    """
    Send pairs until /diagnostics warns and ``until()``; return the status.

    Every second one without its right image, or with ``right_offset_ns`` every right message
    stamped that much later. (A warning may be the previous window's: ``until`` waits for what
    the pairs sent here must cause.)
    """
    clock = iter(range(5000 + 1000 * bool(right_offset_ns), 10_000))
    seen = len(diagnostics.messages)

    def warned(msgs):
        return next((s for m in msgs[seen:] for s in m.status
                     if s.name.startswith('/qos_withheld') and s.level >= DiagnosticStatus.WARN),
                    None)
    for _ in range(40):
        for k in range(4):
            msgs = stereo_msgs('withheld', next(clock), right_offset_ns=right_offset_ns)
            if k % 2 and not right_offset_ns:
                msgs[1] = None
            for publisher, msg in zip(publishers, msgs):
                if msg is not None:
                    publisher.publish(msg)
        found = diagnostics.wait_for(warned, 1.0)
        if found and until():
            return found
        if found:  # a warning of the window before: wait for the next window's
            seen = len(diagnostics.messages)
    raise AssertionError(f'no WARN diagnostics (or not what until waits for):\n{proc.output()}')


def test_silence_names_the_image_transport_a_camera_publishes_on(ros):
    """A camera on image_raw/compressed only, a node on raw (and the reverse): what to set."""
    inputs = InputQos(ros.node, message_info=True)
    raw = inputs.subscribe(Image, '/transport_c/image_raw', lambda *_: None, 1, raw=True)
    compressed = inputs.subscribe(CompressedImage, '/transport_r/image_raw/compressed',
                                  lambda *_: None, 1, raw=True)
    assert raw.describe() == '/transport_c/image_raw: no publisher'
    ros.publisher(CompressedImage, '/transport_c/image_raw/compressed', 10)
    ros.publisher(Image, '/transport_r/image_raw', 10)
    assert ros.wait_until(lambda: '(' in raw.describe() and '(' in compressed.describe())
    assert raw.describe() == (
        '/transport_c/image_raw: no publisher (/transport_c/image_raw/compressed has a '
        'sensor_msgs/msg/CompressedImage publisher: set image_transport: compressed)')
    assert compressed.describe() == (
        '/transport_r/image_raw/compressed: no publisher (/transport_r/image_raw has a '
        'sensor_msgs/msg/Image publisher: set image_transport: raw)')


def test_frames_withheld_put_diagnostics_at_warn(ros):
    remaps = [arg for topic, name in zip(TOPICS, ('left/image_rect', 'right/image_rect',
                                                  'left/camera_info', 'right/camera_info'))
              for arg in ('-r', f'{name}:={topic}')]
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node', [
        '-r', '__node:=qos_withheld', '-p', 'diagnostics_period:=1.0', '-p', 'disp_max:=32',
        '-r', 'disparity:=/qos_withheld/disparity', *remaps])
    publishers = [ros.publisher(t, topic, 10) for t, topic in zip(
        (Image, Image, CameraInfo, CameraInfo), TOPICS)]
    answers = ros.collect(DisparityImage, '/qos_withheld/disparity')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    try:
        publish_until_answered(lambda: publish_each(publishers, stereo_msgs('first', 1)),
                               answers, 'first', log=proc.output)
        status = withheld_status(proc, diagnostics, publishers)
        assert 'without a partner' in status.message, status
        assert proc.wait_for_output('partners were not published or were lost'), proc.output()
        assert 'identical stamps' not in proc.output()
        # the same with the right side stamped 1 ms later: now the stamps differ
        withheld_status(proc, diagnostics, publishers, right_offset_ns=1_000_000,
                        until=lambda: 'published with identical stamps?' in proc.output())
    finally:
        stopped(proc)
