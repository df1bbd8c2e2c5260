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
The report's picture strip: a few frames spread over the run, one labelled row each.

A row shows the left (or only) input frame as played, the flow in colour, the disparity in
colour and the keypoints on the frame, so a reader sees at a glance what the nodes made of the
bag from its start to its end, not only of its last frame. Each picture is the node's own visual
topic as recorded (flow/color, disparity/color, keypoints/image) when the run recorded it for
that frame, else it is drawn on the host from the node's answer with the reference drawings
(``flow_to_color`` scaled by the frame's largest flow, ``disparity_to_color`` over the message's
range, ``draw_keypoints``); the label says which. A frame a node did not answer shows an empty
tile. The frames are read from the recorded bag in one pass (the inputs are logged before the
answers to them), so a long bag costs no memory beyond the rows kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from cl_vision_nodes.bags.storage import Bag, topic_counts
from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.evaluation.frames import deserialize, image_array, message_image, raw_image
from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.imaging.encodings import to_gray_reference
from cl_vision_nodes.ros.cdr import read_stamp
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_keypoints
from cl_vision_nodes.surf.draw import draw_keypoints
import cv2
import numpy as np

STRIP_FRAMES = 4
MAX_TILE_WIDTH = 320
"""Wider frames are shrunk so that a row of four stays readable on a screen."""
LABEL_HEIGHT = 18
GAP = 4
EMPTY = 48
"""Grey of a tile without an answer."""


@dataclass(frozen=True)
class StripTopics:
    """The recorded topics a strip is made of; None for a node that did not run."""

    image: str
    """The left (or mono) input, sensor_msgs/Image or CompressedImage."""
    flow: str | None = None
    flow_color: str | None = None
    disparity: str | None = None
    disparity_color: str | None = None
    keypoints: str | None = None
    keypoints_image: str | None = None

    @classmethod
    def of(cls, image: str, outputs: Mapping[str, list[str]]) -> StripTopics:
        """
        Return the strip topics of an eval run.

        ``outputs`` maps a node key (flow, surf, disparity) to its recorded outputs: its answer,
        then its picture.
        """
        def answer_and_picture(key: str) -> tuple[str | None, str | None]:
            topics = [*outputs.get(key, []), None, None]
            return topics[0], topics[1]

        flow, flow_color = answer_and_picture('flow')
        disparity, disparity_color = answer_and_picture('disparity')
        keypoints, keypoints_image = answer_and_picture('surf')
        return cls(image, flow, flow_color, disparity, disparity_color, keypoints,
                   keypoints_image)

    def columns(self) -> list[str]:
        """Return the column titles after the input: one per node that ran."""
        return [title for title, topic in (('flow', self.flow), ('disparity', self.disparity),
                                           ('keypoints', self.keypoints)) if topic]


@dataclass
class _Row:
    """One frame: its input and what was recorded for it, as serialized bytes by topic."""

    ordinal: int
    image: bytes
    answers: dict[str, bytes] = field(default_factory=dict)


def spread(count: int, total: int) -> list[int]:
    """
    Return up to ``count`` frame ordinals spread evenly over ``total`` frames.

    The first frame is left out when there are others: flow has no answer for it.
    """
    first = 1 if total > 1 else 0
    if total <= first:
        return []
    steps = np.linspace(first, total - 1, min(count, total - first))
    return sorted({int(round(v)) for v in steps})


def _bgr(picture: np.ndarray) -> np.ndarray:
    if picture.ndim == 2:
        return cv2.cvtColor(np.clip(picture, 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
    return picture[..., :3].astype(np.uint8)


def _drawn_disparity(data: bytes, gray: np.ndarray) -> tuple[np.ndarray, str]:
    msg = deserialize(data, 'stereo_msgs/msg/DisparityImage')
    disparity = message_image(msg.image)
    return disparity_to_color(disparity, msg.min_disparity, msg.max_disparity), 'drawn'


def _drawn_keypoints(data: bytes, gray: np.ndarray) -> tuple[np.ndarray, str]:
    keypoints = cloud_to_keypoints(deserialize(data, 'sensor_msgs/msg/PointCloud2'))
    return draw_keypoints(gray, keypoints), f'{len(keypoints)}, drawn'


def _drawn_flow(data: bytes, gray: np.ndarray) -> tuple[np.ndarray, str]:
    return flow_to_color(image_array(data)), 'drawn'


Drawing = Callable[[bytes, np.ndarray], tuple[np.ndarray, str]]


def _tile(row: _Row, gray: np.ndarray, visual: str | None, answer: str | None,
          draw: Drawing) -> tuple[np.ndarray | None, str]:
    """Return the picture of one node for a row and how it was made."""
    if visual in row.answers:
        return _bgr(image_array(row.answers[visual])), 'published'
    if answer in row.answers:
        return draw(row.answers[answer], gray)
    return None, 'no answer'


def _fit(picture: np.ndarray | None, height: int, width: int) -> np.ndarray:
    if picture is None:
        return np.full((height, width, 3), EMPTY, np.uint8)
    if picture.shape[:2] != (height, width):
        return cv2.resize(picture, (width, height), interpolation=cv2.INTER_AREA)
    return picture


def _labelled(picture: np.ndarray, label: str) -> np.ndarray:
    band = np.zeros((LABEL_HEIGHT, picture.shape[1], 3), np.uint8)
    cv2.putText(band, label, (3, LABEL_HEIGHT - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.4,
                (255, 255, 255), 1, cv2.LINE_AA)
    return np.vstack([band, picture])


def compose(rows: list[list[tuple[np.ndarray | None, str]]]) -> np.ndarray:
    """
    Lay labelled pictures out in rows; each row's first picture fixes the tile size.

    A None picture is an empty grey tile; tiles wider than ``MAX_TILE_WIDTH`` are shrunk.
    """
    lines = []
    for row in rows:
        first = row[0][0]
        assert first is not None, 'a row starts with its input frame'
        height, width = first.shape[:2]
        if width > MAX_TILE_WIDTH:
            height, width = max(1, round(height * MAX_TILE_WIDTH / width)), MAX_TILE_WIDTH
        tiles = [_labelled(_fit(picture, height, width), label) for picture, label in row]
        gap = np.full((tiles[0].shape[0], GAP, 3), 255, np.uint8)
        lines.append(np.hstack([part for tile in tiles for part in (tile, gap)][:-1]))
    width = max(line.shape[1] for line in lines)
    padded = [np.pad(line, ((0, GAP), (0, width - line.shape[1]), (0, 0)),
                     constant_values=255) for line in lines]
    return np.vstack(padded)[:-GAP]


def read_rows(bag_path: Path, topics: StripTopics, count: int = STRIP_FRAMES) -> list[_Row]:
    """Read the inputs and answers of ``count`` frames spread over the recorded bag."""
    recorded = topic_counts(bag_path)
    if topics.image not in recorded:
        return []
    chosen = set(spread(count, recorded[topics.image][1]))
    wanted = [t for t in (topics.image, topics.flow, topics.flow_color, topics.disparity,
                          topics.disparity_color, topics.keypoints, topics.keypoints_image)
              if t in recorded]
    rows: dict[int, _Row] = {}
    ordinal = 0
    for msg in Bag(bag_path, wanted).messages():
        stamp = read_stamp(msg.data)
        if msg.topic == topics.image:
            if ordinal in chosen:
                rows[stamp] = _Row(ordinal, msg.data)
            ordinal += 1
        elif stamp in rows:
            rows[stamp].answers[msg.topic] = msg.data
    return sorted(rows.values(), key=lambda row: row.ordinal)


def write_strip(bag_path: Path, topics: StripTopics, path: Path,
                count: int = STRIP_FRAMES) -> bool:
    """Write the strip of the recorded bag to ``path`` (PNG); False when it has no input frame."""
    rows = read_rows(bag_path, topics, count)
    if not rows:
        return False
    image_type = topic_counts(bag_path)[topics.image][0]
    pictures = []
    for row in rows:
        gray = to_gray_reference(raw_image(row.image, image_type))
        line = [(_bgr(gray), f'frame {row.ordinal}: input')]
        for title, visual, answer, draw in (
                ('flow', topics.flow_color, topics.flow, _drawn_flow),
                ('disparity', topics.disparity_color, topics.disparity, _drawn_disparity),
                ('keypoints', topics.keypoints_image, topics.keypoints, _drawn_keypoints)):
            if answer:
                picture, how = _tile(row, gray, visual, answer, draw)
                line.append((picture, f'{title} ({how})'))
        pictures.append(line)
    write_png(path, compose(pictures))
    return True
