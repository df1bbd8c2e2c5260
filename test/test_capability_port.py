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
The nodes' capabilities run on a port of the test's own (fakeport.FakePort): no node, no DDS.

Each answer is checked against the algorithm object run directly on the same frames, and the
pictures against whether their output is wanted.
"""
from __future__ import annotations

from cl_vision_nodes.dataio.synthetic import flow_pair, stereo_pair, texture
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.cdr import parse_image
from cl_vision_nodes.ros.disparity_capability import DisparityCapability
from cl_vision_nodes.ros.flow_capability import FlowCapability
from cl_vision_nodes.ros.frame_stats import FrameTiming
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_keypoints
from cl_vision_nodes.ros.node_port import ImageFrame
from cl_vision_nodes.ros.surf_capability import SurfCapability
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.schema import SURF_SCHEMA
from fakeport import FakePort
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

pytestmark = pytest.mark.ros


def frame(gray: np.ndarray, sec: int) -> ImageFrame:
    """Return ``gray`` as a node reads a received mono8 Image stamped ``sec``."""
    msg = Image(height=gray.shape[0], width=gray.shape[1], encoding='mono8', step=gray.shape[1],
                data=gray.tobytes())
    msg.header.stamp.sec, msg.header.frame_id = sec, 'camera'
    header, raw = parse_image(serialize_message(msg))
    return ImageFrame(header, raw, FrameTiming())


@pytest.fixture(scope='module')
def runtime():
    return ClRuntime('auto')


@pytest.mark.parametrize('method', ['lk', 'dis'])
def test_flow_capability_publishes_the_estimators_flow_and_its_span(runtime, method):
    sample = flow_pair(48, 64, seed=2)
    values = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), {'method': method})
    port = FakePort()
    flow = FlowCapability(port, runtime, values)
    flow.connect()
    frames = [frame(sample.frame0, 10), frame(sample.frame1, 11)]
    for index, image in enumerate(frames):
        picture = flow.start_frame(image)()
        picture()
        flow.arm()  # as flow_node: the next frame's work enqueued ahead (none comes)
        if index == 0:
            assert port.take() == []  # the first frame of a stream has no flow
    published = port.take()
    assert [(p.topic, p.kind) for p in published] == [('flow', 'image'), ('flow/span', 'message')]
    encoding, got = published[0].value
    direct = FlowEstimator(runtime, values)
    want = direct.estimate(sample.frame0, sample.frame1)
    assert encoding == '32FC2' and got.shape == (48, 64, 2)
    np.testing.assert_array_equal(got, want)
    span = published[1].value
    assert (span.time_ref.sec, span.header.stamp.sec) == (10, 11)
    assert {'compute', 'download'} <= set(port.stages)


def test_the_flow_picture_is_drawn_only_while_wanted(runtime):
    sample = flow_pair(40, 56, seed=3)
    values = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), {'method': 'lk'})
    port = FakePort(wanted={'flow/color'})
    flow = FlowCapability(port, runtime, values, prefix='flow.')
    flow.connect()
    images = DeviceImages(runtime)
    for index, gray in enumerate((sample.frame0, sample.frame1)):
        image = frame(gray, 20 + index)
        flow.start(image, images.decode(image.raw, f'frame{index}'))()()
    published = port.take()
    assert [p.topic for p in published] == ['flow', 'flow/span', 'flow/color']
    encoding, picture = published[2].value
    assert encoding == 'bgr8' and picture.shape == (40, 56, 3)
    assert 'flow.visual' in port.stages and all(s.startswith('flow.') for s in port.stages)


@pytest.mark.parametrize('wanted', [set(), {'keypoints/image'}])
def test_surf_capability_publishes_the_extractors_keypoints(runtime, wanted):
    gray = texture(96, 128, seed=4).astype(np.uint8)
    values = SURF_SCHEMA.defaults()
    port = FakePort(wanted)
    surf = SurfCapability(port, runtime, values)
    surf.connect()
    image = frame(gray, 5)
    surf.process(image, DeviceImages(runtime).decode(image.raw))()
    published = port.take()
    assert [p.topic for p in published] == ['keypoints', *sorted(wanted)]
    cloud = deserialize_message(published[0].value, PointCloud2)
    got = cloud_to_keypoints(cloud)
    want = SurfExtractor(runtime, values).detect_and_describe(gray_to_raw(gray))
    assert len(got) == len(want) > 10
    np.testing.assert_array_equal(got.to_structured(), want.to_structured())
    assert cloud.header.stamp.sec == 5 and cloud.header.frame_id == 'camera'


def camera_info(width: int, height: int, right: bool) -> CameraInfo:
    """Return a rectified camera's info: fx 100 px, baseline 0.25 m on the right."""
    msg = CameraInfo(width=width, height=height)
    msg.p = [100.0, 0.0, width / 2, -25.0 if right else 0.0,
             0.0, 100.0, height / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
    msg.k = [100.0, 0.0, width / 2, 0.0, 100.0, height / 2, 0.0, 0.0, 1.0]
    return msg


@pytest.mark.parametrize('wanted', [set(), {'depth', 'disparity/color'}])
def test_disparity_capability_publishes_the_matchers_map(runtime, wanted):
    sample = stereo_pair(64, 96, seed=6, max_disparity=12.0)
    values = ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), {'disp_max': 32})
    port = FakePort(wanted)
    disparity = DisparityCapability(port, runtime, DeviceImages(runtime), values)
    disparity.connect()
    left, right = frame(sample.left, 7), frame(sample.right, 7)
    infos = camera_info(96, 64, False), camera_info(96, 64, True)
    pair = disparity.decode_pair(left, right, *infos)
    disparity.process(left, pair, *infos)()
    published = port.take()
    extras = [topic for topic in ('disparity/color', 'depth') if topic in wanted]
    assert [p.topic for p in published] == ['disparity', *extras]  # the picture first
    msg = deserialize_message(published[0].value, DisparityImage)
    got = np.frombuffer(bytes(msg.image.data), np.float32).reshape(64, 96)
    raw = ElasMatcher(runtime, values).compute_gray(sample.left, sample.right)
    d_min = float(values['disp_min'])
    want = np.where(np.isnan(raw) | (raw < d_min), d_min - 1, raw).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert (msg.f, msg.t, msg.header.stamp.sec) == (100.0, 0.25, 7)
    if wanted:
        depth = next(p for p in published if p.topic == 'depth')
        assert depth.value[0] == '32FC1' and depth.value[1].shape == (64, 96)
        assert {'depth', 'visual'} <= set(port.stages)
