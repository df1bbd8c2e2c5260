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
A node's publishing thread: frame N is serialized and published while frame N+1 computes.

Serializing and writing an output into DDS is host work (a copy of each message into bytes, the
DDS write); uploading and computing the next frame is mostly device work, during which the
node's frame thread waits for the device with the GIL released. The frame thread hands a
frame's publishes to this thread in order and goes on with the frame's next work; before its
next download into a staging array it waits until the previous frame's publishes are done
(``drain``), so a payload is never overwritten while it is serialized. One frame in flight: at
low rates a frame finds the thread idle and the path is as long as before (plus a handoff), at
high rates the next frame's upload and compute overlap the previous publish.
"""
from __future__ import annotations

from collections import deque
import threading
from typing import Callable

Job = Callable[[], None]


class OutputQueue:
    """Runs jobs in order on one thread; ``drain`` waits until every submitted job has run."""

    def __init__(self, name: str, on_error: Callable[[BaseException], None]):
        """Start the thread; ``on_error`` gets an exception a job raised (the job is dropped)."""
        self._jobs: deque[Job] = deque()
        self._cond = threading.Condition()
        self._pending = 0
        self._closed = False
        self._on_error = on_error
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        with self._cond:
            if self._closed:
                return
            self._jobs.append(job)
            self._pending += 1
            self._cond.notify_all()

    def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until every job submitted so far has run; False if ``timeout_s`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout_s)

    def close(self, timeout_s: float) -> bool:
        """Run what is queued, then stop the thread; False if it ran past ``timeout_s``."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._closed)
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            try:
                job()
            except BaseException as exc:  # noqa: B902 (reported, the thread keeps serving)
                self._on_error(exc)
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()
