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
configure_allocator: large buffers stop faulting in fresh pages, the user's settings win.

Each case runs in a fresh interpreter (malloc settings are per process and glibc reads the
environment once, at start-up) and counts the minor page faults of 200 messages' worth of
buffers: a 640x480 32FC2 message (2.5 MB) received as two buffers alive at once, DDS' sample and
its Python copy, then both freed. A single buffer would not show the problem: glibc raises its
mmap threshold to the largest size freed so far, but the pair freed together exceeds its trim
threshold (twice that), so the heap top is given back and the next message faults again.
"""
import json
import os
import subprocess
import sys

from cl_vision_nodes.ros.allocator import glibc_version, SETTINGS
import pytest

pytestmark = pytest.mark.skipif(not glibc_version(), reason='mallopt thresholds are glibc only')

MESSAGES = 200
MESSAGE_BYTES = 640 * 480 * 8  # 32FC2
PAGE_FAULTS_PER_MESSAGE = 2 * MESSAGE_BYTES // 4096

CHILD = f"""
import json, os, resource, subprocess, sys
from dataclasses import asdict
import numpy as np
from cl_vision_nodes.ros.allocator import configure_allocator, SETTINGS
calls, spawn = int(sys.argv[1]), sys.argv[2] == 'spawn'
setups = [configure_allocator() for _ in range(calls)]
if spawn:  # report a child's faults: it calls nothing, it only inherits our environment
    print(subprocess.run([sys.executable, '-c', sys.argv[3], '0', 'count', sys.argv[3]],
                         capture_output=True, text=True, check=True).stdout)
    sys.exit(0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({MESSAGES}):
    sample = np.empty({MESSAGE_BYTES}, np.uint8)
    sample.fill(1)
    copy = np.empty_like(sample)
    copy[:] = sample
    del sample, copy
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({{'faults': faults, 'setups': [asdict(s) for s in setups],
                  'same': all(s is setups[0] for s in setups),
                  'environ': {{s.variable: os.environ.get(s.variable) for s in SETTINGS}}}}))
"""


def run_child(calls: int, env: dict[str, str] | None = None, spawn: bool = False) -> dict:
    """Run CHILD without any malloc setting of ours in its environment, plus ``env``."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith('MALLOC_') and k != 'GLIBC_TUNABLES'}
    out = subprocess.run([sys.executable, '-c', CHILD, str(calls),
                          'spawn' if spawn else 'count', CHILD],
                         env={**base, **(env or {})}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope='module')
def default_faults() -> int:
    faults = run_child(0)['faults']
    # glibc's defaults: every message maps and faults its pages in again.
    assert faults > MESSAGES * PAGE_FAULTS_PER_MESSAGE // 2
    return faults


def test_configured_process_reuses_its_pages(default_faults):
    got = run_child(1)
    assert got['faults'] < default_faults / 20
    assert got['faults'] < 4 * PAGE_FAULTS_PER_MESSAGE  # the first message's pages, about
    setup = got['setups'][0]
    assert setup['applied'] == {s.variable: s.value for s in SETTINGS}
    assert setup['kept'] == {} and setup['reason'] == ''
    assert got['environ'] == {s.variable: str(s.value) for s in SETTINGS}


def test_children_inherit_the_setting_through_the_environment(default_faults):
    got = run_child(1, spawn=True)
    assert got['faults'] < default_faults / 20
    assert got['environ'] == {s.variable: str(s.value) for s in SETTINGS}


def test_the_users_variables_win(default_faults):
    """A user who pins the mmap threshold at 128 KiB keeps it, and its page faults."""
    got = run_child(1, {'MALLOC_MMAP_THRESHOLD_': '131072',
                        'GLIBC_TUNABLES': 'glibc.malloc.trim_threshold=262144'})
    setup = got['setups'][0]
    assert setup['kept'] == {'MALLOC_MMAP_THRESHOLD_': '131072',
                             'MALLOC_TRIM_THRESHOLD_': '262144'}
    assert setup['applied'] == {}
    assert got['environ']['MALLOC_MMAP_THRESHOLD_'] == '131072'
    assert got['environ']['MALLOC_TRIM_THRESHOLD_'] is None  # the tunable stays the user's way
    assert got['faults'] > default_faults / 2


def test_configuring_twice_is_configuring_once(default_faults):
    got = run_child(3)
    assert got['same']
    assert got['setups'][0]['applied'] == {s.variable: s.value for s in SETTINGS}
    assert got['faults'] < default_faults / 20
