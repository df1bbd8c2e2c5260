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
A node's /diagnostics: every period, its frame window as one DiagnosticStatus and a log line.

The status names the node (``<fqn>: frames``) and its device; its values are the window's
counts (ros/frame_stats.py), the node's own (``VisionNode.diagnostic_values``) and the programs
and kernels cached on its queues, constant in a steady stream (a growing count is a leak).
"""
from __future__ import annotations

from typing import Callable, ContextManager, Sequence

from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.frame_stats import FrameReport, FrameStats
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.timer import Timer


class NodeDiagnostics:
    """The /diagnostics publisher of one node and the timer that publishes its windows."""

    def __init__(self, node: Node, stats: FrameStats, work_lock: ContextManager,
                 own_values: Callable[[], dict[str, str]], queues: Sequence[ClRuntime]):
        self.node, self.stats, self.work_lock = node, stats, work_lock
        self.own_values = own_values  # called between frames (under ``work_lock``)
        self.queues = queues  # every command queue of the node (capability_runtime adds some)
        self.publisher = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer: Timer | None = None

    def schedule(self, period: float) -> None:
        """Publish every ``period`` seconds from now (never for 0)."""
        if self._timer is not None:
            self.node.destroy_timer(self._timer)
            self._timer = None
        if period > 0:
            self._timer = self.node.create_timer(period, self.publish)

    def cache_sizes(self) -> dict[str, int]:
        """Programs and kernels cached on every queue of the node (``ClRuntime.cache_sizes``)."""
        totals: dict[str, int] = {}
        for runtime in self.queues:
            for key, count in runtime.cache_sizes().items():
                totals[key] = totals.get(key, 0) + count
        return totals

    def publish(self) -> None:
        """Log the window ending now (when it had frames) and publish its status."""
        node = self.node
        report = self.stats.report()
        if report.frames or report.dropped:
            node.get_logger().info(report.line())
            node.get_logger().debug(report.detail_line())
        with self.work_lock:  # between frames
            own = self.own_values()
        level, message = diagnostic_status(report)
        status = DiagnosticStatus(
            level=level, name=f'{node.get_fully_qualified_name()}: frames', message=message,
            hardware_id=self.queues[0].entry.name,
            values=[KeyValue(key=k, value=v)
                    for k, v in {**report.key_values(), **own}.items()]
            + [KeyValue(key=f'opencl_cached_{k}', value=str(v))  # constant in a steady stream
               for k, v in self.cache_sizes().items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = node.get_clock().now().to_msg()
        self.publisher.publish(msg)


MISSED_WARN_SHARE = 0.1
MISSED_ERROR_SHARE = 0.5


def diagnostic_status(report: FrameReport) -> tuple[bytes, str]:
    """
    Return the diagnostics level and message of a window's frames.

    WARN when more than 10 % of the frames due (answered and dropped) were lost or skipped, or a
    frame had bad input; ERROR above half.
    """
    due = report.frames + report.dropped
    missed = report.dropped - report.rejected
    share = missed / due if due else 0.0
    parts = []
    if share > MISSED_WARN_SHARE:
        parts.append(f'{missed} of {due} frames missed ({report.lost_in_transport} lost before '
                     f'the node, {report.unmatched} without a partner, {report.skipped} '
                     'skipped for a newer one)')
    if report.rejected:
        parts.append(f'{report.rejected} bad input frames skipped')
    level = (DiagnosticStatus.ERROR if share > MISSED_ERROR_SHARE
             else DiagnosticStatus.WARN if parts else DiagnosticStatus.OK)
    return level, '; '.join(parts) or 'ok'
