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
Keep large message buffers mapped: glibc's malloc set up for multi-megabyte DDS messages.

Why: glibc serves a buffer above its mmap threshold (128 KiB, raised by itself up to the largest
size freed so far) with a fresh mmap, and gives the top of the heap back to the system once more
than twice that threshold is free there. A process receiving 2.5-7 MB images holds two buffers
per message (DDS' and the Python bytes), so on every message the freed pair is trimmed and the
next one faults on each of its 4 KiB pages again: 610 faults per 640x480 32FC2 image. Receiving
it took 2.96 ms (p50) with glibc's defaults and 0.83 ms with the settings below (2-core machine,
issue 12). With them freed buffers stay in the heap and the next message reuses the same pages.

Cost: freed large buffers stay in the process instead of going back to the system. In a steady
stream that is the working set of the largest messages it receives (a subscriber's peak RSS was
the same with and without, `cl-vision bench transport`). After a burst the heap top is trimmed
only beyond the trim threshold (512 MiB), and a buffer still in use above freed ones pins them
all: 100 buffers of 7.4 MB freed left 215 MiB resident newest first and 728 MiB with the newest
still held, against 25-32 MiB with glibc's defaults (``malloc_trim(0)`` returns it).

The top pad (M_TOP_PAD) stays glibc's: with the 64 MiB pad first tried here a node's resident
memory crept up by about 2 KB a frame (28 MB over 14,000 small frames in the soak test) while
the page faults saved were the same without it.

Environment variables the user set (``MALLOC_*_`` or the same tunables in ``GLIBC_TUNABLES``)
win: glibc applied them at start-up and they are left alone. The settings applied here are
exported, so child processes (nodes started by ``cl-vision eval``) start with the same. Other C
libraries (musl, macOS, Windows) have no such thresholds: nothing is changed there.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
import os

MIB = 1 << 20


@dataclass(frozen=True)
class MallocSetting:
    """
    One glibc malloc parameter: environment variable, tunable, mallopt number, value.

    ``fallback`` is tried where glibc refuses ``value``.
    """

    variable: str
    tunable: str
    param: int
    value: int
    fallback: int = 0


SETTINGS = (
    # Older glibc refuses an mmap threshold above half its 64 MiB heap size; 32 MiB still holds
    # a 1080p 32FC2 image (16.6 MB).
    MallocSetting('MALLOC_MMAP_THRESHOLD_', 'glibc.malloc.mmap_threshold', -3, 256 * MIB,
                  fallback=32 * MIB),
    MallocSetting('MALLOC_TRIM_THRESHOLD_', 'glibc.malloc.trim_threshold', -1, 512 * MIB),
)
"""What large messages need; mallopt's M_MMAP_THRESHOLD is -3, M_TRIM_THRESHOLD -1."""


@dataclass(frozen=True)
class AllocatorSetup:
    """What ``configure_allocator`` did: values set here, from the environment, or why not."""

    applied: dict[str, int] = field(default_factory=dict)  # variable -> value set with mallopt
    kept: dict[str, str] = field(default_factory=dict)  # variable -> the environment's value
    reason: str = ''  # why nothing was changed (not glibc)
    glibc: str = ''

    def line(self) -> str:
        """Return the start-up text (a node logs it at debug level): what and why, then how."""
        if self.reason:
            return f'memory allocator left as it is: {self.reason}'
        parts = [f'{name}={value // MIB} MiB' for name, value in self.applied.items()]
        parts += [f'{name}={value} from the environment' for name, value in self.kept.items()]
        return ('memory allocator: freed large message buffers are kept for the next message '
                f"(glibc {self.glibc}, {', '.join(parts)})")


_done: AllocatorSetup | None = None


def glibc_version() -> str:
    """Return glibc's version, or '' for another C library."""
    try:
        text = os.confstr('CS_GNU_LIBC_VERSION')
    except (AttributeError, ValueError, OSError):  # Windows; musl and macOS know no such name
        return ''
    return text.split()[-1] if text and text.startswith('glibc') else ''


def environment_value(setting: MallocSetting) -> str | None:
    """Return the value the environment gives this setting (variable or tunable), or None."""
    if os.environ.get(setting.variable):
        return os.environ[setting.variable]
    for item in os.environ.get('GLIBC_TUNABLES', '').split(':'):
        name, _, value = item.partition('=')
        if name == setting.tunable:
            return value
    return None


def configure_allocator() -> AllocatorSetup:
    """
    Set glibc's malloc up for large messages in this process and its children, once.

    Call it first thing in a process that receives or publishes large images. Returns what was
    done, for a start-up log line; later calls return the same without doing anything.
    """
    global _done
    if _done is not None:
        return _done
    version = glibc_version()
    if not version:
        _done = AllocatorSetup(reason='not glibc (musl, macOS or Windows): no mallopt thresholds')
        return _done
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    applied: dict[str, int] = {}
    kept: dict[str, str] = {}
    for setting in SETTINGS:
        given = environment_value(setting)
        if given is not None:
            kept[setting.variable] = given
            continue
        value = next((v for v in (setting.value, setting.fallback)
                      if v and mallopt(setting.param, v)), 0)
        if value:
            applied[setting.variable] = value
            os.environ[setting.variable] = str(value)
    _done = AllocatorSetup(applied, kept, glibc=version)
    return _done
