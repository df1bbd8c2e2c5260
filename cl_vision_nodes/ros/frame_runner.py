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
A node's frames on a thread of their own, newest first.

The executor thread only takes messages (and assembles stereo sets); a frame's upload, device
work and download run here. So the executor keeps emptying the DDS readers while the device
works: under load the node answers the newest frame instead of working through frames queued
in a subscription's history, each older than the last (with stereo's depth 5 at 150 Hz that
was 29 ms of waiting per frame), and the next frame's messages are read meanwhile. A frame
waiting behind a running one when a newer one arrives is skipped and counted
(``FrameStats.frame_skipped``); frames that reach an idle node back to back all run.

Parameter changes and diagnostics run on the executor thread: they take ``work_lock``, which a
frame holds while it runs, so they land between frames.
"""
from __future__ import annotations

import threading
from typing import Callable

Work = Callable[[], None]


class FrameRunner:
    """
    One worker thread running a node's frames; a newer frame replaces one waiting behind another.

    A frame that finds the thread idle is taken at once (never replaced: frames sent back to
    back to an idle node all run); one that arrives while a frame runs waits, and gives way to
    a newer one.
    """

    def __init__(self, name: str, on_failure: Callable[[BaseException], None]):
        """Start the thread; ``on_failure`` gets an exception a frame raised (not handled)."""
        self.work_lock = threading.RLock()
        self._on_failure = on_failure
        self._changed = threading.Condition()
        self._next: Work | None = None  # taken: runs next
        self._waiting: Work | None = None  # behind a running frame; a newer one replaces it
        self._busy = False
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Work) -> bool:
        """Queue ``work`` as the next frame; return whether it replaced one waiting."""
        with self._changed:
            if self._closed:
                return False
            self._changed.notify_all()
            if not self._busy:
                self._busy = True
                self._next = work
                return False
            replaced = self._waiting is not None
            self._waiting = work
        return replaced

    def idle(self, timeout: float) -> bool:
        """Wait until no frame runs or waits (``timeout`` seconds at most); return whether so."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._busy, timeout)

    def close(self, timeout: float) -> bool:
        """
        Let the frame in progress end, drop those not started; return whether the thread ended.

        No frame starts after this.
        """
        with self._changed:
            self._closed = True
            self._next = self._waiting = None
            self._changed.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _serve(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._next is not None or self._closed)
                if self._closed:
                    return
                work, self._next = self._next, None
            try:
                with self.work_lock:
                    work()
            except BaseException as exc:  # noqa: B902 (a bug: spin_node raises it)
                with self._changed:
                    self._closed = True
                    self._busy = False
                    self._changed.notify_all()
                self._on_failure(exc)
                return
            with self._changed:
                self._next, self._waiting = self._waiting, None
                self._busy = self._next is not None
                self._changed.notify_all()
