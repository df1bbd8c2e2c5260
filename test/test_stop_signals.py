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
StopSignals in a process of its own: one stop request for any number of signals, bounded clean-up.

The nodes' matrix over DDS is test_shutdown.py; here the main thread does something stated
(a wait on a callback, a call that never returns) so each path is taken for certain.
"""
import signal
import subprocess
import sys
import time

from cl_vision_nodes.ros.stop_signals import HARD_MARGIN_S
from cliutil import REPO
import pytest

# The main thread waits for the stop request through a callback, then cleans up for CLEANUP s;
# numpy is imported first so that threads exist that started before the signals were taken.
PROCESS = """
import sys, threading, time
import numpy
from cl_vision_nodes.ros.stop_signals import StopSignals
stop = StopSignals(lambda line: print('WARN', line, flush=True), deadline_s=1.0,
                   hard_exit_code=lambda signum: 128 + signum if 'code' in sys.argv else 0)
stop.install()
woken = []
event = threading.Event()
print('ready', flush=True)
with stop.calling(lambda: (woken.append(1), event.set())):
    event.wait()
stop.phase = 'the test clean-up'
if 'holding the GIL' in sys.argv:  # as a C call that never returns and never lets go
    import ctypes
    ctypes.PyDLL(None).sleep(int(sys.argv[1]))
time.sleep(float(sys.argv[1]))
stop.finished()
print('woken', len(woken), flush=True)
time.sleep(0.5)  # signals after the clean-up: ignored
"""


def run(cleanup_s: float, signals: list[signal.Signals], spacing_s: float,
        *how: str) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, '-c', PROCESS, str(cleanup_s), *how], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout.readline() == 'ready\n'
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(spacing_s)
    output, _ = proc.communicate(timeout=30)
    return proc.returncode, output


def test_many_signals_make_one_stop_request_and_later_ones_are_ignored():
    code, output = run(0.2, [signal.SIGINT, signal.SIGINT, signal.SIGTERM, signal.SIGINT], 0.15)
    assert code == 0 and output == 'woken 1\n', output


def test_a_clean_up_that_does_not_end_is_abandoned_with_a_line_and_exit_0():
    code, output = run(60.0, [signal.SIGTERM, signal.SIGINT], 0.1)  # communicate() waits 30 s
    assert code == 0, output
    assert output == 'WARN stopping on SIGTERM: the test clean-up did not end within 1 s; ' \
        'exiting without waiting for it\n', output


@pytest.mark.parametrize('signum, how, expected', [
    (signal.SIGINT, (), 0), (signal.SIGTERM, (), 0), (signal.SIGTERM, ('code',), 143)])
def test_a_clean_up_stuck_holding_the_interpreter_lock_ends_with_every_stack_and_its_code(
        signum, how, expected):
    """
    The watchdog cannot run; HARD_MARGIN_S after, every stack is printed and the process ends.

    faulthandler, which needs no lock, prints them; a timer of the C library exits with the code
    given for the signal (0 for a node, the signal's for a command).
    """
    code, output = run(60, [signum], 0.0, 'holding the GIL', *how)
    assert code == expected, output  # not the 60 s of the stuck call: communicate() waits 30 s
    hard_s = round(1.0 + HARD_MARGIN_S)  # the process's deadline_s, then the margin
    assert f'Timeout (0:00:{hard_s:02d})!' in output and 'most recent call first' in output, \
        output


EXIT_TIMER = """
import ctypes, sys, time
from cl_vision_nodes.ros.exit_timer import ExitTimer
timer = ExitTimer(7)
timer.start(0.2)
if sys.argv[1] == 'close':
    timer.close()
    time.sleep(0.6)
    sys.exit(3)
ctypes.PyDLL(None).sleep(30)  # holds the interpreter lock
"""


@pytest.mark.parametrize('how, expected', [('close', 3), ('hold', 7)])
def test_the_exit_timer_ends_a_process_holding_the_interpreter_lock_unless_closed(
        how, expected):
    result = subprocess.run([sys.executable, '-c', EXIT_TIMER, how], cwd=REPO,
                            capture_output=True, text=True, timeout=20)
    assert result.returncode == expected, result.stderr


# Reads the C-level SIGINT/SIGTERM actions after an OpenCL device was opened: whose handler
# (the shared object it lives in) and whether SA_RESETHAND is set.
SIGACTION_AFTER_OPENING = """
import ctypes, signal
from cl_vision_nodes.ros.stop_signals import StopSignals
StopSignals(print).install()
from cl_vision_nodes.opencl.runtime import ClRuntime
ClRuntime('auto')

class Sigaction(ctypes.Structure):
    _fields_ = [('handler', ctypes.c_void_p), ('mask', ctypes.c_ulong * 16),
                ('flags', ctypes.c_int), ('restorer', ctypes.c_void_p)]

class DlInfo(ctypes.Structure):
    _fields_ = [('fname', ctypes.c_char_p), ('fbase', ctypes.c_void_p),
                ('sname', ctypes.c_char_p), ('saddr', ctypes.c_void_p)]

libc = ctypes.CDLL(None)
for signum in (signal.SIGINT, signal.SIGTERM):
    action, info = Sigaction(), DlInfo()
    libc.sigaction(signum, None, ctypes.byref(action))
    libc.dladdr(ctypes.c_void_p(action.handler), ctypes.byref(info))
    print(signum.name, info.fname.decode(), bool(action.flags & 0x80000000))
"""


def test_opening_a_device_leaves_the_stop_signal_handlers_in_place():
    """The handlers PoCL's LLVM installs (SA_RESETHAND: a second Ctrl-C would kill) are undone."""
    result = subprocess.run([sys.executable, '-c', SIGACTION_AFTER_OPENING], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for line in result.stdout.splitlines():
        name, library, resethand = line.split()
        assert 'pocl' not in library and 'python' in library and resethand == 'False', line
