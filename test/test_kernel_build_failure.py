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
A device whose compiler fails on our kernels (while it passes the probe).

The node ends at start with exit code 2 and one FATAL line naming the device, the .cl file, the
compiler's first error and the fix; the CLI says the same in one line. PoCL stands for such a
driver when it is given a build flag that breaks every kernel with a barrier (the probe kernel has
none).
"""
import os
import re
import subprocess
import sys

from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.opencl.devices import select_device
from cliutil import REPO
import numpy as np
import pytest

# PYOPENCL_NO_CACHE: pyopencl before 2024.3 keeps its own binaries of PoCL builds, keyed by the
# source and options it passes (not PoCL's extra flags), and would hand back the good program an
# earlier test built; PoCL's own cache keys on the extra flags.
BROKEN = {**os.environ, 'POCL_EXTRA_BUILD_FLAGS': '-Dbarrier=no_barrier_on_this_device',
          'PYOPENCL_NO_CACHE': '1'}


@pytest.fixture(scope='module', autouse=True)
def pocl_device():
    if 'Portable Computing Language' not in select_device('auto').platform_name:
        pytest.skip('the failing compiler is emulated with PoCL')


def check_build_error_line(line: str) -> None:
    # the first flow program with a barrier: the pyramid's (its area kernels on GPUs)
    assert 'building kernels/flow/common.cl + kernels/flow/pyramid.cl for ' in line
    assert '(CPU, Portable Computing Language' in line  # the device
    assert 'no_barrier_on_this_device' in line  # the compiler's first error
    assert 'cl-vision doctor' in line and '`device` parameter' in line  # the fix


@pytest.mark.ros
def test_node_exits_2_at_start_with_one_fatal_line():
    result = subprocess.run([sys.executable, '-m', 'cl_vision_nodes.ros.flow_node'], cwd=REPO,
                            env=BROKEN, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert lines[0].startswith('[INFO]') and 'compiling OpenCL kernels' in lines[0]
    assert len(lines) == 2 and re.match(r'\[FATAL\] \[[\d.]+\] \[flow_node\]: cannot start: ',
                                        lines[1]), lines
    check_build_error_line(lines[1])


def test_cli_gives_one_line_and_exit_2(tmp_path):
    frame = np.random.default_rng(0).integers(0, 256, (24, 32), dtype=np.uint8)
    write_png(tmp_path / 'a.png', frame)
    result = subprocess.run(
        [sys.executable, '-m', 'cl_vision_nodes.tools.cli', 'flow', str(tmp_path / 'a.png'),
         str(tmp_path / 'a.png'), '--method', 'lk', '--out', str(tmp_path / 'f.flo')],
        cwd=REPO, env=BROKEN, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('cl-vision flow: error: '), lines
    check_build_error_line(lines[0])
    assert not (tmp_path / 'f.flo').exists()
