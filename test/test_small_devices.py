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
Every capability on a device smaller than ours: 64 work-items per group.

Such as Mali, Raspberry Pi, many integrated GPUs. PoCL reports the limit it is given by
POCL_MAX_WORK_GROUP_SIZE, so the kernel tests (marked ``kernels``) run again, unchanged, in a
process that sees such a device.
"""
import os
import subprocess
import sys

from cliutil import REPO
import pytest

pytestmark = pytest.mark.slow

SMALL = {**os.environ, 'POCL_MAX_WORK_GROUP_SIZE': '64'}


def limits_seen_by_a_child() -> str:
    return subprocess.run(
        [sys.executable, '-c', 'from cl_vision_nodes.opencl.runtime import ClRuntime; '
                               'r = ClRuntime("auto"); print(r.entry.platform_name, '
                               'r.limits.max_group)'],
        cwd=REPO, env=SMALL, capture_output=True, text=True, timeout=120).stdout


@pytest.fixture(scope='module')
def small_device():
    seen = limits_seen_by_a_child()
    if 'Portable Computing Language' not in seen:
        pytest.skip(f'the 64 work-item device is emulated with PoCL; auto picks {seen.strip()}')
    assert seen.split()[-1] == '64', seen


def test_kernel_tests_pass_with_64_work_items_per_group(small_device):
    result = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
                             '-m', 'kernels', str(REPO / 'test')], cwd=REPO, env=SMALL,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert ' passed' in result.stdout.splitlines()[-1]
