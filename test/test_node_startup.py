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
Node start-up as `ros2 run` and `ros2 launch` show it.

Every OpenCL program is compiled, and every kernel run once on a frame of the expected size,
while the node starts, between a "compiling" and a "ready in" line that names the device; a
node that cannot start says why in one FATAL line under its own name and exits with code 2,
without a traceback. ``--help`` prints the node's topics and parameters (from its schema) and
exits without starting.
"""
import importlib.util
import re
import subprocess
import sys

from cl_vision_nodes.ros.topics import node_topics
from cl_vision_nodes.schemas import NODE_SCHEMAS
import numpy as np
import pytest
from rosutil import NodeProcess, numpy_to_image, publish_until_answered, REPO, RosHarness
from sensor_msgs.msg import Image

pytestmark = pytest.mark.ros

NODES = ('convert_node', 'flow_node', 'surf_node', 'disparity_node', 'rectify_node',
         'vision_pipeline')


@pytest.mark.parametrize('node', NODES)
def test_start_logs_compiling_then_ready_with_the_time(node):
    proc = NodeProcess(f'cl_vision_nodes.ros.{node}',
                       ['-r', '__ns:=/startup_test', '-r', '__node:=renamed'])
    try:
        assert proc.wait_for_output(' executor\n'), proc.output()  # the end of the ready line
        logged = re.findall(r'\[(\w+)\] \[[\d.]+\] \[([\w.]+)\]: (.*)', proc.output())
        assert [(level, name) for level, name, _ in logged[:2]] == \
            [('INFO', 'startup_test.renamed')] * 2, proc.output()
        assert logged[0][2] == \
            'compiling OpenCL kernels and running them on a 640x480 frame ...', logged
        # the driver's version after the platform: two PoCLs on one machine share its name
        assert re.fullmatch(r'ready in \d+\.\d s on .*\(CPU, Portable Computing Language '
                            r'\d[^,]*, \d+:\d+\), single_threaded executor', logged[1][2]), logged
    finally:
        assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()
    assert 'MALLOC' not in proc.output()  # the allocator's settings are a debug line


@pytest.mark.skipif(importlib.util.find_spec('rclpy.experimental') is None,
                    reason="this rclpy (Humble's) has no EventsExecutor")
def test_a_node_on_the_events_executor_answers_frames_and_stops():
    proc = NodeProcess('cl_vision_nodes.ros.convert_node',
                       ['-p', 'executor:=events', '-r', 'image:=/events_test/in',
                        '-r', 'image_out:=/events_test/out'])
    ros = RosHarness('events_test_harness')
    try:
        pub = ros.publisher(Image, '/events_test/in')
        out = ros.collect(Image, '/events_test/out')
        assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()
        frame = numpy_to_image(np.arange(48, dtype=np.uint8).reshape(6, 8), 'mono8')
        frame.header.frame_id = 'events'
        answer = publish_until_answered(lambda: pub.publish(frame), out, 'events',
                                        log=proc.output)
        assert answer.height == 6 and answer.width == 8
        assert 'events executor' in proc.output()
    finally:
        ros.close()
        assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


# Runs the node module as ``python -m`` does, with OpenCL's platform list made to end the process:
# the help must answer without looking for a device (let alone building kernels).
HELP_WITHOUT_OPENCL = """
import runpy, sys
import pyopencl
pyopencl.get_platforms = lambda: sys.exit('the help looked for an OpenCL device')
module, sys.argv = sys.argv[1], sys.argv[1:]
runpy.run_module(module, run_name='__main__', alter_sys=True)
"""


@pytest.mark.parametrize('option', ['--help', '-h'])
@pytest.mark.parametrize('node', NODES)
def test_help_lists_topics_and_every_parameter_without_starting(node, option):
    result = subprocess.run([sys.executable, '-c', HELP_WITHOUT_OPENCL,
                             f'cl_vision_nodes.ros.{node}', option],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith(f'usage: ros2 run cl_vision_nodes {node} ') and not result.stderr
    assert 'compiling' not in text + result.stderr
    schema = NODE_SCHEMAS[node]
    listed = re.findall(r'^  (\S+) \((\w+), default (.*?)[,)]', text, re.MULTILINE)
    assert [(name, kind) for name, kind, _ in listed] == \
        [(spec.name, spec.type.__name__) for spec in schema], text
    assert [default for _, _, default in listed] == [repr(spec.default) for spec in schema]
    topics = node_topics(node, schema.defaults())
    for topic in topics.inputs + topics.outputs:
        assert re.search(rf'^  {re.escape(topic.name)} +{topic.type_name}$', text, re.MULTILINE)


@pytest.mark.parametrize('ros_args, name, words', [
    (['-r', '__node:=renamed', '-p', 'device:=no-such-gpu'], 'renamed',
     "no OpenCL device matches 'no-such-gpu'"),
    (['-r', '__node:=renamed', '-p', 'gain:=1000.0'], 'renamed', 'gain'),
    (['-p', 'executor:=threads'], 'convert_node', 'not one of auto, events, single_threaded'),
    (['--params-file', '/no/such/params.yaml'], 'convert_node',
     '--params-file /no/such/params.yaml: no such file'),
])
def test_start_failure_is_one_fatal_line_under_the_node_name_and_exit_2(ros_args, name, words):
    result = subprocess.run(
        [sys.executable, '-m', 'cl_vision_nodes.ros.convert_node', '--ros-args', *ros_args],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert re.match(rf'\[FATAL\] \[[\d.]+\] \[{name}\]: cannot start: ', lines[0]), lines[0]
    assert words in lines[0], lines[0]
