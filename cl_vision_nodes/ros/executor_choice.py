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
Which rclpy executor spins a node: the SingleThreadedExecutor unless ``events`` is asked for.

Why: the EventsExecutor (``rclpy.experimental``, Jazzy's rclpy 7.1.4 and later, Kilted) waits
for events in C++ instead of rebuilding a wait set in Python for every callback. But in Jazzy's
(7.1.5) and Kilted's (9.1.2) wheels it raises ``SystemError: null argument to internal routine``
for a subscription callback that takes rclpy's MessageInfo, which the nodes read for each
frame's send time and to count the frames lost before the node; under it they go without both
(``VisionNode._subscribe``). So ``auto`` stays single-threaded (docs/BENCHMARKS.md "Executors"
for what each costs per frame). Humble's rclpy has no EventsExecutor. It takes no guard
conditions either: a node's executor waits on a future (``node_process.spin_until_stopped``).
"""
from __future__ import annotations

from cl_vision_nodes.errors import ParameterError
from rclpy.executors import Executor, SingleThreadedExecutor

try:  # rclpy 7.1.4+ (Jazzy, Kilted); Humble has no rclpy.experimental
    from rclpy.experimental import EventsExecutor
except ImportError:
    EventsExecutor = None


def executor_kind(choice: str) -> str:
    """Return ``events`` or ``single_threaded`` for the ``executor`` parameter's value."""
    if choice == 'events' and EventsExecutor is None:
        raise ParameterError('executor events: this rclpy has no EventsExecutor (it came with '
                             "Jazzy's rclpy 7.1.4); use auto or single_threaded")
    return 'single_threaded' if choice == 'auto' else choice


def new_executor(kind: str) -> Executor:
    """Return a new executor of ``kind`` (from ``executor_kind``)."""
    return SingleThreadedExecutor() if kind == 'single_threaded' else EventsExecutor()
