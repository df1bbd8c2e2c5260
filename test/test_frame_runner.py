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

"""The frame thread: newest first, skipped frames reported, a bug handed back, a clean close."""
import threading

from cl_vision_nodes.ros.frame_runner import FrameRunner


def blocked_runner() -> tuple[FrameRunner, threading.Event, threading.Event, list]:
    """Return a runner whose first frame holds the thread until ``release`` is set."""
    started, release, done = threading.Event(), threading.Event(), []
    runner = FrameRunner('test frames', done.append)

    def first() -> None:
        started.set()
        release.wait(10)
        done.append('first')
    runner.submit(first)
    assert started.wait(10)
    return runner, release, started, done


def test_frames_waiting_behind_a_busy_one_give_way_to_the_newest():
    runner, release, _, done = blocked_runner()
    replaced = [runner.submit(lambda n=n: done.append(n)) for n in range(5)]
    assert replaced == [False, True, True, True, True]
    release.set()
    assert runner.idle(10)
    assert done == ['first', 4]
    assert not runner.submit(lambda: done.append('next')) and runner.idle(10)
    assert done[-1] == 'next'
    assert runner.close(5)


def test_parameter_changes_wait_for_the_frame_in_progress():
    runner, release, _, done = blocked_runner()
    acquired = runner.work_lock.acquire(timeout=0.2)
    assert not acquired  # the frame holds it
    release.set()
    with runner.work_lock:
        done.append('change')
    assert done == ['first', 'change']
    assert runner.close(5)


def test_close_lets_the_frame_in_progress_end_and_drops_a_waiting_one():
    runner, release, _, done = blocked_runner()
    runner.submit(lambda: done.append('waiting'))
    threading.Timer(0.2, release.set).start()
    assert runner.close(10)
    assert done == ['first']
    assert not runner.submit(lambda: done.append('late'))
    assert done == ['first']


def test_an_exception_from_a_frame_is_handed_over_and_the_thread_ends():
    failures: list[BaseException] = []
    runner = FrameRunner('test frames', failures.append)
    runner.submit(lambda: 1 / 0)
    assert runner.idle(10) and runner.close(10)
    assert len(failures) == 1 and isinstance(failures[0], ZeroDivisionError)


def test_frames_reaching_an_idle_runner_back_to_back_all_run():
    """The first is taken at once, the second waits behind it: neither is skipped."""
    done: list = []
    runner = FrameRunner('test frames', done.append)
    release = threading.Event()
    assert not runner.submit(lambda: (release.wait(10), done.append('first')))
    assert not runner.submit(lambda: done.append('second'))
    release.set()
    assert runner.idle(10) and runner.close(5)
    assert done == ['first', 'second']
