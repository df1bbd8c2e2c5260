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
Keep the process's SIGINT and SIGTERM handlers while an OpenCL driver opens a device.

PoCL's built-in LLVM installs handlers of its own for SIGINT, SIGTERM and others when PoCL opens
a device (to delete a build's temporary files), with SA_RESETHAND: when a signal comes, the
default action is back until its handler has put the previous one back, so a second Ctrl-C in
that moment kills the process (``ros2 launch`` sends every node two), and a Ctrl-C during a
build deletes the files the build is writing. Python's handlers (a node's stop signals, the
command line's KeyboardInterrupt) are put back once the device is open; LLVM counts its own as
still registered and does not install them again for later builds.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

KEPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def python_signal_handlers_kept() -> Iterator[None]:
    """Restore Python's SIGINT/SIGTERM handlers after the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; the process's owner set them there
        return
    kept = {signum: signal.getsignal(signum) for signum in KEPT_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in kept.items():
            if handler is not None:  # None: set outside Python, nothing to put back
                signal.signal(signum, handler)
