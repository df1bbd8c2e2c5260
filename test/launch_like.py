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
``python launch_like.py DELAY COMMAND...``: a parent that forwards SIGINT/SIGTERM as ros2 launch.

A terminal's Ctrl-C reaches the whole process group, the child included; ``ros2 launch`` then
sends the same signal to each process it started ("sending signal 'SIGINT' to process[...]").
This parent does the latter DELAY seconds after it got the signal and exits with the child's code;
signals that come once the child has ended are ignored.
"""
import signal
import subprocess
import sys
import time


def main() -> int:
    delay = float(sys.argv[1])
    child = subprocess.Popen(sys.argv[2:])

    def forward(signum: int, _frame: object) -> None:
        time.sleep(delay)
        child.send_signal(signum)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    code = child.wait()
    for signum in (signal.SIGINT, signal.SIGTERM):
        # the interpreter's finalization puts a Python handler back to the default action: a
        # signal sent now, while this parent exits, would end it by that signal
        signal.signal(signum, signal.SIG_IGN)
    return code if code >= 0 else 128 - code


if __name__ == '__main__':
    sys.exit(main())
