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
The CDR layer (ros/cdr.py) against rclpy's own serialization, and once over real Fast DDS.

``rclpy.serialization`` is the oracle: what we parse is what it deserializes, what we write it
deserializes to the same message and is its bytes except for padding. Fast CDR leaves padding
uninitialised, so a byte where the two differ must be one rclpy ignores: flipping it in rclpy's
bytes leaves the deserialized message unchanged (and ours holds 0 there).
"""
import struct

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import ENCODINGS, raw_to_array, RawImage
from cl_vision_nodes.ros import cdr
import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from rosutil import Collector, image_msg_to_raw, RosHarness
from sensor_msgs.msg import CompressedImage, Image, PointCloud2, PointField
from std_msgs.msg import Header
from stereo_msgs.msg import DisparityImage

pytestmark = pytest.mark.ros  # rclpy's serialization and message classes are the oracle

# Serialized frame_id lengths (with the NUL) of every value mod 4, and multi-byte UTF-8.
FRAME_IDS = ['', 'a', 'ab', 'abc', 'abcd', 'left_camera_optical_frame', 'kamera/\u00fc\u00df']


def header(frame_id: str, sec: int = -7, nanosec: int = 999_999_999) -> Header:
    msg = Header(frame_id=frame_id)
    msg.stamp.sec, msg.stamp.nanosec = sec, nanosec
    return msg


def image_msg(encoding: str, height: int, width: int, pad: int = 0, is_bigendian: bool = False,
              frame_id: str = 'cam', extra: int = 0, seed: int = 0) -> Image:
    """Return an Image of random bytes, ``pad`` bytes per row beyond the pixels."""
    bpp = ENCODINGS[encoding].bytes_per_pixel if encoding in ENCODINGS else 1
    step = width * bpp + pad
    msg = Image(header=header(frame_id), height=height, width=width, encoding=encoding,
                is_bigendian=int(is_bigendian), step=step)
    data = np.random.default_rng(seed).integers(0, 256, step * height + extra, dtype=np.uint8)
    msg.data.frombytes(data)
    return msg


def assert_serializes_as(ours: bytes, msg) -> None:
    """Assert ``ours`` is rclpy's serialization of ``msg`` up to padding, zero padding."""
    theirs = serialize_message(msg)
    assert isinstance(ours, bytes) and len(ours) == len(theirs)
    expected = deserialize_message(theirs, type(msg))
    ours_u8, theirs_u8 = np.frombuffer(ours, np.uint8), np.frombuffer(theirs, np.uint8)
    for index in np.flatnonzero(ours_u8 != theirs_u8):
        assert ours_u8[index] == 0, f"byte {index}: ours is {ours_u8[index]}, not padding's 0"
        flipped = bytearray(theirs)
        flipped[index] ^= 0xff
        assert deserialize_message(bytes(flipped), type(msg)) == expected, (
            f"byte {index} differs from rclpy's and is not padding")
    assert deserialize_message(ours, type(msg)) == expected


def assert_parsed(parsed_header: cdr.CdrHeader, raw: RawImage, msg: Image, data: bytes) -> None:
    assert (parsed_header.sec, parsed_header.nanosec, parsed_header.frame_id) == (
        msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
    assert parsed_header.to_msg() == msg.header
    assert parsed_header.cdr == serialize_message(msg.header)[4:]
    assert (raw.encoding, raw.height, raw.width, raw.step, raw.is_bigendian) == (
        msg.encoding, msg.height, msg.width, msg.step, bool(msg.is_bigendian))
    assert raw.data.tobytes() == bytes(msg.data)
    assert raw.data.size == 0 or np.shares_memory(raw.data, np.frombuffer(data, np.uint8)), (
        'pixels were copied')


@pytest.mark.parametrize('encoding', ENCODINGS)
def test_image_parses_and_serializes_as_rclpy(encoding):
    for frame_id in FRAME_IDS:
        for pad, is_bigendian in ((0, False), (3, False), (0, True), (5, True)):
            msg = image_msg(encoding, 3, 5, pad, is_bigendian, frame_id)
            data = serialize_message(msg)
            parsed_header, raw = cdr.parse_image(data)
            assert_parsed(parsed_header, raw, msg, data)
            ours, theirs = raw_to_array(raw), raw_to_array(image_msg_to_raw(msg))
            assert ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()
            assert_serializes_as(cdr.serialize_image(parsed_header, raw), msg)
            assert_serializes_as(cdr.serialize_image(msg.header, raw), msg)


def test_empty_images_and_data_beyond_step_times_height():
    for msg in (Image(), Image(encoding='mono8', width=4, step=4),
                image_msg('bgr8', 2, 3, extra=5), image_msg('32FC2', 1, 1, extra=3)):
        data = serialize_message(msg)
        parsed_header, raw = cdr.parse_image(data)
        assert_parsed(parsed_header, raw, msg, data)
        assert_serializes_as(cdr.serialize_image(parsed_header, raw), msg)


def test_any_buffer_of_the_bytes_parses():
    msg = image_msg('mono16', 4, 3, pad=2)
    data = serialize_message(msg)
    for buffer in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert_parsed(*cdr.parse_image(buffer), msg, buffer)


def big_endian_image(msg: Image) -> bytes:
    """Serialize ``msg`` as CDR_BE by hand (rclpy writes only host order), padding 0xee."""
    def string(offset: int, text: str) -> bytes:
        data = text.encode() + b'\0'
        return b'\xee' * (-offset % 4) + struct.pack('>I', len(data)) + data

    body = struct.pack('>iI', msg.header.stamp.sec, msg.header.stamp.nanosec)
    body += string(len(body), msg.header.frame_id)
    body += b'\xee' * (-len(body) % 4) + struct.pack('>II', msg.height, msg.width)
    body += string(len(body), msg.encoding) + bytes([msg.is_bigendian])
    body += b'\xee' * (-len(body) % 4) + struct.pack('>II', msg.step, len(msg.data))
    return b'\x00\x00\x00\x00' + body + bytes(msg.data)


def test_big_endian_cdr_parses_and_is_written_back_little_endian():
    for frame_id in FRAME_IDS:
        for encoding in ('mono8', '32FC2', 'yuv422'):
            msg = image_msg(encoding, 2, 3, pad=1, frame_id=frame_id)
            data = big_endian_image(msg)
            assert deserialize_message(data, Image) == msg  # rclpy reads the same message
            parsed_header, raw = cdr.parse_image(data)
            assert_parsed(parsed_header, raw, msg, data)
            assert_serializes_as(cdr.serialize_image(parsed_header, raw), msg)


def test_header_stamp_is_read_and_rewritten_in_either_byte_order():
    """The stamp alone changes, as rclpy reads it back; the other bytes stay as they were."""
    msg = image_msg('bgr8', 2, 3, pad=1, frame_id='abc')
    stamp_ns = 12_345_678_901
    for data in (serialize_message(msg), big_endian_image(msg)):
        assert cdr.read_stamp(data) == -7 * 1_000_000_000 + 999_999_999
        stamped = cdr.with_stamp(data, stamp_ns)
        assert isinstance(stamped, bytes) and cdr.read_stamp(stamped) == stamp_ns
        assert stamped[:4] == data[:4] and stamped[12:] == data[12:]
        back = deserialize_message(stamped, Image)
        assert (back.header.stamp.sec, back.header.stamp.nanosec) == (12, 345_678_901)
        assert back.data == msg.data and back.header.frame_id == msg.header.frame_id
    with pytest.raises(ImageFormatError, match='header.stamp'):
        cdr.read_stamp(serialize_message(msg)[:10])
    with pytest.raises(ImageFormatError, match='PL_CDR_LE'):
        cdr.with_stamp(b'\x00\x03\x00\x00' + bytes(8), stamp_ns)


@pytest.mark.parametrize('order, ident', [('big', 0x0006), ('little', 0x0007)])
def test_plain_cdr2_reads_as_cdr(order, ident):
    """XCDR2's plain encoding of Image and CompressedImage is XCDR1's bytes."""
    msg = image_msg('bgr8', 2, 2, pad=1, frame_id='ab')
    cdr1 = big_endian_image(msg) if order == 'big' else serialize_message(msg)
    data = struct.pack('>H', ident) + cdr1[2:]
    assert_parsed(*cdr.parse_image(data), msg, data)


@pytest.mark.parametrize('ident, name', [
    (0x0002, 'PL_CDR_BE'), (0x0003, 'PL_CDR_LE'), (0x0004, 'XML'), (0x0008, 'DELIMIT_CDR2_BE'),
    (0x0009, 'DELIMIT_CDR2_LE'), (0x000a, 'PL_CDR2_BE'), (0x000b, 'PL_CDR2_LE'),
    (0x0100, 'unknown'), (0xffff, 'unknown')])
def test_other_encapsulations_are_refused_by_name(ident, name):
    data = struct.pack('>H', ident) + serialize_message(image_msg('mono8', 2, 2))[2:]
    with pytest.raises(ImageFormatError, match=f'{name} \\(0x{ident:04x}\\) is not supported'):
        cdr.parse_image(data)


def test_truncated_messages_are_refused():
    msg = image_msg('bgr8', 2, 3, pad=1, frame_id='abc')
    compressed = CompressedImage(header=header('left'), format='jpeg', data=b'\xff\xd8\xff\xe0')
    for parse, data in ((cdr.parse_image, serialize_message(msg)),
                        (cdr.parse_compressed_image, serialize_message(compressed))):
        for end in range(len(data)):
            with pytest.raises(ImageFormatError, match='serialized sensor_msgs/.*byte'):
                parse(data[:end])


def test_lying_fields_are_refused_with_the_field_named():
    msg = image_msg('bgr8', 2, 3, frame_id='cam')
    data = serialize_message(msg)
    # The layout these offsets assume: frame_id at 12, encoding at 28, step and data length at 40.
    assert data[12:20] == struct.pack('<I', 4) + b'cam\0'
    assert data[28:37] == struct.pack('<I', 5) + b'bgr8\0'
    assert data[40:48] == struct.pack('<II', 9, 18)

    def edited(offset: int, value: bytes | int) -> bytes:
        """Return ``data`` with ``value`` (bytes, or an int as a uint32) at ``offset``."""
        value = struct.pack('<I', value) if isinstance(value, int) else value
        return data[:offset] + value + data[offset + len(value):]

    cases = [
        (edited(12, 0xffffffff), r'header\.frame_id at byte 16 needs 4294967295'),
        (edited(12, 200), r'header\.frame_id at byte 16 needs 200 bytes'),
        (edited(19, b'x'), r'header\.frame_id at byte 16 does not end with its NUL'),
        (edited(17, b'\xff'), r'header\.frame_id at byte 16 is not UTF-8'),
        (edited(28, 0x7fffffff), r'encoding at byte 32 needs 2147483647'),
        (edited(36, b'!'), r'encoding at byte 32 does not end with its NUL'),
        (edited(44, 19), r'data at byte 48 needs 19 bytes; the message has 66'),
        (edited(44, 17), r'data has 17 bytes; expected step\*height = 9\*2'),
        (edited(40, 10), r'expected step\*height = 10\*2 = 20'),
        (edited(20, 0xffffffff), r'data has 18 bytes; expected step\*height'),
    ]
    for bad, message in cases:
        with pytest.raises(ImageFormatError, match=message):
            cdr.parse_image(bad)


def test_garbage_in_any_field_gives_image_format_error_or_a_message():
    """Whatever a lying sender puts anywhere, parsing raises ImageFormatError or succeeds."""
    data = serialize_message(image_msg('mono8', 2, 2, frame_id='ab'))
    compressed = serialize_message(CompressedImage(header=header('x'), format='png', data=b'ab'))
    rng = np.random.default_rng(1)
    words = [0, 1, 3, 0x7fffffff, 0x80000000, 0xffffffff, *rng.integers(0, 2**32, 8).tolist()]
    for parse, base in ((cdr.parse_image, data), (cdr.parse_compressed_image, compressed)):
        for offset in range(4, len(base) - 3):
            for word in words:
                try:
                    parse(base[:offset] + struct.pack('<I', word) + base[offset + 4:])
                except ImageFormatError as exc:
                    assert str(exc).startswith('serialized sensor_msgs/')


@pytest.mark.parametrize('frame_id', FRAME_IDS)
def test_compressed_image_parses_as_rclpy(frame_id):
    for format_ in ('', 'jpeg', 'png', 'bgr8; jpeg compressed bgr8'):
        for size in (0, 1, 5, 64):
            msg = CompressedImage(header=header(frame_id, 12, 34), format=format_,
                                  data=bytes(range(size)))
            data = serialize_message(msg)
            parsed_header, frame = cdr.parse_compressed_image(data)
            assert parsed_header.to_msg() == msg.header
            assert parsed_header.cdr == serialize_message(msg.header)[4:]
            assert frame.format == format_
            assert frame.data.tobytes() == bytes(msg.data)
            assert size == 0 or np.shares_memory(frame.data, np.frombuffer(data, np.uint8))


def test_framing_joins_any_buffer_of_the_payload():
    flow = np.random.default_rng(2).standard_normal((4, 5, 2)).astype(np.float32)
    framing = cdr.image_framing(header('cam'), '32FC2', 4, 5, 40)
    joined = framing.join(flow)
    msg = Image(header=header('cam'), height=4, width=5, encoding='32FC2', step=40)
    msg.data.frombytes(flow.tobytes())
    assert_serializes_as(joined, msg)
    for payload in (flow.tobytes(), bytearray(flow.tobytes()), memoryview(flow)):
        assert framing.join(payload) == joined


def test_payloads_that_do_not_fit_are_refused():
    framing = cdr.image_framing(header('cam'), 'mono8', 4, 6, 6)
    frame = np.zeros((4, 8), np.uint8)
    with pytest.raises(ImageFormatError, match='not C-contiguous'):
        framing.join(frame[:, :6])
    with pytest.raises(ImageFormatError, match='has 32 bytes; its framing was made for 24'):
        framing.join(frame)
    with pytest.raises(ImageFormatError, match='expected at least step\\*height = 24'):
        cdr.image_framing(header('cam'), 'mono8', 4, 6, 6, size=23)


DISPARITY_FIELDS = {'f': 718.856, 't': 0.537, 'min_disparity': 0.0, 'max_disparity': 63.75,
                    'delta_d': 0.1}


def disparity_msg(outer: Header, inner: Header, disparity: np.ndarray,
                  window: tuple[int, int, int, int]) -> DisparityImage:
    msg = DisparityImage(header=outer, **DISPARITY_FIELDS)
    height, width = disparity.shape
    msg.image = Image(header=inner, height=height, width=width, encoding='32FC1', step=4 * width)
    msg.image.data.frombytes(disparity.tobytes())
    roi = msg.valid_window
    roi.x_offset, roi.y_offset, roi.width, roi.height = window
    return msg


@pytest.mark.parametrize('frame_id', FRAME_IDS)
def test_disparity_image_serializes_as_rclpy(frame_id):
    rng = np.random.default_rng(3)
    outer, window = header(frame_id, 5, 6), (1, 2, 3, 1)
    for height, width in ((3, 5), (1, 1), (0, 0)):
        disparity = rng.uniform(-1, 64, (height, width)).astype(np.float32)
        for inner in (None, header(frame_id + '_image', 8, 9)):
            framing = cdr.disparity_framing(outer, height, width, valid_window=window,
                                            image_header=inner, **DISPARITY_FIELDS)
            assert_serializes_as(framing.join(disparity),
                                 disparity_msg(outer, inner or outer, disparity, window))


def cloud_fields(names: list[str]) -> list[PointField]:
    datatypes = [PointField.FLOAT32, PointField.INT8, PointField.UINT16, PointField.FLOAT64]
    return [PointField(name=name, offset=4 * index, datatype=datatypes[index % 4], count=index + 1)
            for index, name in enumerate(names)]


@pytest.mark.parametrize('frame_id', FRAME_IDS)
def test_point_cloud_serializes_as_rclpy(frame_id):
    rng = np.random.default_rng(4)
    for names in ([], ['x'], ['x', 'y', 'z', 'rgb'], ['size', 'angle', 'octave', 'descriptor']):
        for height, width, is_dense in ((1, 7, True), (2, 3, False), (1, 0, True)):
            point_step = 4 * len(names) + 3
            payload = rng.integers(0, 256, (height, width, point_step), dtype=np.uint8)
            framing = cdr.cloud_framing(header(frame_id, 1, 2), height, width,
                                        cloud_fields(names), point_step, point_step * width,
                                        is_dense=is_dense)
            msg = PointCloud2(header=header(frame_id, 1, 2), height=height, width=width,
                              fields=cloud_fields(names), is_bigendian=False,
                              point_step=point_step, row_step=point_step * width,
                              is_dense=is_dense)
            msg.data.frombytes(payload.tobytes())
            assert_serializes_as(framing.join(payload), msg)


def test_hd_frame_published_as_bytes_arrives_bit_exact_and_parses():
    """One rclpy node publishes serialized bytes, another takes them raw, over Fast DDS."""
    # The large-image Fast DDS profile is set by conftest.py, as use_large_image_profile would.
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
    frame = np.random.default_rng(5).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    data = cdr.image_framing(header('camera'), 'bgr8', 720, 1280, 3 * 1280).join(frame)
    sender, receiver = RosHarness('cdr_sender'), RosHarness('cdr_receiver')
    try:
        received = Collector()
        receiver.node.create_subscription(Image, '/cdr/image', received, qos, raw=True)
        publisher = sender.node.create_publisher(Image, '/cdr/image', qos)
        assert sender.wait_until(lambda: publisher.get_subscription_count() > 0
                                 and receiver.node.count_publishers('/cdr/image') > 0)
        publisher.publish(data)
        got = received.wait_for(lambda messages: messages[0] if messages else None)
        assert got is not None, 'the frame did not arrive'
        assert isinstance(got, bytes) and got == data
        parsed_header, raw = cdr.parse_image(got)
        assert parsed_header.to_msg() == header('camera')
        assert np.array_equal(raw_to_array(raw), frame)
    finally:
        sender.close()
        receiver.close()
