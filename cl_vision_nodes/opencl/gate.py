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
``hold`` puts a barrier on a user event into the in-order queue, or on GPUs that offer
``cl_khr_semaphore`` a wait on a semaphore that a second queue signals (NVIDIA's driver spins a
host thread for about 100 ms after a user event completes), so everything enqueued after it
waits; ``release_with`` writes the awaited data and releases them in one step. ``gate_for``
chooses, and says in ``idle`` whether held commands wait without host work. A wait on
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

from cl_vision_nodes.errors import DeviceError
from cl_vision_nodes.opencl.semaphores import BinarySemaphore
import pyopencl as cl

_RELEASE_AT_EXIT: weakref.WeakSet[QueueGate] = weakref.WeakSet()


def gate_for(context: cl.Context, queue: cl.CommandQueue, is_gpu: bool) -> QueueGate:
    """
    Return the gate of ``queue``: on a semaphore where a GPU offers one, else on user events.

    A user event's hold is idle on CPU devices (PoCL); on a GPU without semaphores it is not
    known to be, so nothing there holds by default (``idle`` False). A semaphore gate is held
    and released once here: if the driver refuses a call, the queue takes user events.
    """
    if is_gpu:
        try:
            gate = QueueGate(context, queue, semaphore=BinarySemaphore(context))
            gate.hold()
            gate.release()
            queue.finish()
            return gate
        except (DeviceError, OSError):
            return QueueGate(context, queue, idle=False)
    return QueueGate(context, queue)


class QueueGate:
    """A hold (a user event's barrier or a semaphore's wait) in an in-order queue; thread-safe."""

    def __init__(self, context: cl.Context, queue: cl.CommandQueue, *,
                 semaphore: BinarySemaphore | None = None, idle: bool = True):
        self.context = context
        self.queue = queue
        self.idle = idle or semaphore is not None
        """Whether held commands wait without host work: frames are enqueued ahead by default."""
        self._semaphore = semaphore  # signalled from a queue of its own
        self._signals = cl.CommandQueue(context, queue.device) if semaphore else None
        self._lock = threading.Lock()
        self._event: object | None = None  # the hold's token: its user event, or a new object
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
        if self._semaphore is None:
            token: object = cl.UserEvent(self.context)
            cl.enqueue_barrier(self.queue, wait_for=[token])
        else:
            token = object()
            self._semaphore.enqueue_wait(self.queue)
        with self._lock:
            earlier, self._event = self._event, token
        if earlier is not None:  # held twice: the first hold's commands run now
            self._open(earlier)
        return token

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
            token, self._event = self._event, None
        if token is not None:
            self._open(token)

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
        self._open(token)
        return True

    def _open(self, token: object) -> None:
        """Let the commands behind the hold ``token`` run (each hold is opened once)."""
        if self._semaphore is not None:
            self._semaphore.enqueue_signal(self._signals)
        else:
            token.set_status(cl.command_execution_status.COMPLETE)  # type: ignore[attr-defined]


@atexit.register
def _release_all() -> None:
    for gate in list(_RELEASE_AT_EXIT):
        gate.release()
