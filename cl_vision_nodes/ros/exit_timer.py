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
An exit that needs no Python thread: a timer of the C library that calls ``_exit(code)``.

Why: a C call can hold the interpreter lock and not return, and then no Python thread runs, the
stop watchdog included. One does in practice: Fast DDS 2.14 (Jazzy's, as its PyPI wheels are
built) deletes a participant in a loop that spins while a discovery callback is in flight and
starves that callback of the lock it needs to end (eProsima/Fast-DDS#6513), for seconds to tens
of seconds; rclpy's ``destroy_node`` makes that call holding the lock, and it happens whenever
other nodes stop at the same moment, as under ``ros2 launch``.

How: ``timer_create`` with ``SIGEV_THREAD`` starts a thread of the C library at expiry and calls
the given function with the timer's value as its only argument: ``_exit`` and the code. The C
library's helper thread for such timers blocks the stop signals: it takes none from
``StopSignals``.
"""
from __future__ import annotations

import ctypes

CLOCK_MONOTONIC = 1
SIGEV_THREAD = 2


class ExitTimerError(OSError):
    """The C library has no POSIX timers (not glibc on Linux), or made none (a resource limit)."""


_POINTER = ctypes.sizeof(ctypes.c_void_p)


class _Sigevent(ctypes.Structure):
    """``struct sigevent`` of Linux for SIGEV_THREAD: 64 bytes, with 32- or 64-bit pointers."""

    _fields_ = [('value', ctypes.c_void_p), ('signo', ctypes.c_int), ('notify', ctypes.c_int),
                ('function', ctypes.c_void_p), ('attributes', ctypes.c_void_p),
                ('pad', ctypes.c_int * ((64 - 3 * _POINTER - 8) // 4))]


class _Timespec(ctypes.Structure):
    _fields_ = [('seconds', ctypes.c_long), ('nanoseconds', ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [('interval', _Timespec), ('value', _Timespec)]


class ExitTimer:
    """One C library timer that ends the process with ``code`` when it expires, unless closed."""

    def __init__(self, code: int) -> None:
        """Create the timer, unarmed; raise ExitTimerError where the C library has none."""
        libc = ctypes.CDLL(None, use_errno=True)
        try:  # glibc before 2.34 keeps them in librt
            timers = libc if hasattr(libc, 'timer_create') \
                else ctypes.CDLL('librt.so.1', use_errno=True)
            create, self._settime, self._delete = (timers.timer_create, timers.timer_settime,
                                                   timers.timer_delete)
        except (OSError, AttributeError) as exc:
            raise ExitTimerError(f'no POSIX timers: {exc}') from exc
        create.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self._settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self._delete.argtypes = [ctypes.c_void_p]
        self._event = _Sigevent(value=code, notify=SIGEV_THREAD,
                                function=ctypes.cast(libc._exit, ctypes.c_void_p).value)
        self._timer = ctypes.c_void_p()
        if create(CLOCK_MONOTONIC, ctypes.byref(self._event), ctypes.byref(self._timer)):
            raise ExitTimerError(ctypes.get_errno(), 'timer_create failed')
        self._open = True

    def start(self, seconds: float) -> None:
        """End the process ``seconds`` from now."""
        whole = int(seconds)
        self._set(_Timespec(whole, int((seconds - whole) * 1e9)))

    def close(self) -> None:
        """Disarm and delete the timer (armed or not); it cannot be started again."""
        if self._open:
            self._open = False
            self._delete(self._timer)

    def _set(self, when: _Timespec) -> None:
        spec = _Itimerspec(value=when)
        if self._settime(self._timer, 0, ctypes.byref(spec), None):
            raise ExitTimerError(ctypes.get_errno(), 'timer_settime failed')
