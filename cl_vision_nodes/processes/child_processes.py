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
The processes a tool starts (node processes, bench's publisher and subscriber): none outlives it.

`cl-vision bench node`, `eval` and `demo` start ROS node processes, each in a session of its own
so that a terminal's Ctrl-C reaches only the tool, which stops them in order once it kept what
they answered. Whatever kept the tool from its clean-up left them running: SIGTERM (``timeout``,
a cancelled CI job, ``kill``) kills a Python process on the spot, and a ``bench node`` killed by
``timeout`` left a flow_node at 80 % CPU for 14 minutes.

Three layers, one module used by all of those tools:

- ``start`` starts every such process in its own session and keeps its handle; ``guarded``
  stops those still running when the tool ends, normally, on an error or on a signal: SIGINT,
  then SIGKILL ``STOP_GRACE_S`` later (nodes stop cleanly on SIGINT within 4 s).
- ``guarded`` runs the tool under ``ros.stop_signals.StopSignals``, so SIGTERM is a stop request
  like Ctrl-C instead of death: the first SIGINT or SIGTERM raises ``Interrupted`` (a
  KeyboardInterrupt, so code that keeps partial results on Ctrl-C, such as eval's partial
  report, keeps them on SIGTERM too) in the main thread at its next Python instruction, and later
  ones are absorbed, so the clean-up runs to its end. Threads started afterwards (DDS, OpenCL)
  block both signals, so their system calls are not cut short. An interrupted tool says so in one
  line on stderr and exits 128 + the signal's number (130 Ctrl-C, 143 SIGTERM), the code a shell
  shows for a command the signal ended: an interrupted run is not a success. StopSignals'
  watchdog bounds the clean-up: when the main thread is still busy ``DEADLINE_S`` after the
  signal (a kernel build in a C call does not see the exception), the watchdog thread stops the
  processes itself and exits with that code.
- A tool killed by SIGKILL (or the OOM killer) runs nothing, so each process is also started with
  Linux's ``PR_SET_PDEATHSIG`` = SIGTERM: the kernel sends it when the tool dies, and nodes stop
  cleanly on SIGTERM. It is set by a few lines of Python that run in the new process and then
  exec the command (``START_GUARD``; the pid stays the same), not by ``preexec_fn``, which
  Python documents as unsafe in a process with threads, and the tools run DDS and reader threads
  while they start processes. The kernel sends the signal when the *thread* that started the
  process ends, so it is set only for processes started from the main thread.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from cl_vision_nodes.ros.stop_signals import StopSignals

STOP_GRACE_S = 5.0
"""From SIGINT to SIGKILL for a process still running when an interrupted tool ends."""
DEADLINE_S = 3 * STOP_GRACE_S
"""From the first signal to the watchdog's forced stop (processes stop one after another)."""
START_GUARD = (
    'import os, signal, sys\n'
    'signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))\n'
    'if sys.argv[1] != "0":\n'
    '    import ctypes\n'
    '    ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG\n'
    '    if os.getppid() != int(sys.argv[1]):\n'
    '        sys.exit(1)  # the tool died before the line above took effect\n'
    'os.execvp(sys.argv[2], sys.argv[2:])\n')
"""
Run as ``python -c`` with the tool's pid (0: no parent-death signal) and the command, in the new
process before the command: SIGINT and SIGTERM unblocked (StopSignals blocks them in the tool, and
a blocked signal stays blocked across exec: a node would never see its stop signal), the
parent-death signal, then exec.
"""


class Interrupted(KeyboardInterrupt):
    """The tool was asked to stop by SIGINT or SIGTERM before it finished."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    """The process's started processes and how far a stop request got (module-wide)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[subprocess.Popen] = []
        self.depth = 0  # nested guarded(): demo runs eval's
        self.interrupted: Interrupted | None = None
        self.raised = False
        self.deferring = 0  # inside start(): the handle is not registered yet
        self.closing = False  # the outermost clean-up runs: nothing may cut it short
        self.stop_signals: Any = None


_state = _State()


def interruption() -> Interrupted | None:
    """Return the stop request that interrupted this tool, if one did."""
    return _state.interrupted


def grace_s(normal_s: float) -> float:
    """Return how long to wait for a process to stop: ``normal_s``, less once interrupted."""
    return min(normal_s, STOP_GRACE_S) if _state.interrupted else normal_s


def _on_signal(signum: int, _frame: object) -> None:
    """Python-level handler (main thread): the first SIGINT/SIGTERM raises, later ones do not."""
    if _state.interrupted is None:
        _state.interrupted = Interrupted(signum)
    if _state.raised or _state.deferring or _state.closing:
        return
    _state.raised = True
    raise _state.interrupted


def _raise_deferred() -> None:
    if _state.interrupted is not None and not (_state.raised or _state.deferring
                                               or _state.closing):
        _state.raised = True
        raise _state.interrupted


def start(command: Sequence[str], **options: Any) -> subprocess.Popen:
    """
    Start ``command`` in a session of its own, kept for the clean-up; ``options`` go to Popen.

    On Linux, from the main thread, it gets SIGTERM when this process dies (START_GUARD).
    """
    death_signal = sys.platform.startswith('linux') and \
        threading.current_thread() is threading.main_thread()
    command = [sys.executable, '-I', '-S', '-c', START_GUARD,
               str(os.getpid() if death_signal else 0), *command]
    _state.deferring += 1  # a stop request between Popen and the list would lose the handle
    try:
        process = subprocess.Popen(command, start_new_session=True, **options)
        with _state.lock:
            _state.started.append(process)
    finally:
        _state.deferring -= 1
    _raise_deferred()
    return process


def stop(processes: Sequence[subprocess.Popen], timeout_s: float = STOP_GRACE_S,
         signum: int = signal.SIGINT) -> list[int]:
    """
    Send ``signum`` to those still running, all at once; SIGKILL those left ``timeout_s`` later.

    Returns the exit codes, in order.
    """
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signum)
    deadline = time.monotonic() + timeout_s
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(max(deadline - time.monotonic(), 0.0)))
        except subprocess.TimeoutExpired:
            process.kill()
            codes.append(process.wait())
    return codes


def running() -> list[subprocess.Popen]:
    """Return the processes started through ``start`` that have not ended."""
    with _state.lock:
        return [p for p in _state.started if p.poll() is None]


def stop_all(timeout_s: float = STOP_GRACE_S) -> int:
    """Stop every started process still running (SIGINT, then SIGKILL); return how many."""
    left = running()
    stop(left, timeout_s)
    with _state.lock:
        _state.started = [p for p in _state.started if p.returncode is None]
    return len(left)


def _deadline_passed(line: str) -> None:
    """Stop all and exit: the main thread is stuck (StopSignals' watchdog, its own thread)."""
    interrupted = _state.interrupted or Interrupted(signal.SIGINT)
    print(f'cl-vision: {line} (stopping its {len(running())} started processes first)',
          file=sys.stderr, flush=True)
    stop_all(1.0)
    os._exit(interrupted.exit_code)


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    """Take SIGINT and SIGTERM over while the outermost guarded() runs (main thread only)."""
    if _state.depth or threading.current_thread() is not threading.main_thread():
        _state.depth += 1
        try:
            yield
        finally:
            _state.depth -= 1
        return
    stop_signals = StopSignals(_deadline_passed, DEADLINE_S,
                               lambda signum: Interrupted(signum).exit_code)
    stop_signals.install()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)  # StopSignals' pipe still gets them: the watchdog
    stop_signals.phase = 'the run'
    _state.stop_signals = stop_signals
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        _state.closing = True
        stop_signals.phase = 'stopping the started processes'
        stop_all(grace_s(STOP_GRACE_S))
        stop_signals.finished()


def interrupted_exit(tool: str, detail: str = '') -> int:
    """Say in one line that ``tool`` was interrupted (stderr); return its exit code."""
    interrupted = _state.interrupted or Interrupted(signal.SIGINT)
    print(f'{tool}: interrupted by {interrupted.name} before the end'
          f"{f' ({detail})' if detail else ''}; every process it started is stopped",
          file=sys.stderr, flush=True)
    return interrupted.exit_code


def guarded(tool: str, body: Callable[[], int]) -> int:
    """
    Run ``body`` (a tool's work, returning its exit code) so that nothing it started outlives it.

    SIGINT and SIGTERM stop it in order; an interruption ends with one line on stderr and
    128 + the signal's number. Nested calls (demo runs eval) share the outermost one's signals.
    """
    try:
        with _signals():
            return body()
    except KeyboardInterrupt:
        if _state.depth:
            raise  # the outer guarded() says it, once
        if _state.interrupted is None:  # a KeyboardInterrupt of the tool's own
            _state.interrupted = Interrupted(signal.SIGINT)
        return interrupted_exit(tool)
