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

"""`cl-vision doctor` as a user runs it: every device examined, the findings parseable."""
import json

from cl_vision_nodes.benchmarks.device_check import INSTALL_ROUTES
from cl_vision_nodes.opencl.devices import list_devices
from cliutil import cl_vision


def test_doctor_reports_every_device_and_its_capabilities_as_json():
    result = cl_vision('doctor', '--json')
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert [d['index'] for d in found['devices']] == [e.index for e in list_devices()]
    chosen = next(d for d in found['devices'] if d['index'] == found['chosen'])
    assert chosen['builds'] and chosen['problem'] is None
    assert chosen['capabilities'] == {'image': 'yes', 'flow': 'yes', 'surf': 'yes', 'elas': 'yes'}
    assert chosen['max_work_group'] >= 1 and chosen['local_memory_kib'] > 0
    assert chosen['frame_ms'] > 0


def test_doctor_text_marks_the_chosen_device_and_names_each_finding():
    result = cl_vision('doctor')
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith('* ') for line in lines) == 1
    for entry in list_devices():  # two PoCLs share a name; their versions tell them apart
        assert any(line[2:].startswith(f'{entry.index}  ')
                   and line.endswith(f'[{entry.platform_name} {entry.driver}]') for line in lines)
    for words in ('builds kernels: yes', 'fp64: ', 'max work-group: ', 'local memory: ',
                  '640x480 bgr8 upload + decode + download: ', 'elas: yes'):
        assert any(words in line for line in lines), words


def test_doctor_without_a_usable_device_names_the_install_command_for_each_hardware():
    """
    A PoCL whose builds all break stands for a driver that cannot compile.

    PoCL given a build flag that breaks every build stands for such a driver (as the PoCL bundled
    with pyopencl on AMD family 26 CPUs).
    """
    result = cl_vision('doctor', env={'POCL_EXTRA_BUILD_FLAGS': '-include /nonexistent.h'})
    if any(e.kind != 'CPU' for e in list_devices()):
        return  # a GPU driver here is not broken by a PoCL flag
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'builds kernels: no: ' in result.stdout
    for hardware, command in INSTALL_ROUTES:
        assert f'{hardware}: {command}' in result.stdout
