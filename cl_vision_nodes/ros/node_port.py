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
What a capability asks of the node it serves: outputs, stage times, publishing, a log line.

A capability (flow, SURF, disparity) is built on a port and a runtime, not on a node, so a test
can run it with a port of its own and no node, no DDS (test/fakeport.py). ``NodePort`` is the
node's: reliable publishers of ``output_queue_size``, the current frame's ``FrameTiming``, and
the publishing thread (``OutputQueue``) on which every message goes out, in order.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterator, Protocol

from cl_vision_nodes.imaging.encodings import RawImage
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.cdr import CdrHeader, Framing, image_framing, raw_image_framing
from cl_vision_nodes.ros.frame_stats import FrameTiming
from cl_vision_nodes.ros.output_queue import OutputQueue
from cl_vision_nodes.ros.topics import Topic
import numpy as np
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

Followup = Callable[[], None]
"""What a capability publishes after its answer (pictures, depth, points): run once every
capability of the frame has published its answer, so none of them waits for another's pictures."""


Finish = Callable[[], Followup]
"""What completes a capability's frame after its device work was enqueued (``start``): wait for
it, download and publish the answer, return the followup. A node that runs several capabilities
starts them all before it finishes any, so their device work runs side by side."""


def nothing_more() -> None:
    """Return from a followup with nothing to publish."""


@dataclass(frozen=True)
class ImageFrame:
    """
    A received image, read in place: its header, pixels viewing the message bytes, its timing.

    Outputs reuse ``header`` verbatim (the input's stamp and frame).
    """

    header: CdrHeader
    raw: RawImage
    timing: FrameTiming

    @property
    def stamp_ns(self) -> int:
        return self.header.sec * 1_000_000_000 + self.header.nanosec


class CapabilityPort(Protocol):
    """The node as a capability sees it (``NodePort``; a test's fake)."""

    def output(self, topic: Topic) -> Any:
        """Return the publisher of output ``topic`` (created once, when connecting)."""

    def wanted(self, output: Any) -> bool:
        """Say whether anyone listens to ``output`` (visual topics are computed only then)."""

    def stage(self, name: str) -> ContextManager[None]:
        """Count the host time of the block as stage ``name`` of the frame."""

    def device_stage(self, name: str, runtime: ClRuntime) -> ContextManager[None]:
        """Count the block and the work it enqueued on ``runtime`` (waited for) as ``name``."""

    def download_stage(self, name: str) -> ContextManager[None]:
        """Count a download into a staging array as ``name`` (after the previous publishes)."""

    def publish_image(self, output: Any, header: CdrHeader, encoding: str, pixels: np.ndarray,
                      stage: str = 'publish') -> None:
        """Publish HxW[xC] host-order ``pixels`` as a packed sensor_msgs/Image."""

    def publish_serialized(self, output: Any, framing: Framing, payload: Any,
                           stage: str = 'publish') -> None:
        """Publish a message serialized around ``payload``."""

    def publish_message(self, output: Any, msg: Any, stage: str = 'publish') -> None:
        """Publish a small message object."""

    def log(self, line: str, once: str = '') -> None:
        """Log ``line`` at info level; a line with a ``once`` key only the first time."""


class NodePort:
    """
    A node's side of the port, and the node's own publishing and timing.

    ``timing`` is the frame in progress (the node sets it per frame); every publish runs on the
    publishing thread, timed as that frame's stage. ``queues``: every command queue of the node,
    which ``device_stage`` without a runtime waits for.
    """

    def __init__(self, node: Node, outputs: OutputQueue, queues: list[ClRuntime],
                 depth: Callable[[], int]):
        self.node = node
        self.outputs = outputs
        self.queues = queues
        self.depth = depth
        self.timing = FrameTiming()
        self._logged_once: set[str] = set()

    def output(self, topic: Topic) -> Publisher:
        """Return a reliable publisher of ``topic`` with the depth of ``output_queue_size``."""
        qos = QoSProfile(reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST,
                         depth=self.depth())
        return self.node.create_publisher(topic.msg_type, topic.name, qos)

    @staticmethod
    def wanted(output: Publisher) -> bool:
        """Visual topics are computed only when someone listens."""
        return output.get_subscription_count() > 0

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Count the host time of the ``with`` block as stage ``name`` of the current frame."""
        with self.timing.stage(name):
            yield

    @contextlib.contextmanager
    def device_stage(self, name: str, runtime: ClRuntime | None = None) -> Iterator[None]:
        """
        Count the block and the device work it enqueued (waited for) as stage ``name``.

        Waits for ``runtime``'s queue, or without one for every queue of the node.
        """
        with self.timing.stage(name):
            yield
            for queue in (self.queues if runtime is None else (runtime,)):
                queue.finish()

    @contextlib.contextmanager
    def download_stage(self, name: str) -> Iterator[None]:
        """
        Count the block as stage ``name``: a download into a staging array.

        Waits first until the previous frame's publishes, which may still read its staging
        arrays, are done (``OutputQueue``).
        """
        with self.timing.stage(name):
            self.outputs.drain()
            yield

    def publish_serialized(self, output: Publisher, framing: Framing, payload: Any,
                           stage: str = 'publish') -> None:
        """
        Publish a message serialized around ``payload`` (one copy of it) as stage ``stage``.

        On the publishing thread, in order: the frame's next work, and the next frame's upload
        and compute, go on meanwhile. ``payload`` must stay untouched until ``download_stage``.
        """
        self._publish_later(output, lambda: framing.join(payload), stage)

    def publish_raw(self, output: Publisher, header: CdrHeader, raw: RawImage,
                    stage: str = 'publish') -> None:
        """Publish ``raw`` (any step, either byte order) as an Image, as ``publish_image`` does."""
        self.publish_serialized(output, raw_image_framing(header, raw), raw.data, stage)

    def publish_message(self, output: Publisher, msg: Any, stage: str = 'publish') -> None:
        """Publish a small message object as ``publish_serialized`` does: in order, later."""
        self._publish_later(output, lambda: msg, stage)

    def publish_image(self, output: Publisher, header: CdrHeader, encoding: str,
                      pixels: np.ndarray, stage: str = 'publish') -> None:
        """Publish HxW[xC] host-order ``pixels`` as a packed sensor_msgs/Image of ``encoding``."""
        if not pixels.flags.c_contiguous:
            raise ValueError('publish_image needs a C-contiguous array')
        height, width = pixels.shape[:2]
        framing = image_framing(header, encoding, height, width, pixels.nbytes // max(height, 1))
        self.publish_serialized(output, framing, pixels, stage)

    def _publish_later(self, output: Publisher, message: Callable[[], Any], stage: str) -> None:
        """Publish ``message()`` on the publishing thread, timed as this frame's ``stage``."""
        timing = self.timing

        def send() -> None:
            with timing.stage(stage):
                output.publish(message())
        self.outputs.submit(send)

    def log(self, line: str, once: str = '') -> None:
        """
        Log ``line`` at info level under the node's name; with ``once``, the key's first only.

        (rclpy's own ``once`` is per call site, and every capability's lines come through here.)
        """
        if once:
            if once in self._logged_once:
                return
            self._logged_once.add(once)
        self.node.get_logger().info(line)
