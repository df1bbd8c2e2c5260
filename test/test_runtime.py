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

"""The device layer: probed device choice, programs by value, no fp64, limits, owned buffers."""
import dataclasses
import functools
import json
import os
import subprocess
import sys
import threading

from cl_vision_nodes.errors import DeviceError, KernelBuildError
from cl_vision_nodes.imaging.encodings import opencl_defines
from cl_vision_nodes.opencl import devices, programs
from cl_vision_nodes.opencl import runtime as runtime_module
from cl_vision_nodes.opencl.kernel import BOUND_MAX, BoundLaunches
from cl_vision_nodes.opencl.limits import DeviceLimits
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

ENC = opencl_defines()
IMAGE = 'imaging/device_image.cl'


def test_auto_prefers_a_gpu_else_the_first_device():
    entries = devices.list_devices()
    chosen = devices.select_device('auto')
    gpus = [e for e in entries if e.is_gpu]
    assert chosen == (gpus[0] if gpus else entries[0])


def test_selection_by_kind_index_and_name_substring():
    first = devices.list_devices()[0]
    assert devices.select_device(first.index) == first
    assert devices.select_device(first.name[:6].lower()) == first
    assert devices.select_device(first.kind.lower()) == first


def test_environment_variable_applies_to_auto_only(monkeypatch):
    first = devices.list_devices()[0]
    monkeypatch.setenv(devices.DEVICE_ENV, first.index)
    assert devices.resolve_spec('auto') == first.index
    assert devices.resolve_spec('cpu') == 'cpu'
    monkeypatch.setenv(devices.DEVICE_ENV, 'no-such-device')
    with pytest.raises(DeviceError, match="no OpenCL device matches 'no-such-device'; available"):
        devices.select_device(None)


@pytest.mark.parametrize('spec', ['7:7', 'quantum'])
def test_unknown_device_lists_what_is_available(spec):
    with pytest.raises(DeviceError, match='available: 0:0'):
        devices.select_device(spec)


def test_auto_skips_a_device_that_cannot_build_and_says_why(monkeypatch):
    entries = devices.list_devices()
    broken = entries[0]
    monkeypatch.setattr(devices, 'probe', lambda e: "error: unknown target CPU 'generic'"
                        if e == broken else None)
    warnings = []
    if len(entries) > 1:
        assert devices.select_device('auto', warnings.append) != broken
    else:
        with pytest.raises(DeviceError, match='no auto OpenCL device can build kernels'):
            devices.select_device('auto', warnings.append)
    assert len(warnings) == 1
    assert broken.name in warnings[0] and 'unknown target CPU' in warnings[0]
    assert 'pocl-opencl-icd' in warnings[0]  # the fix


def test_an_explicit_device_that_cannot_build_is_an_error(monkeypatch):
    first = devices.list_devices()[0]
    monkeypatch.setattr(devices, 'probe', lambda e: 'error: unknown target CPU')
    with pytest.raises(DeviceError, match='cannot build kernels: error: unknown target CPU'):
        devices.select_device(first.index)


def test_every_listed_device_here_passes_the_probe_or_is_a_pocl_that_does_not_know_the_cpu():
    """
    The chosen device builds; another fails only as the wheel's PoCL does on a CPU it lacks.

    Where pyopencl's bundled PoCL (LLVM 14) does not know the CPU, ensure_opencl.sh installs
    Debian's PoCL beside it, and both are listed: the probe must refuse the bundled one for that
    reason (which ``select_device`` reports with the fix) and pass everything else.
    """
    assert devices.probe(devices.select_device('auto')) is None
    for entry in devices.list_devices():
        error = devices.probe(entry)
        assert error is None or ('unknown target CPU' in error
                                 and 'Portable Computing Language' in entry.platform_name), \
            (entry.name, entry.platform_name, error)


# A fresh process: PoCL reads POCL_AFFINITY when it starts. Prints the variable and the CPUs
# each thread of the process may run on, once a CPU runtime has run a kernel.
AFFINITY_CHILD = """
import json, os, sys
if sys.argv[1] == 'restricted':
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from cl_vision_nodes.errors import DeviceError
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
try:
    runtime = ClRuntime('cpu')
except DeviceError:  # no CPU device that builds here
    print('null')
    sys.exit(0)
host = np.zeros(64, np.float32)
runtime.download(host, runtime.buffers().get('probe', host.nbytes), 'probe')
cpus = []
for task in os.listdir('/proc/self/task'):
    with open(f'/proc/self/task/{task}/status') as status:
        line = next(x for x in status if x.startswith('Cpus_allowed_list'))
        cpus.append(line.split()[1])
print(json.dumps([os.environ.get('POCL_AFFINITY'), cpus, runtime.limits.compute_units]))
"""


def affinity_child(mode: str, env: dict[str, str]) -> tuple[str | None, list[str], int]:
    result = subprocess.run([sys.executable, '-c', AFFINITY_CHILD, mode], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])
    if found is None:
        pytest.skip('no CPU OpenCL device builds here')
    return tuple(found)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or os.cpu_count() != len(
    os.sched_getaffinity(0)), reason='needs a process free to run on 2 or more CPUs')
def test_pocl_workers_are_pinned_one_a_cpu_unless_restricted_or_chosen():
    env = {k: v for k, v in os.environ.items() if k != 'POCL_AFFINITY'}
    variable, cpus, workers = affinity_child('free', env)
    # PoCL's workers (one a compute unit) each on one CPU alone; other threads run anywhere
    assert variable == '1' and {str(i) for i in range(workers)} <= set(cpus), (cpus, workers)
    variable, cpus, _ = affinity_child('restricted', env)  # a taskset: PoCL could not pin there
    assert variable is None and len(set(cpus)) == 1, (variable, cpus)
    variable, _, _ = affinity_child('free', {**env, 'POCL_AFFINITY': '0'})  # the user's choice
    assert variable == '0'


def test_build_failure_is_one_line_naming_device_file_first_error_and_fix(monkeypatch, runtime):
    monkeypatch.setattr(programs, 'kernel_source', lambda file: f'#line 1 "{file}"\n'
                        '__kernel void broken(__global float* x) { x[0] = y; }\n')
    with pytest.raises(KernelBuildError) as info:
        runtime.program('broken/example.cl')
    message = str(info.value)
    assert len(message.splitlines()) == 1
    assert 'kernels/broken/example.cl' in message and runtime.entry.name in message
    assert "'y'" in message.split('failed:')[1]  # the compiler's own words
    assert 'cl-vision doctor' in message
    assert "'y'" in info.value.log


def test_double_is_a_compile_error_on_every_device(monkeypatch, runtime):
    """fp32 only: a kernel that uses double does not build, even where the device has fp64."""
    monkeypatch.setattr(programs, 'kernel_source', lambda file: (
        '__kernel void k(__global float* x) { double d = x[0]; x[0] = (float)(d * 2); }\n'))
    with pytest.raises(KernelBuildError, match='fp64_is_not_used_by_cl_vision_nodes'):
        runtime.program('uses_double.cl')


def test_programs_are_cached_by_value_and_kernels_once(runtime):
    one, two = {**ENC, 'X': 1}, {**ENC, 'X': 2}
    assert runtime.program(IMAGE, one) is runtime.program((IMAGE,), dict(one))
    assert runtime.program(IMAGE, one) is not runtime.program(IMAGE, two)
    program = runtime.program(IMAGE, one)
    assert program.kernel('scale_f32') is program.kernel('scale_f32')


def test_program_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(runtime_module, 'MAX_PROGRAMS', 3)
    runtime = ClRuntime('auto')
    first = runtime.program(IMAGE, {**ENC, 'N': 0})
    for n in range(1, 6):
        runtime.program(IMAGE, {**ENC, 'N': n})
    assert runtime.cache_sizes()['programs'] == 3
    assert runtime.program(IMAGE, {**ENC, 'N': 0}) is not first  # dropped, built again


def test_buffers_belong_to_their_owner(runtime):
    a, b = runtime.buffers(), runtime.buffers()
    first = a.get('flow_a', 1024)
    assert a.get('flow_a', 1024) is first and b.get('flow_a', 1024) is not first
    assert a.get('flow_a', 2048) is not first and len(a) == 1
    assert a.allocated_bytes() == 2048


def test_launch_rounds_up_to_whole_groups_and_checks_the_limit(runtime):
    kernel = runtime.program(IMAGE, ENC).kernel('scale_f32')
    buffers = runtime.buffers()
    count = 1000  # not a multiple of the group
    src, dst = buffers.get('src', count * 4), buffers.get('dst', count * 4)
    host = np.arange(count, dtype=np.float32)
    cl.enqueue_copy(runtime.queue, src, host)
    kernel((count,), (src, np.int32(count), np.float32(2.0), dst), 'scale', local=(64,))
    out = np.empty_like(host)
    cl.enqueue_copy(runtime.queue, out, dst)
    assert np.array_equal(out, host * 2)
    with pytest.raises(DeviceError, match='work-items'):
        kernel((count,), (src, np.int32(count), np.float32(2.0), dst), 'scale',
               local=(kernel.max_group * 2,))


def test_bound_launches_bind_each_distinct_launch_and_follow_their_buffers(runtime):
    kernel = runtime.program(IMAGE, ENC).kernel('scale_f32')
    buffers = runtime.buffers()
    count = 1000
    src, a, b = (buffers.get(role, count * 4) for role in ('src', 'a', 'b'))
    launches = BoundLaunches()
    host = np.arange(count, dtype=np.float32)
    for dst, gain in ((a, 2.0), (b, 2.0), (a, 3.0)):  # another buffer or scalar: another launch
        runtime.upload(src, host, 'upload', blocking=True)
        launches(kernel, (count,), (src, np.int32(count), np.float32(gain), dst), 'scale')
        host = host + 1  # the bound launch reads the buffer's new contents
    out = np.empty((2, count), np.float32)
    runtime.download(out[0], a, 'download')
    runtime.download(out[1], b, 'download')
    assert np.array_equal(out, [(host - 1) * 3, (host - 2) * 2])
    launches.clear()
    launches(kernel, (count,), (src, np.int32(count), np.float32(0.5), b), 'scale')
    runtime.download(out[1], b, 'download')
    assert np.array_equal(out[1], (host - 1) * 0.5)
    for gain in range(BOUND_MAX + 3):  # past the limit: bound anew, still right
        launches(kernel, (count,), (src, np.int32(count), np.float32(gain), a), 'scale')
    runtime.download(out[0], a, 'download')
    assert np.array_equal(out[0], (host - 1) * (BOUND_MAX + 2))


def test_cpu_launches_without_a_group_get_rows_that_divide_the_size():
    """spread_groups: a row of up to 64 work-items, the global size unchanged."""
    from cl_vision_nodes.opencl.kernel import spread_groups
    assert spread_groups((39, 29)) == (39, 1)  # dis_search's grid at 640x480, level 2
    assert spread_groups((640, 480)) == (64, 1)
    assert spread_groups((160, 120)) == (40, 1)
    assert spread_groups((1009,)) == (1,) and spread_groups((0, 5, 3)) == (1, 1, 1)


def test_limits_shrink_groups_to_what_the_device_allows():
    small = DeviceLimits(max_group=64, max_item_sizes=(64, 64, 64), local_mem=32768, fp64=False,
                         image_support=False, compute_units=1, is_gpu=True,
                         host_memory=False)
    assert small.group(256) == 64 and small.group(32) == 32
    assert small.group_2d((32, 8)) == (32, 2)
    assert small.group_2d((16, 16)) == (16, 4)
    assert small.group_2d((256, 1), min_width=16) == (64, 1)


def test_profiling_reports_device_time_per_stage():
    runtime = ClRuntime('auto', profile=True)
    buf = runtime.buffers().get('x', 4 * 1000)
    host = np.arange(1000, dtype=np.float32)
    runtime.profiler.record('upload', cl.enqueue_copy(runtime.queue, buf, host))
    runtime.program(IMAGE, ENC).kernel('scale_f32')(
        (1000,), (buf, np.int32(1000), np.float32(2.0), buf), 'scale')
    times = runtime.profiler.collect()
    assert set(times) == {'upload', 'scale'} and all(t >= 0 for t in times.values())
    assert runtime.profiler.collect() == {}


def test_disabled_profiler_records_nothing(runtime):
    assert not runtime.profiler.enabled
    runtime.profiler.record('x', None)
    assert runtime.profiler.collect() == {}


def test_transfers_move_the_bytes_and_record_their_stage():
    runtime = ClRuntime('auto', profile=True)
    buffers = runtime.buffers()
    host = (np.arange(37) * 7).astype(np.uint8)  # an odd size, short of the buffers' 41 bytes
    a, b, c = (buffers.get(role, 41) for role in 'abc')
    for buf in (a, b, c):
        runtime.fill(buf, np.uint8(0xEE), 'fill')
    runtime.upload(a, host, 'upload')
    runtime.upload(c, host[::-1].copy(), 'upload_blocking', blocking=True)
    runtime.copy(b, a, 'copy', byte_count=13)
    whole, part = np.empty(41, np.uint8), np.empty(5, np.uint8)
    runtime.download(whole, b, 'download')
    assert np.array_equal(whole, np.r_[host[:13], np.full(28, 0xEE, np.uint8)])
    runtime.download(part, a, 'download', src_offset=31)
    assert np.array_equal(part, host[31:36])
    runtime.copy(b, c, 'copy_all')
    runtime.download(whole, b, 'download')
    assert np.array_equal(whole, np.r_[host[::-1], np.full(4, 0xEE, np.uint8)])
    table = np.arange(22, dtype=np.float32)[::2]  # strided: made contiguous on the way
    constant = runtime.constant(table)
    assert constant.size == table.nbytes and constant.flags & cl.mem_flags.READ_ONLY
    back = np.empty_like(table)
    runtime.download(back, constant, 'download')
    assert np.array_equal(back, table)
    kernels = runtime.profiler.collect_kernels()  # the constant's copy is no event
    assert {name: k.launches for name, k in kernels.items()} == {
        '[fill]': 3, '[upload]': 1, '[upload_blocking]': 1, '[copy]': 1, '[copy_all]': 1,
        '[download]': 4}
    assert all(k.ms >= 0 for k in kernels.values())


@pytest.mark.parametrize('host_memory', [True, False])
def test_read_maps_where_the_device_computes_in_host_memory_else_downloads(host_memory):
    runtime = ClRuntime('auto', profile=True)
    runtime.limits = dataclasses.replace(runtime.limits, host_memory=host_memory)
    buffers = runtime.buffers()
    buf = buffers.get('flow', 4 * 30)
    runtime.upload(buf, np.arange(30, dtype=np.float32), 'upload')
    first = runtime.start_read(buffers, 'flow_host', buf, (5, 3), np.dtype(np.float32),
                               'download').wait()
    assert np.array_equal(first, np.arange(15, dtype=np.float32).reshape(5, 3))
    assert isinstance(first.base, cl.MemoryMap) == host_memory
    buffers.age_views()
    buffers.age_views()  # unmapped, before the buffer is written again
    runtime.fill(buf, np.float32(2.5), 'fill')
    again = runtime.start_read(buffers, 'flow_host', buf, (4,), np.dtype(np.float32),
                               'download').wait()
    assert np.array_equal(again, np.full(4, 2.5, np.float32))
    buffers.age_views()
    buffers.age_views()
    assert runtime.profiler.collect_kernels()['[download]'].launches == 2


@pytest.mark.parametrize('frames', [1, 2])
def test_a_mapped_view_stays_mapped_for_one_more_frame(frames):
    """
    age_views, once a frame: a frame's mapped flow is unmapped at the frame after next.

    Unmapping an array that is no longer mapped fails, so the test unmaps it to ask.
    """
    runtime = ClRuntime('auto')
    buffers = runtime.buffers()
    host, event = buffers.map_read(buffers.get('flow', 4 * 16), (16,), np.dtype(np.float32))
    event.wait()
    for _ in range(frames):
        buffers.age_views()
    if frames == 1:  # the next frame: still mapped
        host.base.release(runtime.queue)
        return
    with pytest.raises(cl.LogicError):  # the frame after next: unmapped
        host.base.release(runtime.queue)


@pytest.mark.parametrize('host_memory', [True, False])
def test_a_read_is_queued_behind_the_work_before_it_without_waiting(host_memory):
    """start_read returns while the queue is held; the array is filled once the work ran."""
    runtime = ClRuntime('auto')
    runtime.limits = dataclasses.replace(runtime.limits, host_memory=host_memory)
    buffers = runtime.buffers()
    buf = buffers.get('flow', 4 * 16)
    read = functools.partial(runtime.start_read, buffers, 'flow_host', buf, (16,),
                             np.dtype(np.float32), 'download')
    read().wait()  # the pinned array is mapped at its first read
    buffers.age_views()
    buffers.age_views()
    gate = cl.UserEvent(runtime.context)
    cl.enqueue_marker(runtime.queue, wait_for=[gate])  # the queue held until the gate opens
    runtime.fill(buf, np.float32(7.0), 'fill')
    pending: list = []
    reader = threading.Thread(target=lambda: pending.append(read()))
    reader.start()
    reader.join(60)
    try:
        assert pending, 'start_read waited for the held queue'
        status = pending[0].event.command_execution_status
        assert status != cl.command_execution_status.COMPLETE, 'read before the work it follows'
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
        reader.join()
    assert np.array_equal(pending[0].wait(), np.full(16, 7.0, np.float32))
    buffers.age_views()
    buffers.age_views()
