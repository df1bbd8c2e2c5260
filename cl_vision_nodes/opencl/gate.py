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
A command queue's gate: commands enqueued ahead of the data they read, held until it is there.

A frame's launches cost the host about 13 us each to enqueue on a GPU (pyopencl and the
driver), which is most of a small frame's wall when they are enqueued after its bytes arrive.
``hold`` puts a barrier on a user event into the in-order queue, so everything enqueued after
it waits; ``release_with`` writes the awaited data and releases them in one step. A wait on
anything behind a held barrier would never return (pyopencl even waits when it frees a copy's
event): so only commands enqueued inside ``ahead()`` go behind it. Every other command, and
every blocking call of ``ClRuntime`` (``finish``, blocking copies, reads waited for, a pinned
array's first map), releases it first (``admit``, ``release``), and the owner that held it
learns from ``release_with`` whether someone did (its commands then ran on what the data was
before). Gates still held when the interpreter exits are released then, so a queue's release
never waits on them.
"""
from __future__ import annotations

import atexit
import contextlib
import threading
from typing import Callable, Iterator
import weakref

import pyopencl as cl

_RELEASE_AT_EXIT: weakref.WeakSet[QueueGate] = weakref.WeakSet()


class QueueGate:
    """A barrier on a user event in one in-order command queue; thread-safe."""

    def __init__(self, context: cl.Context, queue: cl.CommandQueue):
        self.context = context
        self.queue = queue
        self._lock = threading.Lock()
        self._event: cl.UserEvent | None = None
        self._local = threading.local()  # .ahead: this thread enqueues behind the barrier
        _RELEASE_AT_EXIT.add(self)

    @property
    def held(self) -> bool:
        """Whether commands enqueued inside ``ahead()`` now wait for a release."""
        return self._event is not None

    def hold(self) -> object:
        """
        Hold the commands enqueued from now on (in ``ahead()``) until released; return a token.

        The token names this hold: ``release_with`` releases only the hold it names.
        """
        event = cl.UserEvent(self.context)
        cl.enqueue_barrier(self.queue, wait_for=[event])
        with self._lock:
            earlier, self._event = self._event, event
        if earlier is not None:  # held twice: the first hold's commands run now
            earlier.set_status(cl.command_execution_status.COMPLETE)
        return event

    @contextlib.contextmanager
    def ahead(self) -> Iterator[None]:
        """Let this thread's commands go behind the held barrier (``admit`` keeps it)."""
        self._local.ahead = True
        try:
            yield
        finally:
            self._local.ahead = False

    def admit(self) -> cl.CommandQueue:
        """Return the queue for a command enqueued now: released first unless ``ahead()``."""
        if self._event is not None and not getattr(self._local, 'ahead', False):
            self.release()
        return self.queue

    def release(self) -> None:
        """Let the held commands run (nothing if none are); before any wait on the queue."""
        with self._lock:
            event, self._event = self._event, None
        if event is not None:
            event.set_status(cl.command_execution_status.COMPLETE)

    def release_with(self, token: object, write: Callable[[], None]) -> bool:
        """
        Run ``write``, then release the hold named ``token``, if it is still held.

        Returns False, writing nothing, where it was released meanwhile (a wait released it, or
        a later ``hold``): its commands ran, or run, without ``write``.
        """
        with self._lock:
            if self._event is not token or token is None:
                return False
            write()
            self._event = None
        token.set_status(cl.command_execution_status.COMPLETE)  # type: ignore[attr-defined]
        return True


@atexit.register
def _release_all() -> None:
    for gate in list(_RELEASE_AT_EXIT):
        gate.release()
