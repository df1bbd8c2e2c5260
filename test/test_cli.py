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

"""`cl-vision` as users run it: output, and one line + exit code 2 on bad input."""
import subprocess
import sys

from cliutil import assert_one_line_error, cl_vision, REPO
import pytest


def test_devices_lists_and_marks_the_chosen_device():
    result = cl_vision('devices')
    assert result.returncode == 0, result.stderr
    marked = [line for line in result.stdout.splitlines() if line.startswith('* 0:')]
    assert len(marked) == 1 and ('CPU' in marked[0] or 'GPU' in marked[0])


@pytest.mark.parametrize('args, words', [
    (['devices', '--device', 'no-such-gpu'], "no OpenCL device matches 'no-such-gpu'"),
    (['frobnicate'], 'invalid choice'),
    (['bench'], 'required'),
])
def test_bad_input_gives_one_line_and_exit_2(args, words):
    assert_one_line_error(cl_vision(*args), words)


@pytest.mark.parametrize('override, words', [
    ('gain:=1000.0', 'gain: 1000.0 is above the maximum 255.0'),
    ('output_encoding:=hsv', "'hsv' is not one of"),
    ('device:=no-such-gpu', 'no OpenCL device matches'),
])
@pytest.mark.ros
def test_node_refuses_to_start_with_a_bad_parameter(override, words):
    result = subprocess.run(
        [sys.executable, '-m', 'cl_vision_nodes.ros.convert_node', '--ros-args', '-p', override],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert 'cannot start' in result.stderr and words in result.stderr, result.stderr
    assert 'Traceback' not in result.stderr
