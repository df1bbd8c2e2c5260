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

from cl_vision_nodes.dataio.synthetic import flow_pair, texture
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.cdr import parse_image
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
from sensor_msgs.msg import Image, PointCloud2

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
    images = DeviceImages(runtime)
    frames = [frame(sample.frame0, 10), frame(sample.frame1, 11)]
    for index, image in enumerate(frames):
        picture = flow.process(image, images.decode(image.raw, f'frame{index}'))
        picture()
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
        flow.process(image, images.decode(image.raw, f'frame{index}'))()
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
