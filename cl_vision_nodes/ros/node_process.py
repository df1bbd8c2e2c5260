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
A node executable's process: rclpy started and stopped around one node, signals, exit codes.

``main_for`` is each node module's ``main``: ``--help``, or ``spin_node``, which starts rclpy,
builds the node (``VisionNode.start``), serves it until SIGINT or SIGTERM (``StopSignals``) and
shuts everything down in order. A start-up failure is one FATAL line and exit code 2.
"""
from __future__ import annotations

import os
import re
import sys
import threading

from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.ros.allocator import configure_allocator
from cl_vision_nodes.ros.dds_profile import use_large_image_profile
from cl_vision_nodes.ros.executor_choice import new_executor
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_help import usage, wants_help
from cl_vision_nodes.ros.node_port import nothing_more
from cl_vision_nodes.ros.stop_signals import exit_at_once, StopSignals
import rclpy
from rclpy._rclpy_pybind11 import RCLError
from rclpy.signals import SignalHandlerOptions

EXIT_CANNOT_START = 2
SPIN_BOUND_S = 1.0  # an executor spin returns at the latest after this, to look at the stop


def spin_node(node_class: type[VisionNode], args: list[str] | None = None,
              stop: StopSignals | None = None) -> int:
    """
    Run one node until Ctrl-C, SIGTERM or shutdown; return the exit code.

    A start-up failure is one FATAL line, under the node's name, and exit code 2. SIGINT and
    SIGTERM, once or several times at any moment (``StopSignals``, installed here unless
    ``stop`` was), end the node with exit code 0: the frame in progress is finished and
    published, the publishing thread is drained, the node destroyed and rclpy shut down, in that
    order, within ``STOP_DEADLINE_S``.
    """
    logger = rclpy.logging.get_logger(node_class.SCHEMA.node_name)
    if stop is None:
        stop = StopSignals(logger.warning)
        stop.install()
    if stop.requested:  # while the node's modules loaded (``executables``)
        stop.finished()
        return 0
    use_large_image_profile()
    allocator = configure_allocator()
    try:
        check_params_files(args or [])
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ParameterError, RCLError) as exc:  # bad ROS arguments, e.g. a YAML file's syntax
        reason = rcl_reason(exc) if isinstance(exc, RCLError) else str(exc)
        logger.fatal(f'cannot start: {reason}')
        stop.finished()
        return EXIT_CANNOT_START
    node = node_class()
    code = None
    try:
        code = start_and_spin(node, stop, allocator.line())
    finally:
        stop.phase = "the node's clean-up"
        node.destroy_node()
        rclpy.try_shutdown()
        stop.finished()
        if code is not None and node.left_running:
            # Python's finalization would stop that thread inside the device call it is in,
            # which aborts the process ("terminate called without an active exception")
            exit_at_once(code)
    return code


def start_and_spin(node: VisionNode, stop: StopSignals, allocator_line: str) -> int:
    """Build the node's kernels and serve it until a stop signal; return the exit code."""
    stop.phase = 'the OpenCL kernel build'
    try:
        node.start()
    except CLVisionError as exc:
        if stop.requested:  # e.g. LLVM deletes a build's temporary files on SIGINT
            node.get_logger().info('stopped while starting')
            node.get_logger().debug(f'start-up cut short: {exc}')
            return 0
        node.get_logger().fatal(f'cannot start: {exc}')
        return EXIT_CANNOT_START
    node.get_logger().debug(allocator_line)
    stop.phase = 'the frame in progress'
    spin_until_stopped(node, stop)
    return 0


def spin_until_stopped(node: VisionNode, stop: StopSignals) -> None:
    """
    Serve the node's callbacks until a stop signal; raise what a frame raised (a bug).

    The stop request and a failed frame wake the executor, so an idle node stops at once; the
    frame in progress ends in ``destroy_node``. (The EventsExecutor returns from a spin for
    neither ``wake()`` nor a guard condition: spins are bounded, so it stops within
    ``SPIN_BOUND_S``.)
    """
    executor = new_executor(node.executor_kind)
    executor.add_node(node)
    stopping = threading.Event()

    def wake() -> None:
        stopping.set()
        executor.wake()
    node.wake_executor = wake
    try:
        with stop.calling(wake):
            while not stopping.is_set():
                executor.spin_once(timeout_sec=SPIN_BOUND_S)
        if node.failure is not None:
            raise node.failure
    finally:
        node.wake_executor = nothing_more
        executor.shutdown()


def check_params_files(args: list[str]) -> None:
    """
    Raise ParameterError for a ``--params-file`` that cannot be read.

    rcl would log an extra ERROR line of its own and a reason without the file's name.
    """
    for option, path in zip(args, args[1:]):
        if option == '--params-file' and not os.access(path, os.R_OK):
            raise ParameterError(f'--params-file {path}: no such file or not readable')


def rcl_reason(exc: RCLError) -> str:
    """
    Return rcl's message on one line, without the C source locations it appends.

    They read like ", at /src/file.c:123".
    """
    return ' '.join(re.sub(r', at \S+:\d+', '', str(exc)).split())


def main_for(node_class: type[VisionNode], stop: StopSignals | None = None) -> None:
    """
    Run a node executable: print ``--help``, or run the node.

    ``stop``: the stop signals its console script took before loading it (``executables``).
    """
    if wants_help(sys.argv):
        print(usage(node_class))
        if stop is not None:
            stop.finished()
        sys.exit(0)
    sys.exit(spin_node(node_class, sys.argv, stop))
