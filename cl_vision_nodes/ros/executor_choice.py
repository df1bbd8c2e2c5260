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
Which rclpy executor spins a node: the EventsExecutor where this rclpy has it, else the
SingleThreadedExecutor.

Why: the EventsExecutor (``rclpy.experimental``, Jazzy's rclpy 7.1.4 and later, Kilted) waits
for events in C++ instead of rebuilding a wait set in Python for every callback, which is most
of a node's host time per frame at camera rates (docs/BENCHMARKS.md "Executors"). Humble's rclpy
has none, so ``auto`` falls back there. It takes no guard conditions: a node wakes its executor
through ``wake()``, which both executors have.
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
    if choice == 'auto':
        return 'single_threaded' if EventsExecutor is None else 'events'
    if choice == 'events' and EventsExecutor is None:
        raise ParameterError('executor events: this rclpy has no EventsExecutor (it came with '
                             "Jazzy's rclpy 7.1.4); use auto or single_threaded")
    return choice


def new_executor(kind: str) -> Executor:
    """Return a new executor of ``kind`` (from ``executor_kind``)."""
    return SingleThreadedExecutor() if kind == 'single_threaded' else EventsExecutor()
