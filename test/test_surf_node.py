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
surf_node over real Fast DDS.

The keypoint cloud equals the library's result, parameters apply to the next frame, the overlay on
demand, empty and tiny frames, bad input.
"""
from __future__ import annotations

import itertools

from cl_vision_nodes.dataio.synthetic import texture
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.keypoint_cloud import (cloud_to_array, cloud_to_keypoints,
                                                POINT_FIELD_TYPES)
from cl_vision_nodes.surf.extractor import SurfExtractor
import numpy as np
import pytest
from rosutil import image_to_numpy, NodeProcess, numpy_to_image, publish_until_answered
from sensor_msgs.msg import Image, PointCloud2, PointField

pytestmark = pytest.mark.ros

NODE = 'surf_node'
IMAGE = texture(120, 160, seed=4).astype(np.uint8)


def tagged(pixels: np.ndarray, tag: str, encoding: str = 'mono8') -> Image:
    msg = numpy_to_image(pixels, encoding)
    msg.header.frame_id = tag
    return msg


@pytest.fixture(scope='module')
def node(ros):
    proc = NodeProcess('cl_vision_nodes.ros.surf_node',
                       ['-r', 'image:=/surf_test/image', '-r', 'keypoints:=/surf_test/keypoints',
                        '-r', 'keypoints/image:=/surf_test/keypoints/image'])
    pub = ros.publisher(Image, '/surf_test/image')
    out = ros.collect(PointCloud2, '/surf_test/keypoints')
    assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()
    yield proc, pub, out
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


def ask(ros, node, msg: Image) -> PointCloud2:
    proc, pub, out = node
    return publish_until_answered(lambda: pub.publish(msg), out, msg.header.frame_id, tries=5,
                                  timeout=15.0, log=proc.output)


def library_keypoints(params=None):
    return SurfExtractor(ClRuntime('auto'), params).detect_and_describe(IMAGE)


def test_cloud_layout_and_content_equal_the_library(ros, node):
    cloud = ask(ros, node, tagged(IMAGE, 'k1'))
    assert [f.name for f in cloud.fields] == ['x', 'y', 'size', 'angle', 'response', 'octave',
                                              'laplacian', 'descriptor']
    assert cloud.fields[-1].count == 64 and cloud.height == 1
    points = cloud_to_array(cloud)
    ours = library_keypoints()
    assert len(points) == len(ours) > 20
    np.testing.assert_array_equal(points['x'], ours.x)
    np.testing.assert_array_equal(points['octave'], ours.octave)
    np.testing.assert_array_equal(points['descriptor'], ours.descriptor)
    assert np.all(np.diff(points['response']) <= 0)  # strongest first


def test_parameters_apply_to_the_next_frame(ros, node):
    with ros.changed_parameters(NODE, extended=True, hessian_threshold=400.0) as results:
        assert all(r.successful for r in results), results
        got = cloud_to_keypoints(ask(ros, node, tagged(IMAGE, 'k2')))
    assert got.descriptor.shape[1] == 128
    assert len(got) == len(library_keypoints({'extended': True, 'hessian_threshold': 400.0}))


@pytest.mark.parametrize('change, reason', [
    ({'n_octaves': 0}, 'n_octaves'), ({'hessian_threshold': -5.0}, 'hessian_threshold'),
    ({'max_keypoints': 70000}, 'max_keypoints'),
    ({'upright': 'yes'}, "upright: expected bool, got str 'yes'")])
def test_absurd_parameters_are_refused(ros, node, change, reason):
    with ros.changed_parameters(NODE, **change) as results:
        assert not results[0].successful and reason in results[0].reason, results[0].reason


@pytest.mark.parametrize('pixels', [np.full((120, 160), 77, np.uint8),
                                    np.zeros((5, 7), np.uint8)], ids=['flat', 'tiny'])
def test_textureless_and_tiny_frames_give_an_empty_cloud(ros, node, pixels):
    cloud = ask(ros, node, tagged(pixels, f'empty-{pixels.shape}'))
    assert cloud.width == 0 and len(cloud.data) == 0 and len(cloud_to_array(cloud)) == 0


def test_overlay_when_subscribed(ros, node):
    overlay = ros.collect(Image, '/surf_test/keypoints/image')
    assert ros.wait_until(lambda: overlay.publisher_count() > 0)
    colour = np.repeat(IMAGE[:, :, None], 3, 2)
    attempts = itertools.count()  # the node may see the new subscriber after we see it: again

    def keypoints_of_a_new_frame() -> str:
        tag = f'k3-{next(attempts)}'
        ask(ros, node, tagged(colour, tag, 'bgr8'))
        return tag
    got = publish_until_answered(keypoints_of_a_new_frame, overlay, tries=3, timeout=5.0,
                                 log=node[0].output)
    assert got.encoding == 'bgr8'
    picture = image_to_numpy(got)
    assert picture.shape == (120, 160, 3) and (picture[..., 0] != picture[..., 1]).any()


def test_bad_frame_is_skipped(ros, node):
    proc, pub, _ = node
    for _ in range(20):
        pub.publish(tagged(np.zeros((4, 4, 2), np.float32), 'bad', '32FC2'))
        if ros.wait_until(lambda: 'two-channel field' in proc.output(), timeout=1.0):
            break
    assert 'two-channel field' in proc.output()
    assert len(cloud_to_array(ask(ros, node, tagged(IMAGE, 'k4')))) > 20 and proc.alive()


def test_the_cloud_field_types_are_the_point_field_constants():
    """keypoint_cloud imports no ROS: its datatype codes are sensor_msgs/PointField's own."""
    constants = {PointField.INT8: 'i1', PointField.UINT8: 'u1', PointField.INT16: 'i2',
                 PointField.UINT16: 'u2', PointField.INT32: 'i4', PointField.UINT32: 'u4',
                 PointField.FLOAT32: 'f4', PointField.FLOAT64: 'f8'}
    assert POINT_FIELD_TYPES == constants
