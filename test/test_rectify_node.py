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
rectify_node over real Fast DDS, and raw cameras to points as stereo.launch.xml starts them.

By default that is a rectify_node per camera and disparity_node on their image_rect. The scene is
plane_scene.py's: a textured plane at a known depth seen by a distorted, rotated raw pair.
"""
from __future__ import annotations

from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.imaging.encodings import array_to_raw, raw_to_array
from cl_vision_nodes.opencl.runtime import ClRuntime
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from plane_scene import (ask_all, assert_cloud_of_the_plane, assert_plane_depth, calibration,
                         camera_info, Clock, DISPARITY, H, raw_pair_msgs, raw_view,
                         rectified_truth, tagged, W)
import pytest
from rosutil import image_to_numpy, NodeProcess, numpy_to_image, publish_until_answered, RosHarness
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

pytestmark = pytest.mark.ros

RECTIFY_NODE = '/rt/left/rectify_node'
RIGHT_NODE = '/rt/right/rectify_node'


class Camera:
    """A rectify_node in /rt/SIDE with the test's publishers and image_rect collector."""

    def __init__(self, ros: RosHarness, side: str):
        self.side, self.ns = side, f'/rt/{side}'
        self.proc = NodeProcess('cl_vision_nodes.ros.rectify_node',
                                ['-r', f'__ns:={self.ns}', '-p', 'diagnostics_period:=1.0'])
        self.image_pub = ros.publisher(Image, f'{self.ns}/image_raw')
        self.info_pub = ros.publisher(CameraInfo, f'{self.ns}/camera_info')
        self.rect = ros.collect(Image, f'{self.ns}/image_rect')
        assert ros.wait_until(lambda: self.image_pub.get_subscription_count() > 0
                              and self.info_pub.get_subscription_count() > 0), self.proc.output()

    def ask(self, tag: str, image: np.ndarray, encoding: str, info: CameraInfo | None = None,
            tries: int = 4) -> Image:
        def publish() -> None:
            sec = Clock.tick()
            if info is not None:
                info.header.stamp.sec = sec
                self.info_pub.publish(info)
            msg = numpy_to_image(image, encoding)
            msg.header.frame_id, msg.header.stamp.sec = tag, sec
            self.image_pub.publish(msg)
        return publish_until_answered(publish, self.rect, tag, tries=tries, timeout=5.0,
                                      log=self.proc.output)

    def warns(self, warning: str, tag: str, image: np.ndarray, encoding: str,
              info: CameraInfo | None = None) -> bool:
        """
        Send the image until the node logs ``warning``.

        Bad-input warnings are throttled: a previous test's may hold it back for a few seconds.
        """
        for _ in range(15):
            if info is not None:
                self.info_pub.publish(info)
            msg = numpy_to_image(image, encoding)
            msg.header.frame_id = tag
            self.image_pub.publish(msg)
            if self.proc.wait_for_output(warning, timeout=1.0):
                return True
        return False


@pytest.fixture(scope='module')
def cameras(ros):
    pair = {side: Camera(ros, side) for side in ('left', 'right')}
    yield pair
    for camera in pair.values():
        assert camera.proc.stop() == 0, camera.proc.output()
        assert 'Traceback' not in camera.proc.output()


def library_rectification(runtime: ClRuntime, image: np.ndarray, encoding: str, side: str,
                          interpolation: str = 'linear') -> np.ndarray:
    rectifier = Rectifier(runtime)
    rectifier.set_calibration(calibration(side))
    return raw_to_array(rectifier.rectify(array_to_raw(image, encoding), interpolation))


def test_an_image_just_before_the_first_camera_info_is_skipped_quietly(ros, cameras):
    """A driver's camera_info may come a moment after its first image: no warning at start."""
    right = cameras['right']
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')

    def counted(msgs):
        return next((values for m in msgs for s in m.status
                     if s.name.startswith(f'{RIGHT_NODE}:')
                     for values in [{v.key: v.value for v in s.values}]
                     if values['unmatched'] != '0'), None)
    found = None
    for _ in range(3):  # again only where the first was not delivered
        msg = numpy_to_image(raw_view('right'), 'mono8')
        msg.header.frame_id = 'early'
        right.image_pub.publish(msg)
        found = diagnostics.wait_for(counted, 10.0)
        if found:
            break
    assert found is not None, right.proc.output()
    assert found['rejected_bad_input'] == '0', found
    right.ask('after-early', raw_view('right'), 'mono8', camera_info('right', 'info', 0))
    assert tagged('early')(right.rect.messages) is None
    assert 'no camera_info' not in right.proc.output(), right.proc.output()


def test_images_without_camera_info_are_skipped_with_a_warning_naming_its_publisher(ros, cameras):
    left = cameras['left']
    warning = 'no camera_info 2 s into the images (/rt/left/camera_info: /'
    assert left.warns(warning, 'no-info', raw_view('left'), 'mono8'), left.proc.output()
    assert ', nothing arrived)' in left.proc.output(), left.proc.output()
    left.ask('after-no-info', raw_view('left'), 'mono8', camera_info('left', 'info', 0))
    # image_rect is published in the order of the images, so an output for a 'no-info' image
    # would have arrived before this one's
    assert tagged('no-info')(left.rect.messages) is None


@pytest.mark.parametrize('encoding', ['mono8', 'bgr8'])
def test_image_rect_is_the_librarys_rectification_in_the_raw_encoding(ros, cameras, runtime,
                                                                      encoding):
    left = cameras['left']
    image = raw_view('left', colour=encoding == 'bgr8')
    got = left.ask(f'rect-{encoding}', image, encoding, camera_info('left', 'info', 0))
    assert (got.encoding, got.width, got.height) == (encoding, W, H)
    rectified = image_to_numpy(got)
    np.testing.assert_array_equal(rectified,
                                  library_rectification(runtime, image, encoding, 'left'))
    gray = rectified if encoding == 'mono8' else rectified[..., 0]  # blue = the texture
    inside = np.zeros((H, W), bool)
    inside[4:-4, 4:-4] = True
    error = np.abs(gray.astype(np.float32) - rectified_truth('left'))[inside]
    assert error.mean() < 1.5, error.mean()  # the raw view's own resampling, rounded twice


def test_interpolation_is_set_live_and_checked(ros, cameras, runtime):
    left = cameras['left']
    with ros.changed_parameters(RECTIFY_NODE, interpolation='lanczos') as bad:
        assert not bad[0].successful and 'not one of nearest (0), linear (1), cubic (2)' \
            in bad[0].reason
    # image_proc's number for nearest, as its parameter files and `ros2 param set` give it
    with ros.changed_parameters(RECTIFY_NODE, interpolation=0) as results:
        assert all(r.successful for r in results), results
        got = left.ask('nearest', raw_view('left'), 'mono8', camera_info('left', 'info', 0))
    np.testing.assert_array_equal(image_to_numpy(got), library_rectification(
        runtime, raw_view('left'), 'mono8', 'left', 'nearest'))


def test_an_image_of_another_size_than_its_calibration_is_skipped(ros, cameras):
    left = cameras['left']
    info = camera_info('left', 'info', 0)
    small = np.ascontiguousarray(raw_view('left')[:, :W - 8])
    warning = f'image is {W - 8}x{H} but the calibration'
    assert left.warns(warning, 'wrong-size', small, 'mono8', info), left.proc.output()
    assert tagged('wrong-size')(left.rect.messages) is None
    left.ask('right-size-again', raw_view('left'), 'mono8', info)


def test_raw_pair_to_depth_and_points_through_rectify_nodes(ros, cameras):
    """stereo.launch.xml's default: rectify_node per camera, disparity_node on image_rect."""
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       ['-r', '__ns:=/rt', '-p', 'disp_max:=32'])
    try:
        pubs = [ros.publisher(Image, '/rt/left/image_raw'),
                ros.publisher(Image, '/rt/right/image_raw'),
                ros.publisher(CameraInfo, '/rt/left/camera_info'),
                ros.publisher(CameraInfo, '/rt/right/camera_info')]
        outputs = {'left_rect': cameras['left'].rect,
                   'disparity': ros.collect(DisparityImage, '/rt/disparity'),
                   'depth': ros.collect(Image, '/rt/depth'),
                   'points': ros.collect(PointCloud2, '/rt/points')}
        got = ask_all(pubs, lambda sec: raw_pair_msgs('raw-pair', sec), outputs, 'raw-pair',
                      tries=8, log=proc.output)
        stamp = got['disparity'].header.stamp
        for name in ('depth', 'points'):
            assert got[name].header.stamp == stamp and got[name].header.frame_id == 'raw-pair'
        assert cameras['right'].rect.wait_for(tagged('raw-pair/right')) is not None
        disparity = image_to_numpy(got['disparity'].image)
        valid = disparity >= got['disparity'].min_disparity
        assert valid.mean() > 0.5
        np.testing.assert_allclose(disparity[valid], DISPARITY)
        depth = image_to_numpy(got['depth'])
        assert got['depth'].encoding == '32FC1' and depth.shape == (H, W)
        assert np.array_equal(np.isfinite(depth), valid)
        assert_plane_depth(depth)
        assert_cloud_of_the_plane(got['points'], depth)
    finally:
        assert proc.stop() == 0, proc.output()
