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
A frame's work enqueued ahead of its bytes (``FlowFrames.arm``), on PoCL.

Flows must be the ordinary path's bit for bit, whatever comes between two frames: a parameter
change, a wait on the queue, a warm-up, a frame of another size or a bad one, a stamp going
back. And nothing may wait forever behind a hold: the tests run each sequence on a thread and
fail if it does not end.
"""
import dataclasses
import gc
import threading
from typing import Callable

from cl_vision_nodes.capabilities.flow import FlowFrames
from cl_vision_nodes.capabilities.stages import StageTimes
from cl_vision_nodes.dataio.synthetic import flow_pair
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw, RawImage
from cl_vision_nodes.opencl.gate import gate_for, QueueGate
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.opencl.semaphores import BinarySemaphore, EXTENSION, extension_function, \
    offers_semaphores, SemaphoresUnavailable
import numpy as np
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

ENDS_WITHIN_S = 120.0
"""A sequence that has not ended by then waits behind a hold that nothing releases."""


def ends(work: Callable[[], object]) -> object:
    """Return ``work()`` run on a thread; fail if it does not end (a wait behind a hold)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(ENDS_WITHIN_S)
    assert not thread.is_alive(), 'waiting behind a hold nothing releases'
    return result[0] if result else None


def runtime(host_memory: bool) -> ClRuntime:
    """PoCL; ``host_memory=False`` takes a GPU's path (reads into pinned arrays)."""
    made = ClRuntime('auto')
    made.limits = dataclasses.replace(made.limits, host_memory=host_memory)
    return made


def raws(height: int, width: int, count: int, seed: int = 0) -> list[RawImage]:
    return [gray_to_raw(flow_pair(height, width, seed=seed + k).frame0) for k in range(count)]


Event = tuple[str, object]
"""A step of a sequence: ('frame', (raw, stamp)), or something done between frames."""


def play(frames: FlowFrames, events: list[Event]) -> list[object]:
    """Run ``events``; return each frame's flow (a copy), None, or the error it raised."""
    out: list[object] = []
    for kind, arg in events:
        if kind == 'frame':
            raw, stamp = arg
            try:
                answer = frames.start_frame(raw, stamp)()
            except ImageFormatError as exc:
                out.append(type(exc))
                continue
            out.append(None if answer is None else answer.flow.copy())
            if answer is not None:
                frames.picture(answer)  # on the queue before arm, as flow_node draws it
            frames.arm()
        elif kind == 'configure':
            frames.configure({**frames.estimator.values, **arg})
        elif kind == 'finish':
            frames.runtime.finish()
        elif kind == 'warm':
            frames.warm(DeviceImages(frames.runtime).decode(arg))
        elif kind == 'reset':
            frames.reset()
    return out


def same(a: list[object], b: list[object]) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def both(method_values: dict, events: list[Event], host_memory: bool) -> tuple[list, FlowFrames]:
    values = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), method_values)
    flows = []
    for ahead in (False, True):
        frames = FlowFrames(runtime(host_memory), values, StageTimes(), ahead=ahead)
        flows.append(ends(lambda: play(frames, events)))
    assert same(*flows)
    return flows[1], frames


@pytest.mark.parametrize('host_memory', [False, True])
@pytest.mark.parametrize('method_values', [
    {'method': 'dis', **DIS_PRESETS['ultrafast']}, {'method': 'dis', **DIS_PRESETS['medium']},
    {'method': 'lk'}, {'method': 'hs'}, {'method': 'bm'}])
def test_frames_enqueued_ahead_give_the_ordinary_flows(method_values, host_memory):
    frames = raws(53, 67, 3)
    events = [('frame', (frames[k % 3], k + 1)) for k in range(7)]
    flows, ahead = both(method_values, events, host_memory)
    assert flows[0] is None and all(isinstance(f, np.ndarray) for f in flows[1:])
    # every frame from the third on ran from work enqueued ahead (the second may not: a pinned
    # array's first map, LK's first taps, are waits made while enqueuing it: they release it)
    assert ahead.ran_ahead >= 5


def test_what_comes_between_frames_leaves_the_flows_as_they_were():
    small, large = raws(37, 45, 3), raws(41, 52, 2, seed=5)
    bad = dataclasses.replace(small[0], data=bytes(10))
    sixteen = RawImage('mono16', 37, 45, 90, False, np.full((37, 45), 700, '<u2').tobytes())
    events = [('frame', (small[0], 1)), ('frame', (small[1], 2)), ('frame', (small[2], 3)),
              ('configure', {'dis_iterations': 3}), ('frame', (small[0], 4)),
              ('frame', (small[1], 5)), ('finish', None), ('frame', (small[2], 6)),
              ('frame', (bad, 7)), ('frame', (small[0], 8)), ('warm', large[0]),
              ('frame', (small[1], 9)), ('frame', (small[2], 3)),  # back in time: restarts
              ('frame', (small[0], 10)), ('frame', (large[0], 11)),  # another size
              ('frame', (large[1], 12)), ('frame', (sixteen, 13)), ('frame', (sixteen, 14)),
              ('frame', (large[0], 15)), ('frame', (large[1], 16)), ('reset', None),
              ('frame', (large[0], 17)), ('frame', (large[1], 18)), ('frame', (large[0], 19))]
    flows, ahead = both({'method': 'dis', **DIS_PRESETS['fast']}, events, host_memory=False)
    assert [f if f is ImageFormatError else f is None for f in flows] == [
        True, False, False, False, False, False, ImageFormatError, False, False, True, False,
        True, False, True, False, True, False, True, False, False]
    assert 0 < ahead.ran_ahead < len(flows)


def test_a_dropped_stream_with_work_enqueued_ahead_ends():
    """A freed read's event waits for the read (pyopencl): the gate is released first."""
    def drop() -> bool:
        frames = FlowFrames(runtime(False), FLOW_SCHEMA.defaults(), StageTimes(), ahead=True)
        play(frames, [('frame', (raw, k + 1)) for k, raw in enumerate(raws(29, 31, 2))])
        held = frames.runtime.gate.held
        del frames
        gc.collect()
        return held
    assert ends(drop)


def test_release_with_releases_its_own_hold_only():
    check_holds(ClRuntime('auto'))


def check_holds(made: ClRuntime) -> None:
    """Check that a hold opens at its own release_with, a later hold, another command, a wait."""
    gate: QueueGate = made.gate
    first = gate.hold()
    second = gate.hold()  # the first hold's commands run now
    written: list[int] = []
    assert not gate.release_with(first, lambda: written.append(1))
    assert gate.release_with(second, lambda: written.append(2))
    assert written == [2] and not gate.held
    gate.hold()
    with gate.ahead():
        made.marker()  # behind the hold
    assert gate.held
    made.marker()  # any other command releases it
    assert not gate.held
    gate.hold()
    ends(made.finish)  # as does a wait
    assert not gate.held


@pytest.mark.parametrize('is_gpu', [False, True])
def test_frames_are_enqueued_ahead_by_default_only_where_held_commands_wait_idle(is_gpu):
    """A GPU without semaphores holds on user events, after which NVIDIA's driver spins a core."""
    made = ClRuntime('auto')
    if offers_semaphores(made.device):
        pytest.skip('the device offers semaphores: test_a_semaphore_gate_holds_and_releases')
    made.gate = gate_for(made.context, made.queue, is_gpu)
    frames = FlowFrames(made, FLOW_SCHEMA.defaults(), StageTimes())
    ends(lambda: play(frames, [('frame', (raw, k + 1)) for k, raw in enumerate(raws(29, 31, 3))]))
    assert frames.ahead == (not is_gpu) and frames.runtime.gate.held == (not is_gpu)
    assert frames.ran_ahead == (0 if is_gpu else 2)
    made.finish()


def test_semaphore_functions_are_looked_up_through_the_loader_pyopencl_uses():
    """The ICD functions of PoCL 3 resolve; its semaphore functions do not (it has none)."""
    device = ClRuntime('auto').device
    assert extension_function(device.platform, 'clIcdGetPlatformIDsKHR')
    if not offers_semaphores(device):
        with pytest.raises(SemaphoresUnavailable, match=EXTENSION):
            BinarySemaphore(cl.Context([device]))


def test_a_semaphore_gate_holds_and_releases():
    """Where the device offers cl_khr_semaphore (NVIDIA's OpenCL), a GPU's gate waits on one."""
    made = ClRuntime('auto')
    if not offers_semaphores(made.device):
        pytest.skip(f'{made.device.name} offers no {EXTENSION} (PoCL 3)')
    made.gate = gate_for(made.context, made.queue, True)
    assert made.gate.idle
    check_holds(made)
    frames = FlowFrames(made, FLOW_SCHEMA.defaults(), StageTimes())
    ends(lambda: play(frames, [('frame', (raw, k + 1)) for k, raw in enumerate(raws(29, 31, 3))]))
    assert frames.ahead and frames.runtime.gate.held and frames.ran_ahead == 2
    made.finish()
