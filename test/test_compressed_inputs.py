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
Compressed image inputs (``image_transport:=compressed``) over real Fast DDS.

Each node runs twice: one instance takes sensor_msgs/CompressedImage on ``<image>/compressed``,
the other the same frame decoded by OpenCV in the test, as a raw Image on ``<image>``. Both
must publish the same flow, keypoints and disparity. Malformed compressed data is logged and the
next good frame answered.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

from cl_vision_nodes.dataio.synthetic import flow_sequence, Motion, stereo_pair, texture
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_array
import cv2
import numpy as np
import pytest
from rosutil import image_to_numpy, NodeProcess, numpy_to_image, publish_until_answered, RosHarness
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

pytestmark = pytest.mark.ros

STAMPS = itertools.count(100)
FLOW_FRAMES = flow_sequence(2, 60, 80, motion=Motion('translation', shift=(1.5, -0.75)),
                            seed=5).frames
SURF_IMAGE = texture(120, 160, seed=6).astype(np.uint8)
PAIR = stereo_pair(72, 96, seed=7, max_disparity=10.0)


def colour(gray: np.ndarray) -> np.ndarray:
    """Return an RGB image whose channels differ, so a swapped order changes its gray."""
    return np.dstack([gray, 255 - gray, gray // 2 + 64]).astype(np.uint8)


def jpeg(pixels: np.ndarray) -> bytes:
    ok, data = cv2.imencode('.jpg', pixels, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return data.tobytes()


def png(pixels: np.ndarray) -> bytes:
    ok, data = cv2.imencode('.png', pixels)
    assert ok
    return data.tobytes()


def compressed(format_: str, data: bytes, tag: str, sec: int) -> CompressedImage:
    msg = CompressedImage(format=format_)
    msg.data.frombytes(data)
    msg.header.frame_id, msg.header.stamp.sec = tag, sec
    return msg


def raw(pixels: np.ndarray, encoding: str, tag: str, sec: int) -> Image:
    msg = numpy_to_image(pixels, encoding)
    msg.header.frame_id, msg.header.stamp.sec = tag, sec
    return msg


def rgb_jpeg_frame(rgb: np.ndarray, tag: str, sec: int) -> tuple[CompressedImage, Image]:
    """Return an rgb8 frame as image_transport sends it (BGR JPEG) and as OpenCV decodes it."""
    data = jpeg(np.ascontiguousarray(rgb[..., ::-1]))
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    return (compressed('rgb8; jpeg compressed bgr8', data, tag, sec),
            raw(np.ascontiguousarray(decoded), 'rgb8', tag, sec))


def mono_jpeg_frame(gray: np.ndarray, tag: str, sec: int) -> tuple[CompressedImage, Image]:
    data = jpeg(gray)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    return compressed('mono8; jpeg compressed ', data, tag, sec), raw(decoded, 'mono8', tag, sec)


class Twins:
    """One node started twice: ``compressed`` (image_transport) and ``raw``, under /ct/<name>."""

    def __init__(self, ros: RosHarness, module: str, inputs: list[tuple[str, type]],
                 output: tuple[str, type], params: tuple[str, ...] = ()):
        self.procs, self.pubs, self.outs = {}, {}, {}
        name = module.rsplit('.', 1)[1]
        self.namespaces = {t: f'/ct/{name}_{t}' for t in ('compressed', 'raw')}
        for transport, ns in self.namespaces.items():
            remaps = [arg for topic, _ in [*inputs, output]
                      for arg in ('-r', f'{topic}:={ns}/{topic}')]
            self.procs[transport] = NodeProcess(
                module, [*remaps, '-r', f'__node:={name}_{transport}',
                         '-p', f'image_transport:={transport}',
                         *(arg for p in params for arg in ('-p', p))])
            self.pubs[transport] = [
                ros.publisher(CompressedImage, f'{ns}/{topic}/compressed')
                if msg_type is Image and transport == 'compressed'
                else ros.publisher(msg_type, f'{ns}/{topic}') for topic, msg_type in inputs]
            self.outs[transport] = ros.collect(output[1], f'{ns}/{output[0]}')
        everything = [p for pubs in self.pubs.values() for p in pubs]
        assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in everything),
                              timeout=90.0), self.output()

    def output(self) -> str:
        return '\n'.join(f'--- {t}:\n{p.output()}' for t, p in self.procs.items())

    def publish(self, transport: str, msgs: list[Any]) -> None:
        for pub, msg in zip(self.pubs[transport], msgs):
            pub.publish(msg)

    def answer(self, transport: str, tag: str, timeout: float = 10.0) -> Any:
        return self.outs[transport].wait_for(
            lambda msgs: next((m for m in msgs if m.header.frame_id == tag), None), timeout)

    def ask(self, make: Callable[[str, int], dict[str, list[Any]]], tag: str) -> dict[str, Any]:
        """Send a frame made by ``make(tag, sec)`` to both until each answers; the answers."""
        attempts = itertools.count()

        def publish() -> str:
            attempt_tag = f'{tag}.{next(attempts)}'
            for transport, msgs in make(attempt_tag, next(STAMPS)).items():
                self.publish(transport, msgs)
            return attempt_tag
        return publish_until_answered(publish, self.outs, log=self.output)

    def stop(self) -> None:
        for proc in self.procs.values():
            assert proc.stop() == 0, proc.output()
            assert 'Traceback' not in proc.output()


@pytest.fixture(scope='class')
def surf(ros):
    twins = Twins(ros, 'cl_vision_nodes.ros.surf_node', [('image', Image)],
                  ('keypoints', PointCloud2))
    yield twins
    twins.stop()


def surf_frame(tag: str, sec: int) -> dict[str, list[Any]]:
    packed, decoded = rgb_jpeg_frame(colour(SURF_IMAGE), tag, sec)
    return {'compressed': [packed], 'raw': [decoded]}


class TestSurf:
    """surf_node: a JPEG frame and its decoded raw frame give the same keypoints."""

    def test_keypoints_of_a_jpeg_frame_equal_those_of_its_decoded_frame(self, surf):
        got = surf.ask(surf_frame, 'k')
        points = {t: cloud_to_array(m) for t, m in got.items()}
        assert len(points['raw']) > 20
        np.testing.assert_array_equal(points['compressed'], points['raw'])

    def test_each_instance_subscribes_only_its_transport(self, ros, surf):
        """New publishers on all four topics: only the two the nodes subscribe get a reader."""
        ns = surf.namespaces
        wanted = [ros.publisher(CompressedImage, f'{ns["compressed"]}/image/compressed'),
                  ros.publisher(Image, f'{ns["raw"]}/image')]
        unwanted = [ros.publisher(Image, f'{ns["compressed"]}/image'),
                    ros.publisher(CompressedImage, f'{ns["raw"]}/image/compressed')]
        assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in wanted))
        assert [p.get_subscription_count() for p in unwanted] == [0, 0]

    @pytest.mark.parametrize('format_, data, why', [
        ('rgb8; jpeg compressed bgr8', jpeg(SURF_IMAGE)[:200], 'do not decode'),
        ('rgb8; jpeg compressed bgr8', bytes(range(256)), 'not a JPEG stream'),
        ('16UC1; compressedDepth png', png(SURF_IMAGE), 'compressedDepth'),
    ], ids=['truncated', 'garbage', 'compressedDepth'])
    def test_malformed_data_is_logged_and_the_next_frame_answered(
            self, surf, format_, data, why):
        proc = surf.procs['compressed']
        bad = compressed(format_, data, 'bad', next(STAMPS))
        for _ in range(15):  # bad-input warnings are throttled: an earlier one may hold it back
            surf.publish('compressed', [bad])
            if proc.wait_for_output(why, 1.0):
                break
        assert why in proc.output() and 'frame skipped: compressed image' in proc.output(), \
            proc.output()
        assert surf.answer('compressed', 'bad', timeout=0.5) is None
        packed, _ = rgb_jpeg_frame(colour(SURF_IMAGE), 'good', next(STAMPS))
        publish_until_answered(lambda: surf.publish('compressed', [packed]),
                               surf.outs['compressed'], 'good', log=proc.output)


@pytest.fixture(scope='class')
def flow(ros):
    twins = Twins(ros, 'cl_vision_nodes.ros.flow_node', [('image', Image)], ('flow', Image),
                  ('method:=lk', 'pyramid_levels:=3'))
    yield twins
    twins.stop()


class TestFlow:
    """flow_node: JPEG frames and their decoded raw frames give the same flow."""

    def test_flow_of_jpeg_frames_equals_that_of_their_decoded_frames(self, flow):
        """
        Stream frames 0, 1, 0, 1, ... waiting for each answer; compare a flow of consecutive ones.

        A node answers every frame after its first; an answer to frame k whose predecessor was
        answered too (or k = 1) is the flow from frame k - 1, in both instances.
        """
        answered: dict[str, dict[int, Image]] = {'compressed': {}, 'raw': {}}
        for k in range(6):
            sec = next(STAMPS)
            packed, decoded = mono_jpeg_frame(FLOW_FRAMES[k % 2], f'f{sec}', sec)
            flow.publish('compressed', [packed])
            flow.publish('raw', [decoded])
            for transport in answered:
                got = flow.answer(transport, f'f{sec}', timeout=10.0 if k else 1.0)
                if got is not None:
                    answered[transport][k] = got
            usable = [j for j in range(1, k + 1) if all(
                j in a and (j == 1 or j - 1 in a) for a in answered.values())]
            if usable:
                break
        assert usable, flow.output()
        flows = {t: image_to_numpy(answered[t][usable[0]]) for t in answered}
        assert flows['raw'].shape == (60, 80, 2) and np.isfinite(flows['raw']).mean() > 0.5
        np.testing.assert_array_equal(flows['compressed'], flows['raw'])


def camera_info(right: bool) -> CameraInfo:
    height, width = PAIR.left.shape
    msg = CameraInfo(width=width, height=height)
    msg.p = [80.0, 0.0, width / 2, -20.0 if right else 0.0,
             0.0, 80.0, height / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


@pytest.fixture(scope='class')
def disparity(ros):
    inputs = [('left/image_rect', Image), ('right/image_rect', Image),
              ('left/camera_info', CameraInfo), ('right/camera_info', CameraInfo)]
    twins = Twins(ros, 'cl_vision_nodes.ros.disparity_node', inputs,
                  ('disparity', DisparityImage), ('disp_max:=16',))
    yield twins
    twins.stop()


def stereo_frame(tag: str, sec: int) -> dict[str, list[Any]]:
    """Return a bgr8 pair as PNG CompressedImages and as raw Images, with camera_infos."""
    left, right = (cv2.cvtColor(np.ascontiguousarray(colour(side)), cv2.COLOR_RGB2BGR)
                   for side in (PAIR.left, PAIR.right))
    infos = [camera_info(False), camera_info(True)]
    for msg in infos:
        msg.header.frame_id, msg.header.stamp.sec = tag, sec
    return {'compressed': [compressed('bgr8; png compressed bgr8', png(side), tag, sec)
                           for side in (left, right)] + infos,
            'raw': [raw(side, 'bgr8', tag, sec) for side in (left, right)] + infos}


class TestDisparity:
    """disparity_node: PNG pairs and their raw pairs give the same disparity."""

    def test_disparity_of_png_pairs_equals_that_of_the_raw_pairs(self, disparity):
        got = disparity.ask(stereo_frame, 'd')
        maps = {t: image_to_numpy(m.image) for t, m in got.items()}
        assert (maps['raw'] >= 0).mean() > 0.5
        np.testing.assert_array_equal(maps['compressed'], maps['raw'])
