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
sensor_msgs/Image <-> NumPy with real rclpy message objects (no DDS).

Most tests pin the built-in converter; the cv_bridge tests check the choice against what this
machine has (a real cv_bridge where installed) and against stand-ins for a working ROS 2
cv_bridge and a ROS 1 one that fails on NumPy 2, so both paths are exercised everywhere.
"""
from __future__ import annotations

import array
import importlib.util
import sys
import types
from typing import Any, Iterator

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import ALIASES, encoding_info, ENCODINGS, RawImage
from cl_vision_nodes.ros import image_conversion
from cl_vision_nodes.ros.image_conversion import (image_msg_to_raw, image_to_numpy, numpy_to_image,
                                                  raw_to_msg)
import numpy as np
import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import Header

RNG = np.random.default_rng(11)
BUILTIN = image_conversion.Converter(reason='chosen by the test')


@pytest.fixture(autouse=True)
def builtin_converter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """
    Test the built-in converter even where a ROS 2 cv_bridge is installed.

    The tests that probe cv_bridge ask for ``fresh_probe``.
    """
    if 'fresh_probe' not in request.fixturenames:
        monkeypatch.setattr(image_conversion, 'converter', lambda: BUILTIN)


def sample(encoding: str, height: int = 6, width: int = 9) -> np.ndarray:
    info = encoding_info(encoding)
    shape = (height, width) if info.channels == 1 else (height, width, info.channels)
    if info.dtype.kind == 'f':
        return RNG.normal(0, 10, shape).astype(info.dtype)
    return RNG.integers(0, np.iinfo(info.dtype).max, shape, endpoint=True).astype(info.dtype)


@pytest.mark.parametrize('encoding', [*ENCODINGS, *ALIASES])
def test_message_round_trip(encoding: str) -> None:
    info = encoding_info(encoding)
    a = sample(encoding)
    header = Header(frame_id='cam')
    header.stamp.sec = 42
    msg = numpy_to_image(a, encoding, header)
    assert isinstance(msg, Image) and isinstance(msg.data, array.array)
    assert (msg.encoding, msg.height, msg.width) == (info.name, 6, 9)
    assert msg.step == 9 * info.bytes_per_pixel and len(msg.data) == msg.step * msg.height
    assert bool(msg.is_bigendian) == (sys.byteorder == 'big')
    assert msg.header.frame_id == 'cam' and msg.header.stamp.sec == 42
    back = image_to_numpy(msg)
    assert back.dtype == info.dtype and back.shape == a.shape
    np.testing.assert_array_equal(back, a)
    assert np.shares_memory(back, np.frombuffer(msg.data, np.uint8))


@pytest.mark.parametrize('encoding', list(ENCODINGS))
def test_padded_message_is_read_in_place(encoding: str) -> None:
    info = ENCODINGS[encoding]
    a = sample(encoding)
    pad = 7
    rows = np.ascontiguousarray(a).reshape(a.shape[0], -1).view(np.uint8).reshape(a.shape[0], -1)
    buf = np.concatenate([rows, RNG.integers(0, 256, (a.shape[0], pad), dtype=np.uint8)], axis=1)
    msg = Image(height=a.shape[0], width=a.shape[1], encoding=encoding,
                is_bigendian=int(sys.byteorder == 'big'),
                step=a.shape[1] * info.bytes_per_pixel + pad)
    msg.data = array.array('B', buf.tobytes())
    raw = image_msg_to_raw(msg)
    assert raw.step == msg.step and np.shares_memory(raw.data, np.frombuffer(msg.data, np.uint8))
    out = image_to_numpy(msg)
    np.testing.assert_array_equal(out, a)
    assert np.shares_memory(out, np.frombuffer(msg.data, np.uint8))


def test_raw_to_msg_keeps_rows_and_names_the_encoding() -> None:
    a = sample('32FC1')
    raw = RawImage('32FC1', 6, 9, 36, False, np.ascontiguousarray(a))
    msg = raw_to_msg(raw, Header(frame_id='f'))
    assert isinstance(msg.data, array.array) and msg.data.tobytes() == a.tobytes()
    assert msg.header.frame_id == 'f'
    np.testing.assert_array_equal(image_to_numpy(msg), a)
    padded = RawImage('uyvy', 2, 3, 8, True, bytes(range(16)))
    msg = raw_to_msg(padded)
    assert (msg.encoding, msg.step, msg.is_bigendian, len(msg.data)) == ('yuv422', 8, 1, 16)
    with pytest.raises(ImageFormatError):
        raw_to_msg(RawImage('mono8', 2, 3, 3, False, bytes(5)))


def test_big_endian_message() -> None:
    a = sample('mono16')
    msg = Image(height=6, width=9, encoding='mono16', is_bigendian=1, step=18)
    msg.data = array.array('B', a.astype('>u2').tobytes())
    out = image_to_numpy(msg)
    assert out.dtype == np.uint16 and out.dtype.isnative
    np.testing.assert_array_equal(out, a)


def test_default_header_is_empty() -> None:
    msg = numpy_to_image(sample('mono8'), 'mono8')
    assert msg.header.frame_id == '' and msg.header.stamp.sec == 0


@pytest.mark.parametrize('msg', [
    Image(height=4, width=4, encoding='bgr16', step=24),
    Image(height=4, width=4, encoding='bgr8', step=8),
    Image(height=0, width=4, encoding='mono8', step=4),
    Image(height=4, width=4, encoding='mono8', step=4),  # no data
    Image(height=4, width=1, encoding='bayer_rggb8', step=1),
])
def test_malformed_message_raises(msg: Image) -> None:
    with pytest.raises(ImageFormatError):
        image_to_numpy(msg)


def test_bad_array_raises() -> None:
    with pytest.raises(ImageFormatError, match='HxWx3'):
        numpy_to_image(np.zeros((4, 4), np.uint8), 'rgb8')


class CvBridgeError(TypeError):
    """As in ROS 2's cv_bridge."""


class Ros2Bridge:
    """
    Stand-in for a working ROS 2 cv_bridge (packed rows, host byte order).

    It lacks the yuv422_yuy2 encoding, which cv_bridge gained only in later releases.
    """

    def cv2_to_imgmsg(self, cvim: np.ndarray, encoding: str = 'passthrough',
                      header: Header | None = None) -> Image:
        if encoding == 'yuv422_yuy2':
            raise CvBridgeError(f'Unrecognized image encoding [{encoding}]')
        msg = Image(height=cvim.shape[0], width=cvim.shape[1], encoding=encoding,
                    is_bigendian=int(sys.byteorder == 'big'))
        if header is not None:
            msg.header = header
        msg.data.frombytes(cvim.tobytes())
        msg.step = len(msg.data) // msg.height
        return msg

    def imgmsg_to_cv2(self, msg: Image, desired_encoding: str = 'passthrough') -> np.ndarray:
        info = encoding_info(msg.encoding)
        channels = () if info.channels == 1 else (info.channels,)
        return np.ndarray((msg.height, msg.width, *channels), info.dtype, buffer=msg.data)


class Ros1BridgeOnNumpy2(Ros2Bridge):
    """Stand-in for PyPI's cv-bridge 1.13, ROS 1 code that calls ndarray.tostring."""

    def cv2_to_imgmsg(self, cvim: np.ndarray, encoding: str = 'passthrough',
                      header: Header | None = None) -> Image:
        return cvim.tostring()  # AttributeError on NumPy 2, as there


def probe_with(monkeypatch: pytest.MonkeyPatch, bridge: type | None) -> image_conversion.Converter:
    """Return the converter chosen where ``cv_bridge`` is ``bridge`` (None: not installed)."""
    module = None
    if bridge is not None:
        module = types.ModuleType('cv_bridge')
        module.CvBridge, module.CvBridgeError = bridge, CvBridgeError
    monkeypatch.setitem(sys.modules, 'cv_bridge', module)
    image_conversion.converter.cache_clear()
    return image_conversion.converter()


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """Forget a probe made under a stand-in, before and after the test."""
    image_conversion.converter.cache_clear()
    yield
    image_conversion.converter.cache_clear()


def working_ros2_cv_bridge() -> Any:
    """
    Return this machine's cv_bridge where it is a working ROS 2 one, else None.

    Working means a mono8 round trip.
    """
    if importlib.util.find_spec('cv_bridge') is None:
        return None
    try:
        from cv_bridge import CvBridge
        bridge = CvBridge()
        gray = np.arange(6, dtype=np.uint8).reshape(2, 3)
        msg = bridge.cv2_to_imgmsg(gray, 'mono8')
        works = isinstance(msg, Image) and np.array_equal(bridge.imgmsg_to_cv2(msg), gray)
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    return bridge if works else None


def assert_same_messages(chosen: image_conversion.Converter,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every encoding through ``chosen`` gives the message and array the built-in gives."""
    header = Header(frame_id='cam')
    header.stamp.sec = 7
    for encoding in ENCODINGS:
        a = sample(encoding, 5, 7)
        with monkeypatch.context() as patch:
            patch.setattr(image_conversion, 'converter', lambda: chosen)
            theirs = numpy_to_image(a, encoding, header)
            back_theirs = image_to_numpy(theirs)
            patch.setattr(image_conversion, 'converter', lambda: BUILTIN)
            ours = numpy_to_image(a, encoding, header)
        for field in ('header', 'height', 'width', 'encoding', 'is_bigendian', 'step'):
            assert getattr(theirs, field) == getattr(ours, field), (encoding, field)
        assert bytes(theirs.data) == bytes(ours.data), encoding
        np.testing.assert_array_equal(back_theirs, image_to_numpy(ours), err_msg=encoding)
        assert back_theirs.dtype == a.dtype and back_theirs.shape == a.shape, encoding


def test_converter_choice_matches_what_is_importable(fresh_probe: None) -> None:
    chosen = image_conversion.converter()
    if working_ros2_cv_bridge() is not None:
        assert chosen.bridge is not None and 'mono8' in chosen.encodings, chosen
        assert image_conversion.converter_backend().startswith('cv_bridge for ')
    else:
        assert chosen.bridge is None and chosen.encodings == frozenset() and chosen.reason
        if importlib.util.find_spec('cv_bridge') is None:
            assert image_conversion.converter_backend() == 'built-in (cv_bridge is not installed)'


def test_installed_cv_bridge_gives_the_builtin_messages(fresh_probe: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if working_ros2_cv_bridge() is None:
        pytest.skip('no working ROS 2 cv_bridge here: the built-in converter is the only path')
    assert_same_messages(image_conversion.converter(), monkeypatch)


def test_working_bridge_is_used_where_it_agrees(fresh_probe: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = probe_with(monkeypatch, Ros2Bridge)
    assert isinstance(chosen.bridge, Ros2Bridge)
    assert chosen.encodings == frozenset(ENCODINGS) - {'yuv422_yuy2'}
    assert image_conversion.converter_backend().startswith('cv_bridge for 32FC1, 32FC2, ')
    assert_same_messages(chosen, monkeypatch)


@pytest.mark.parametrize('bridge, reason', [
    (None, 'cv_bridge is not installed'),
    (Ros1BridgeOnNumpy2, 'cv_bridge converts no encoding as the built-in does; mono8: '
                         "AttributeError: 'numpy.ndarray' object has no attribute 'tostring'"),
], ids=['absent', 'ros1'])
def test_unusable_bridge_leaves_the_builtin_with_the_reason(fresh_probe: None,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            bridge: type | None,
                                                            reason: str) -> None:
    chosen = probe_with(monkeypatch, bridge)
    assert chosen == image_conversion.Converter(reason=reason)
    assert image_conversion.converter_backend() == f'built-in ({reason})'
    a = sample('bgr8')
    np.testing.assert_array_equal(image_to_numpy(numpy_to_image(a, 'bgr8')), a)
