"""OpenCL runtime: device choice, program/kernel cache, buffer reuse and errors that say what to do."""
import numpy as np
import pyopencl as cl
import pytest

from cl_vision_nodes.errors import DeviceError, KernelBuildError
from cl_vision_nodes.imaging.encodings import opencl_defines
from cl_vision_nodes.opencl import runtime as rt

ENC = opencl_defines()


def test_auto_prefers_a_gpu_else_the_first_device():
    entries = rt.list_devices()
    chosen = rt.select_device('auto')
    gpus = [e for e in entries if e.is_gpu]
    assert chosen == (gpus[0] if gpus else entries[0])


def test_selection_by_kind_index_and_name_substring():
    first = rt.list_devices()[0]
    assert rt.select_device(f'{first.platform_index}:{first.device_index}') == first
    assert rt.select_device(first.name[:6].lower()) == first
    assert rt.select_device(first.kind.lower()) == first


def test_environment_variable_applies_to_auto_only(monkeypatch):
    first = rt.list_devices()[0]
    monkeypatch.setenv(rt.DEVICE_ENV, f'{first.platform_index}:{first.device_index}')
    assert rt.resolve_spec('auto') == f'{first.platform_index}:{first.device_index}'
    assert rt.resolve_spec('cpu') == 'cpu'
    monkeypatch.setenv(rt.DEVICE_ENV, 'no-such-device')
    with pytest.raises(DeviceError, match="no OpenCL device matches 'no-such-device'; available"):
        rt.select_device(None)


@pytest.mark.parametrize('spec', ['7:7', 'quantum'])
def test_unknown_device_lists_what_is_available(spec):
    with pytest.raises(DeviceError, match='available: 0:0'):
        rt.select_device(spec)


def test_build_failure_names_the_file_and_carries_the_compiler_log(monkeypatch):
    runtime = rt.ClRuntime('auto')
    monkeypatch.setattr(rt, 'kernel_source',
                        lambda name: '__kernel void broken(__global float* x) { x[0] = y; }')
    with pytest.raises(KernelBuildError) as info:
        runtime.program('image')
    message = str(info.value)
    assert 'kernels/image.cl' in message and "'y'" in message  # the compiler's own words


def test_programs_kernels_and_buffers_are_cached(runtime):
    one, two = {**ENC, 'X': 1}, {**ENC, 'X': 2}
    assert runtime.program('image', one) is runtime.program('image', dict(one))
    assert runtime.program('image', one) is not runtime.program('image', two)
    k = runtime.kernel('image', 'scale_f32', one)
    assert runtime.kernel('image', 'scale_f32', one) is k
    a = runtime.buffer('test_role', 1024)
    assert runtime.buffer('test_role', 1024) is a
    assert runtime.buffer('test_role', 2048) is not a


def test_profiling_reports_device_time_per_stage():
    runtime = rt.ClRuntime('auto', profile=True)
    buf = runtime.buffer('x', 4 * 1000)
    host = np.arange(1000, dtype=np.float32)
    runtime.profiler.record('upload', cl.enqueue_copy(runtime.queue, buf, host))
    kernel = runtime.kernel('image', 'scale_f32', ENC)
    runtime.profiler.record('scale', kernel(runtime.queue, (1000,), None, buf, np.int32(1000),
                                            np.float32(2.0), buf))
    times = runtime.profiler.collect()
    assert set(times) == {'upload', 'scale'} and all(t >= 0 for t in times.values())
    assert runtime.profiler.collect() == {}


def test_disabled_profiler_records_nothing(runtime):
    assert not runtime.profiler.enabled
    runtime.profiler.record('x', None)
    assert runtime.profiler.collect() == {}
