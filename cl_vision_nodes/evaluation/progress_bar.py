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
A progress line on stderr, shared by the long commands (eval's frames, tune's trials).

On a terminal the line is rewritten in place (carriage return) a few times a second; where
stderr is a file or a pipe (CI logs, ``2> log``) a carriage return would pile every update on
one line, so a plain line is printed every few seconds instead.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

BAR_WIDTH = 24
TERMINAL_PERIOD_S = 0.25
PLAIN_PERIOD_S = 5.0


def bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """Return ``[#####.......] done/total``."""
    filled = width * min(done, total) // max(total, 1)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def duration(seconds: float) -> str:
    """Return a time span the way a person reads it: ``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f'{whole} s'
    if whole < 3600:
        return f'{whole // 60} min {whole % 60:02d} s'
    return f'{whole // 3600} h {whole % 3600 // 60:02d} min'


class StatusLine:
    """One status line, updated in place on a terminal, else printed every ``plain_period_s``."""

    def __init__(self, stream: TextIO | None = None, plain_period_s: float = PLAIN_PERIOD_S,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = sys.stderr if stream is None else stream
        self.terminal = self.stream.isatty()
        self.period = TERMINAL_PERIOD_S if self.terminal else plain_period_s
        self.clock = clock
        self.shown: float | None = None
        self.width = 0  # of the last line on a terminal, blanked when a shorter one replaces it

    def due(self, force: bool = False) -> bool:
        """Whether the last line is older than the period (``force``: always), so text is due."""
        return force or self.shown is None or self.clock() - self.shown >= self.period

    def show(self, text: str) -> None:
        """Show ``text`` now: over the last line on a terminal, else as a line of its own."""
        self.shown = self.clock()
        if self.terminal:
            self.stream.write('\r' + text.ljust(self.width))
            self.width = len(text)
        else:
            self.stream.write(text + '\n')
        self.stream.flush()

    def finish(self) -> None:
        """End the line on a terminal, so that what follows starts on a line of its own."""
        if self.terminal and self.shown is not None:
            self.stream.write('\n')
            self.stream.flush()
        self.shown, self.width = None, 0  # a second finish writes nothing
