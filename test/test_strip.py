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
evaluation.strip: the report's picture strip, read from a recorded bag written here.

The bag holds what eval records: a PNG-compressed left input, and the nodes' answers serialized
as the nodes serialize them (ros.cdr), some frames with a published visual topic, some without,
one frame without a disparity answer (rosbags writes the rest: no ROS needed to write it). Every
tile is checked pixel for pixel against the picture it must show: the published one, the host
drawing of the answer, or the empty tile.
"""
from pathlib import Path

from bagutil import TS
from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.evaluation.strip import (compose, EMPTY, GAP, LABEL_HEIGHT, MAX_TILE_WIDTH,
                                              spread, StripTopics, write_strip)
from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.ros.cdr import cloud_framing, disparity_framing, serialize_image
from cl_vision_nodes.surf.draw import draw_keypoints
from cl_vision_nodes.surf.keypoints import Keypoints
import cv2
import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer

CompressedImage = TS.types['sensor_msgs/msg/CompressedImage']
Header, Time = TS.types['std_msgs/msg/Header'], TS.types['builtin_interfaces/msg/Time']
PointField = TS.types['sensor_msgs/msg/PointField']
HEIGHT, WIDTH, FRAMES = 48, 64, 5
TOPICS = StripTopics(image='/cam/left/image_raw/compressed', flow='/cam/left/flow',
                     flow_color='/cam/left/flow/color', disparity='/cam/disparity',
                     disparity_color='/cam/disparity/color', keypoints='/cam/left/keypoints',
                     keypoints_image='/cam/left/keypoints/image')
PUBLISHED_COLOUR = (10, 200, 30)
DISPARITY = 8.0


def gray(k: int) -> np.ndarray:
    rng = np.random.default_rng(k)
    return cv2.GaussianBlur(rng.integers(0, 256, (HEIGHT, WIDTH)).astype(np.uint8), (5, 5), 1.0)


def flow(k: int) -> np.ndarray:
    return np.broadcast_to(np.float32([k, -1.0]), (HEIGHT, WIDTH, 2)).copy()


def keypoints(k: int) -> Keypoints:
    n = 3
    descriptor = np.zeros((n, 64), np.float32)
    descriptor[:, 0] = 1.0
    return Keypoints(np.float32([10, 30, 50]), np.float32([10, 20, 30 + k]),
                     np.float32([9, 12, 15]), np.float32([0, 90, 180]), np.ones(n, np.float32),
                     np.zeros(n, np.int32), np.int8([1, -1, 1]), descriptor)


def header(k: int) -> Header:
    return Header(stamp=Time(sec=1 + k, nanosec=0), frame_id='cam')


def keypoint_fields() -> list[PointField]:
    """Return the surf node's PointCloud2 fields (README's layout) of its keypoint records."""
    types = {np.dtype('f4'): PointField.FLOAT32, np.dtype('i4'): PointField.INT32,
             np.dtype('i1'): PointField.INT8}
    dtype = keypoints(0).to_structured().dtype
    return [PointField(name=name, offset=offset, datatype=types[sub.base],
                       count=int(np.prod(sub.shape)))
            for name, (sub, offset) in dtype.fields.items()]


def write_recorded_bag(path: Path, with_image: bool = True) -> None:
    """Frames 0..4; flow 1..4 (its picture published for 2), disparity all but 3, keypoints."""
    types = {TOPICS.image: 'sensor_msgs/msg/CompressedImage', TOPICS.flow: 'sensor_msgs/msg/Image',
             TOPICS.flow_color: 'sensor_msgs/msg/Image',
             TOPICS.disparity: 'stereo_msgs/msg/DisparityImage',
             TOPICS.keypoints: 'sensor_msgs/msg/PointCloud2'}
    if not with_image:
        del types[TOPICS.image]
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {t: writer.add_connection(t, m, typestore=TS) for t, m in types.items()}
        written = []

        def write(topic: str, k: int, data: bytes) -> None:
            """Log at the frame's time plus 1 ms per message: answers after their input."""
            written.append(topic)
            if topic in connections:
                writer.write(connections[topic], (1 + k) * 10**9 + len(written) * 10**6, data)

        for k in range(FRAMES):
            png = cv2.imencode('.png', gray(k))[1].tobytes()
            write(TOPICS.image, k, bytes(TS.serialize_cdr(CompressedImage(
                header=header(k), format='mono8; png compressed ',
                data=np.frombuffer(png, np.uint8)), CompressedImage.__msgtype__)))
            if k > 0:
                write(TOPICS.flow, k, serialize_image(header(k), array_to_raw(flow(k), '32FC2')))
            if k == 2:
                colour = np.broadcast_to(np.uint8(PUBLISHED_COLOUR), (HEIGHT, WIDTH, 3))
                write(TOPICS.flow_color, k,
                      serialize_image(header(k), array_to_raw(colour.copy(), 'bgr8')))
            if k != 3:
                framing = disparity_framing(header(k), HEIGHT, WIDTH, f=100.0, t=0.1,
                                            valid_window=(0, 0, WIDTH, HEIGHT), min_disparity=0.0,
                                            max_disparity=16.0, delta_d=0.25)
                write(TOPICS.disparity, k,
                      framing.join(np.full((HEIGHT, WIDTH), DISPARITY, np.float32)))
            records = keypoints(k).to_structured()
            framing = cloud_framing(header(k), 1, len(records), keypoint_fields(),
                                    records.dtype.itemsize, records.nbytes)
            write(TOPICS.keypoints, k, framing.join(records))


def tile(strip: np.ndarray, row: int, column: int) -> np.ndarray:
    """Return the picture (without its label) of a row and column of a strip of 48x64 tiles."""
    top = row * (LABEL_HEIGHT + HEIGHT + GAP) + LABEL_HEIGHT
    left = column * (WIDTH + GAP)
    return strip[top:top + HEIGHT, left:left + WIDTH]


def test_frames_are_spread_over_the_run_after_the_first():
    assert spread(4, 12) == [1, 4, 8, 11]
    assert spread(4, 5) == [1, 2, 3, 4]
    assert spread(4, 3) == [1, 2]
    assert spread(4, 1) == [0]
    assert spread(4, 0) == []


@pytest.mark.ros  # the strip reads the answers with rclpy's deserializer (evaluation.frames)
def test_strip_shows_published_pictures_drawings_and_missing_answers(tmp_path):
    write_recorded_bag(tmp_path / 'bag')
    assert write_strip(tmp_path / 'bag', TOPICS, tmp_path / 'strip.png')
    strip = cv2.imread(str(tmp_path / 'strip.png'))
    assert strip.shape == (4 * (LABEL_HEIGHT + HEIGHT) + 3 * GAP, 4 * WIDTH + 3 * GAP, 3)
    for row, k in enumerate([1, 2, 3, 4]):
        image = cv2.cvtColor(gray(k), cv2.COLOR_GRAY2BGR)
        assert np.array_equal(tile(strip, row, 0), image)
        expected_flow = (np.broadcast_to(np.uint8(PUBLISHED_COLOUR), (HEIGHT, WIDTH, 3))
                         if k == 2 else flow_to_color(flow(k)))
        assert np.array_equal(tile(strip, row, 1), expected_flow), k
        expected_disparity = (np.full((HEIGHT, WIDTH, 3), EMPTY, np.uint8) if k == 3 else
                              disparity_to_color(np.full((HEIGHT, WIDTH), DISPARITY), 0.0, 16.0))
        assert np.array_equal(tile(strip, row, 2), expected_disparity), k
        drawn = draw_keypoints(gray(k).astype(np.float32), keypoints(k))
        assert np.array_equal(tile(strip, row, 3), drawn), k
        label = strip[row * (LABEL_HEIGHT + HEIGHT + GAP):][:LABEL_HEIGHT, :WIDTH]
        # the label's white text, anti-aliased: its brightest pixel is 248 to 250 on OpenCV 4.5.4
        # and 4.6, 253 to 255 on 5.0 (LINE_AA strokes are drawn fainter before 5.0)
        assert label.max() >= 240


def test_a_bag_without_the_input_topic_gives_no_strip(tmp_path):
    write_recorded_bag(tmp_path / 'bag', with_image=False)
    assert not write_strip(tmp_path / 'bag', TOPICS, tmp_path / 'strip.png')
    assert not (tmp_path / 'strip.png').exists()


@pytest.mark.parametrize('width', [MAX_TILE_WIDTH, 2 * MAX_TILE_WIDTH])
def test_wide_frames_are_shrunk_to_the_tile_width(width):
    picture = np.full((100, width, 3), 200, np.uint8)
    strip = compose([[(picture, 'input'), (None, 'flow (no answer)')]])
    height = 100 * MAX_TILE_WIDTH // width
    assert strip.shape == (LABEL_HEIGHT + height, 2 * MAX_TILE_WIDTH + GAP, 3)
    assert (strip[LABEL_HEIGHT:, :MAX_TILE_WIDTH] == 200).all()
    assert (strip[LABEL_HEIGHT:, MAX_TILE_WIDTH + GAP:] == EMPTY).all()
