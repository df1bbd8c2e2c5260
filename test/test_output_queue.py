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

"""The publishing thread of a node: order, drain, errors, close."""
import threading
import time

from cl_vision_nodes.ros.output_queue import OutputQueue


def test_jobs_run_in_order_off_the_callers_thread_and_drain_waits_for_them():
    ran, threads = [], set()
    queue = OutputQueue('test', on_error=lambda exc: None)
    release = threading.Event()
    queue.submit(lambda: release.wait(5.0))
    for k in range(50):
        queue.submit(lambda k=k: (ran.append(k), threads.add(threading.get_ident())))
    assert not queue.drain(0.05)  # the first job still holds the thread
    release.set()
    assert queue.drain(5.0)
    assert ran == list(range(50)) and threads and threading.get_ident() not in threads
    assert queue.close(5.0)


def test_a_failing_job_is_reported_and_the_next_runs():
    errors, ran = [], []
    queue = OutputQueue('test', on_error=errors.append)
    queue.submit(lambda: 1 / 0)
    queue.submit(lambda: ran.append('next'))
    assert queue.drain(5.0)
    assert [type(e) for e in errors] == [ZeroDivisionError] and ran == ['next']
    assert queue.close(5.0)


def test_close_runs_what_is_queued_then_refuses_more():
    ran = []
    queue = OutputQueue('test', on_error=lambda exc: None)
    queue.submit(lambda: (time.sleep(0.05), ran.append(1)))
    queue.submit(lambda: ran.append(2))
    assert queue.close(5.0)
    assert ran == [1, 2]
    queue.submit(lambda: ran.append(3))
    assert queue.drain(1.0) and ran == [1, 2]


def test_close_gives_up_on_a_job_that_does_not_return():
    queue = OutputQueue('test', on_error=lambda exc: None)
    release, returned = threading.Event(), threading.Event()
    queue.submit(lambda: (release.wait(60.0), returned.set()))  # a publish stuck in DDS
    assert not queue.close(0.2)
    assert not returned.is_set()  # close gave up without waiting for it
    release.set()
