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
The stereo inputs of disparity_node and the pipeline node: two images and two camera_infos.

Subscribes ``left/image_rect`` and ``right/image_rect`` (``left/image_raw`` and
``right/image_raw`` with ``rectify``), ``left/camera_info`` and ``right/camera_info``, keep-last
``queue_size`` with the publishers' reliability (``InputQos``), and synchronises them exactly by
stamp, or approximately with ``approximate_sync`` as stereo_image_proc. The depth is
``queue_size``, not 1: the four messages of a set arrive one after the other and must all wait
in their readers until the executor takes them, or a set loses a side; the newest set still
wins, as the frame thread skips a set waiting for it when a newer one comes (``run_frame``).
The images arrive serialized and are read in place; each pair runs as one frame of the node,
timed from the left image's arrival (waiting for its partner included). Left images lost
before the node (sequence gaps) and left images the synchroniser gave up count as the node's
dropped frames as they happen, so each diagnostics window holds its own, except those given up
before the first complete set: while DDS discovery matches the four topics one by one, the
first messages of one stream can arrive before its partners' subscriptions are matched.

Messages given up are reported every ``UNMATCHED_REPORT_PERIOD_S``: with the stamp hint
(identical stamps? approximate_sync?) only when their stamps really differ (``stamps_differ``);
otherwise their partners were lost before the node.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Mapping

from cl_vision_nodes.errors import CLVisionError
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.frame_stats import FrameTiming, receive_seconds
from cl_vision_nodes.ros.node_base import VisionNode
from cl_vision_nodes.ros.node_port import ImageFrame
from cl_vision_nodes.ros.stereo_sync import stamps_differ, StereoSynchronizer
from cl_vision_nodes.ros.topics import image_input, Topic
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, Image

RECTIFIED_IMAGES = ('left/image_rect', 'right/image_rect')
RAW_IMAGES = ('left/image_raw', 'right/image_raw')
CAMERA_INFOS = ('left/camera_info', 'right/camera_info')
UNMATCHED_REPORT_PERIOD_S = 5.0
STAMPS_KEPT = 64  # per stream, the stamps a given-up message is compared with

StereoHandler = Callable[[ImageFrame, ImageFrame, CameraInfo, CameraInfo], None]


class StereoInputs:
    """Four synchronised stereo inputs of a node; ``handler`` runs as one frame per set."""

    @staticmethod
    def topics(values: Mapping[str, Value]) -> tuple[Topic, ...]:
        """Return the inputs for disparity_node's parameter ``values``, left image first."""
        images = RAW_IMAGES if values['rectify'] else RECTIFIED_IMAGES
        return (*(image_input(name, values) for name in images),
                *(Topic(name, CameraInfo) for name in CAMERA_INFOS))

    def __init__(self, node: VisionNode, values: dict[str, Value], handler: StereoHandler):
        """Subscribe the inputs that ``values`` (disparity_node's parameters) name."""
        self.node = node
        self.handler = handler
        depth = int(values['queue_size'])
        images = RAW_IMAGES if values['rectify'] else RECTIFIED_IMAGES
        self.approximate = bool(values['approximate_sync'])
        self.tolerance_ns = int(float(values['approximate_sync_tolerance_seconds']) * 1e9)
        self.sync = StereoSynchronizer(4, self._on_set, queue_size=depth,
                                       approximate=self.approximate,
                                       tolerance_ns=self.tolerance_ns)
        self._stamps: list[deque[int]] = [deque(maxlen=STAMPS_KEPT) for _ in range(4)]
        for index, topic in enumerate(images):
            node.subscribe_stream(Image, topic, self._image(index, topic), depth, raw=True)
        for index, topic in enumerate(CAMERA_INFOS, start=2):
            node.subscribe_stream(CameraInfo, topic, self._info(index), depth)
        self._unmatched = [0, 0, 0, 0]  # given up per stream, as of the last warning check
        self._counted_left = 0  # left images given up, as of the last count in the node's stats
        self._matched_any = False
        node.create_timer(UNMATCHED_REPORT_PERIOD_S, self._report_unmatched)

    def _image(self, index: int, topic: str) -> Callable[[bytes, Any], None]:
        def add(data: bytes, info: Any) -> None:
            timing = FrameTiming(receive_seconds(info))
            if index == 0:
                self.node.note_sequence(info, topic)
            try:
                frame = self.node.read_image(data, timing)
            except CLVisionError as exc:  # a malformed message: that frame's error
                self.node.reject_frame(exc)
                return
            self._add(index, frame.stamp_ns, frame)
        return add

    def _info(self, index: int) -> Callable[[CameraInfo, Any], None]:
        def add(msg: CameraInfo, info: Any) -> None:
            self._add(index, Time.from_msg(msg.header.stamp).nanoseconds, msg)
        return add

    def _add(self, stream: int, stamp_ns: int, msg: Any) -> None:
        """Hand a message to the synchroniser; count the left images it gave up as frames."""
        self._stamps[stream].append(stamp_ns)
        self.sync.add(stream, stamp_ns, msg)
        given_up = self.sync.dropped_of(0)
        if self._matched_any and given_up > self._counted_left:
            self.node.stats.frames_unmatched(given_up - self._counted_left)
        self._counted_left = given_up

    def _on_set(self, left: ImageFrame, right: ImageFrame, left_info: CameraInfo,
                right_info: CameraInfo) -> None:
        if not self._matched_any:  # what was given up before is start-up, not a stamp mismatch
            self._matched_any = True
            self._unmatched = [self.sync.dropped_of(stream) for stream in range(4)]
            self._counted_left = self._unmatched[0]
        self.node.run_frame(lambda: self.handler(left, right, left_info, right_info),
                            left.timing)

    def _report_unmatched(self) -> None:
        dropped = [self.sync.dropped_of(stream) for stream in range(4)]
        new = sum(now - before for now, before in zip(dropped, self._unmatched))
        differ = stamps_differ(self.sync.take_given_up(), self._stamps,
                               self.tolerance_ns if self.approximate else None)
        log = self.node.get_logger()
        if not self._matched_any:
            if differ:
                log.warning(f'{new} input messages found no partner and no stereo set formed '
                            f'yet: {self._stamp_hint()}', throttle_duration_sec=30.0)
            return
        self._unmatched = dropped
        if differ:
            log.warning(f'{new} input messages found no partner in the last seconds: '
                        f'{self._stamp_hint()}', throttle_duration_sec=30.0)
        elif new:
            log.warning(f'{new} input messages found no partner in the last seconds: their '
                        'partners were not published or were lost before the node (then: '
                        f'{self.node.input_qos.loss_cause()})', throttle_duration_sec=30.0)

    def _stamp_hint(self) -> str:
        if self.approximate:
            return ('left/right images and camera_infos are stamped further apart than '
                    'approximate_sync_tolerance_seconds: raise it')
        return ('are left/right images and camera_infos published with identical stamps? '
                '(else set approximate_sync)')
