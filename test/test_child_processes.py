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
Nothing a tool started outlives it: `bench node` and `eval` stopped by SIGTERM, Ctrl-C, timeout.

Real tools, real node processes. Every process the tool starts inherits a marker in its
environment, so the test finds them in /proc however they end (a node orphaned by its tool is
re-parented, out of reach of a walk down the tool's children).
"""
import json
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import time
import uuid

from cliutil import cl_vision
import pytest
from rosutil import REPO

pytestmark = pytest.mark.ros

MARK = 'CL_VISION_TEST_MARK'
START_TIMEOUT_S = 120.0  # a node's start includes imports and, once, PoCL's kernel builds
EXIT_TIMEOUT_S = 25.0  # SIGINT to the nodes, up to 5 s each stage, SIGKILL: well below
BENCH = ('bench', 'node', '--sizes', '64x48', '--frames', '100000', '--nodes', 'surf')


def marked(mark: str) -> dict[int, str]:
    """Return the live processes (pid -> command line) whose environment holds ``mark``."""
    found = {}
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if f'{MARK}={mark}'.encode() not in (entry / 'environ').read_bytes().split(b'\0'):
                continue
            stat = (entry / 'stat').read_text()
            cmdline = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode()
        except OSError:  # ended meanwhile, or not ours
            continue
        if stat.rpartition(')')[2].split()[0] != 'Z':
            found[int(entry.name)] = cmdline
    return found


class Tool:
    """``cl-vision ARGS`` as a process of its own, with the marker in its environment."""

    def __init__(self, tmp_path: Path, *args: str, prefix: tuple[str, ...] = ()):
        self.mark = uuid.uuid4().hex
        self.log = tmp_path / 'tool.log'
        with self.log.open('w') as stream:
            self.process = subprocess.Popen(
                [*prefix, sys.executable, '-m', 'cl_vision_nodes.tools.cli', *args], cwd=REPO,
                stdout=stream, stderr=subprocess.STDOUT, env={**os.environ, MARK: self.mark})

    def started(self) -> dict[int, str]:
        """Return the running processes that the tool started, itself excluded."""
        return {pid: cmd for pid, cmd in marked(self.mark).items() if pid != self.process.pid}

    def wait_for(self, module: str) -> dict[int, str]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            running = self.started()
            if any(module in cmd for cmd in running.values()):
                time.sleep(1.0)  # the node imports rclpy and starts spinning
                return self.started()
            assert self.process.poll() is None, self.output()
            time.sleep(0.1)
        raise AssertionError(f'no {module} process after {START_TIMEOUT_S:g} s:\n'
                             + self.output())

    def wait(self) -> int:
        try:
            return self.process.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'still running {EXIT_TIMEOUT_S:g} s after the signal:\n'
                                 + self.output()) from None

    def output(self) -> str:
        return self.log.read_text(errors='replace')

    def assert_nothing_left(self) -> None:
        time.sleep(0.5)  # a killed process leaves /proc a moment after its parent learns it
        left = self.started()
        for pid in left:  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)
        assert not left, f'left running: {left}\n{self.output()}'

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in self.started():
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def tool(tmp_path):
    started = []

    def run(*args: str, prefix: tuple[str, ...] = ()) -> Tool:
        started.append(Tool(tmp_path, *args, prefix=prefix))
        return started[-1]
    yield run
    for each in started:
        each.kill()


def assert_interrupted(tool: Tool, code: int, name: str) -> None:
    assert tool.wait() == code, tool.output()
    lines = tool.output().strip().splitlines()
    assert f'interrupted by {name} before the end' in lines[-1], lines[-1]
    assert 'Traceback' not in tool.output(), tool.output()
    tool.assert_nothing_left()


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT], ids=['SIGTERM', 'SIGINT'])
def test_bench_node_stops_its_node_and_link_on_a_signal(tool, signum):
    bench = tool(*BENCH)
    running = bench.wait_for('cl_vision_nodes.ros.surf_node')
    assert len(running) >= 2, running  # the node, the bench's publisher and subscriber
    bench.process.send_signal(signum)
    assert_interrupted(bench, 128 + signum, signal.Signals(signum).name)


def test_eval_stops_its_nodes_on_ctrl_c_and_reports_what_was_answered(tool, tmp_path):
    made = cl_vision('make-bag', 'synthetic:flow:200:48x64', '--out', str(tmp_path / 'in'))
    assert made.returncode == 0, made.stderr
    evaluation = tool('eval', str(tmp_path / 'in'), '--out', str(tmp_path / 'out'),
                      '--nodes', 'flow,surf')
    evaluation.wait_for('cl_vision_nodes.ros.surf_node')
    deadline = time.monotonic() + START_TIMEOUT_S
    while not re.search(r'\] [1-9]\d*/200 frames', evaluation.output()):  # the progress bar
        assert time.monotonic() < deadline and evaluation.process.poll() is None, \
            evaluation.output()
        time.sleep(0.1)
    evaluation.process.send_signal(signal.SIGINT)
    assert_interrupted(evaluation, 130, 'SIGINT')
    report = json.loads((tmp_path / 'out' / 'report.json').read_text())
    assert report['interrupted'] and 0 < report['frames_sent'] < 200
    # The nodes took the tool's SIGINT and stopped cleanly (a SIGKILL would read -9).
    assert {key: node['exit_code'] for key, node in report['nodes'].items()} == \
        {'flow': 0, 'surf': 0}, evaluation.output()


@pytest.mark.parametrize('after_s', [0.0, 4.0])
def test_bench_node_under_timeout_leaves_nothing(tool, after_s):
    """``timeout`` sends SIGTERM: at once (during the start) or while the node starts."""
    bench = tool(*BENCH, prefix=('timeout', '-s', 'TERM', f'{after_s + 0.01:g}'))
    assert bench.wait() == 124, bench.output()  # timeout's code for "it timed out"
    bench.assert_nothing_left()


def test_a_killed_tool_leaves_its_nodes_the_parent_death_signal(tool):
    """SIGKILL runs no clean-up: the kernel's SIGTERM (PR_SET_PDEATHSIG) stops the node."""
    bench = tool(*BENCH)
    bench.wait_for('cl_vision_nodes.ros.surf_node')
    bench.process.kill()
    bench.process.wait()
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    while bench.started() and time.monotonic() < deadline:
        time.sleep(0.2)
    bench.assert_nothing_left()
