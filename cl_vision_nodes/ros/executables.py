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
The node executables (``ros2 run`` / ``ros2 launch``): stop signals taken before the node loads.

Loading a node (rclpy, numpy, pyopencl, OpenCV) takes about a second. A Ctrl-C within it, a
launch stopped right after it started, would end in a KeyboardInterrupt traceback (or SIGTERM's
default action) before the node's own handling exists. So each console script takes SIGINT and
SIGTERM over first (``StopSignals`` needs the standard library only), then imports its node
module and runs it, which returns at once when a stop came meanwhile.
"""
from __future__ import annotations

import importlib

from cl_vision_nodes.ros.stop_signals import StopSignals


def run(executable: str) -> None:
    """Take the stop signals, then load and run node module ``executable``."""
    def warn(line: str) -> None:
        from rclpy.logging import get_logger  # loaded by then, unless it was the import hanging
        get_logger(executable).warning(line)
    stop = StopSignals(warn)
    stop.install()
    importlib.import_module(f'cl_vision_nodes.ros.{executable}').main(stop)


def convert_node() -> None:
    run('convert_node')


def flow_node() -> None:
    run('flow_node')


def surf_node() -> None:
    run('surf_node')


def disparity_node() -> None:
    run('disparity_node')


def rectify_node() -> None:
    run('rectify_node')


def vision_pipeline() -> None:
    run('vision_pipeline')
