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
Ctrl-C and SIGTERM for a process that must stop cleanly: the first signal stops, later ones wait.

Why: under ``ros2 launch`` one Ctrl-C reaches a node twice, from the terminal to the whole
process group and again from launch ("sending signal 'SIGINT' to process"), a few to a few
hundred milliseconds apart, and launch sends SIGTERM when the node has not ended 5 s later.
Python's KeyboardInterrupt from the second signal cut the first one's clean-up short (a
traceback, exit -2), and rclpy's own handler shut the context down under a callback that was
still publishing.

How: the signals are caught by Python's C-level handler, which writes each one's number to a
pipe (``signal.set_wakeup_fd``) in whichever thread the kernel chose; one thread reads the pipe
and nothing else, so no signal raises in the process's own code and none waits for the main
thread to come back from a C call. The main thread, and every thread started after it (DDS,
the OpenCL runtime, the publishing thread), block both signals, so their system calls are not
interrupted either. The first signal runs the stop callbacks (a node's executor returns once
the frame in progress is published); later ones are absorbed, and once the clean-up is done
they are ignored (Python's finalization would otherwise restore the default action, which
kills). A watchdog bounds the clean-up: when the process has not called ``finished``
``deadline_s`` after the first signal (a device call or a thread join that does not return),
it logs what it was doing and exits 0 without waiting for it. Should even the watchdog be unable
to run (a C call that holds Python's interpreter lock and does not return, as Fast DDS's
participant deletion under rclpy's ``destroy_node``, ``exit_timer``), ``HARD_MARGIN_S`` later
``faulthandler``, which needs no such lock, prints every thread's stack, and a timer of the C
library ends the process with exit code 0 (a command's: that of the signal).
"""
from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from typing import Callable, Iterator

from cl_vision_nodes.ros.exit_timer import ExitTimer

STOP_DEADLINE_S = 4.0
"""Seconds from the first signal to a forced exit: within ros2 launch's 5 s before SIGTERM."""
HARD_MARGIN_S = 2.0
"""Seconds after the deadline before a process whose watchdog cannot run prints every stack and
ends: the watchdog's line comes first when the interpreter lock is let go within them (a kernel
that PoCL compiles inside an enqueue holds it up to a second or so on a loaded CPU); 4 + 2 s
leaves launch's SIGKILL at 10 s well ahead."""
DUMP_TO_EXIT_S = 0.25
"""Seconds from faulthandler's dump to the C library's exit: the dump is written first."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """The process's SIGINT and SIGTERM: a stop request, the clean-up's phase and its deadline."""

    def __init__(self, warn: Callable[[str], None], deadline_s: float = STOP_DEADLINE_S,
                 hard_exit_code: Callable[[int], int] = lambda _signum: 0):
        """
        ``warn`` logs the line said when the deadline passes (and may exit with a code of its own).

        ``hard_exit_code``: the exit code, given the first signal, of a process whose watchdog
        cannot run.
        """
        self.phase = 'starting'
        """What the process is doing, in words that complete 'stopping while ...'."""
        self._warn = warn
        self._deadline_s = deadline_s
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self._signal_name = ''
        self._requested = threading.Event()
        self._finished = threading.Event()
        self._exit_timers = {signum: ExitTimer(hard_exit_code(signum)) for signum in STOP_SIGNALS}

    def install(self) -> None:
        """Take SIGINT and SIGTERM over for this process; call it in the main thread, first."""
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)  # what set_wakeup_fd requires of it
        for signum in STOP_SIGNALS:
            signal.signal(signum, _ignore_in_main_thread)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        threading.Thread(target=self._read_signals, args=(read_end,), name='stop signals',
                         daemon=True).start()  # started before the mask: it takes signals
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    @property
    def requested(self) -> bool:
        return self._requested.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for a stop request; return whether one came within ``timeout_s``."""
        return self._requested.wait(timeout_s)

    @contextlib.contextmanager
    def calling(self, callback: Callable[[], None]) -> Iterator[None]:
        """
        Run ``callback`` on the stop request while the ``with`` block runs (at once if made).

        It runs on the signal thread and must only wake someone up (a guard condition, an
        event). It is removed when the block ends, so it never outlives what it wakes.
        """
        with self._lock:
            if self.requested:
                callback()
            self._callbacks.append(callback)
        try:
            yield
        finally:
            with self._lock:
                self._callbacks.remove(callback)

    def finished(self) -> None:
        """Say that the clean-up is done (main thread): later signals are ignored (see above)."""
        with self._lock:  # not between _received's look at it and its arming
            self._finished.set()
            faulthandler.cancel_dump_traceback_later()
            for timer in self._exit_timers.values():
                timer.close()
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)

    def _read_signals(self, read_end: int) -> None:
        while True:
            for signum in os.read(read_end, 64):
                if signum in STOP_SIGNALS:
                    self._received(signum)

    def _received(self, signum: int) -> None:
        with self._lock:
            if self.requested or self._finished.is_set():
                return  # a second Ctrl-C, launch's forwarded SIGINT, its SIGTERM: absorbed
            self._signal_name = signal.Signals(signum).name
            self._requested.set()
            for callback in self._callbacks:
                callback()
            faulthandler.dump_traceback_later(self._deadline_s + HARD_MARGIN_S)
            self._exit_timers[signum].start(self._deadline_s + HARD_MARGIN_S + DUMP_TO_EXIT_S)
        threading.Thread(target=self._watch_deadline, name='stop deadline', daemon=True).start()

    def _watch_deadline(self) -> None:
        if self._finished.wait(self._deadline_s):
            return
        self._warn(f'stopping on {self._signal_name}: {self.phase} did not end within '
                   f'{self._deadline_s:g} s; exiting without waiting for it')
        exit_at_once(0)


def exit_at_once(code: int) -> None:
    """End the process with ``code`` now, output flushed, without Python's finalization."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken stream: exit regardless
            stream.flush()
    os._exit(code)


def _ignore_in_main_thread(_signum: int, _frame: object) -> None:
    """Python-level handler: nothing to do, the signal thread has the number from the pipe."""
