"""sensor_msgs/Image <-> NumPy with real rclpy message objects (no DDS), on the built-in converter."""
from __future__ import annotations

import array
import sys

import numpy as np
import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import ALIASES, ENCODINGS, RawImage, encoding_info
from cl_vision_nodes.ros import image_conversion
from cl_vision_nodes.ros.image_conversion import image_msg_to_raw, image_to_numpy, numpy_to_image, raw_to_msg

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def builtin_converter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test the built-in converter even where a ROS 2 cv_bridge is installed."""
    monkeypatch.setattr(image_conversion, '_BRIDGE', None)


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
                is_bigendian=int(sys.byteorder == 'big'), step=a.shape[1] * info.bytes_per_pixel + pad)
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


def test_backend_is_named() -> None:
    assert image_conversion.converter_backend() == 'builtin'
