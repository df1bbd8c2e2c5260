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
CompressedImage decoding (dataio/compressed.py) on payloads made as image_transport makes them.

Each case builds the payload the way compressed_publisher.cpp does (colour converted to the
order named after 'compressed', then cv2.imencode) from a generated image in the publisher's
encoding. PNG must give that image back exactly; JPEG within a small error, and exactly what
OpenCV decodes with the channels moved by NumPy indexing (so a swapped order fails either way).
"""
import struct
import zlib

from bagutil import TS
from cl_vision_nodes.dataio.compressed import CompressedFormat, decode_compressed, parse_format
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import ENCODINGS, raw_to_array
from cl_vision_nodes.ros.cdr import parse_compressed_image
import cv2
import numpy as np
import pytest

JPEG_MEAN_ERROR = 4.0  # 2x2 images; 1.1 at 37x53 and up, a swapped channel order gives 60+
JPEG_MAX_ERROR = 24


def smooth_image(encoding: str, height: int = 37, width: int = 53) -> np.ndarray:
    """Return a smooth image of ``encoding`` (JPEG-friendly), each channel a different wave."""
    info = ENCODINGS[encoding]
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    top = np.iinfo(info.dtype).max
    planes = [(0.5 + 0.45 * np.sin(x / (9 + 4 * c) + y / (11 + 3 * c) + 2 * c)) * top
              for c in range(info.channels)]
    image = np.stack(planes, axis=-1) if info.channels > 1 else planes[0]
    return np.rint(image).astype(info.dtype)


def encode(image: np.ndarray, codec: str, channels: list[int] | None = None) -> bytes:
    """Encode ``image`` with its channels picked by ``channels`` (the publisher's conversion)."""
    stored = image if channels is None else np.ascontiguousarray(image[..., channels])
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if codec == 'jpeg' else []
    ok, data = cv2.imencode('.jpg' if codec == 'jpeg' else '.png', stored, params)
    assert ok
    return data.tobytes()


def expected_from_codec(data: bytes, image: np.ndarray, stored: list[int] | None) -> np.ndarray:
    """Return the decode of ``data`` with each channel put back where ``stored`` took it from."""
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if stored is None:
        return decoded
    expected = np.full(image.shape, 255, image.dtype)
    expected[..., stored] = decoded
    return expected


# (format, publisher's encoding, codec, channels of the image the codec stores)
VARIANTS = [
    ('bgr8; jpeg compressed bgr8', 'bgr8', 'jpeg', [0, 1, 2]),
    ('rgb8; jpeg compressed bgr8', 'rgb8', 'jpeg', [2, 1, 0]),
    ('bgra8; jpeg compressed bgr8', 'bgra8', 'jpeg', [0, 1, 2]),
    ('rgba8; jpeg compressed bgr8', 'rgba8', 'jpeg', [2, 1, 0]),
    ('mono8; jpeg compressed ', 'mono8', 'jpeg', None),
    ('bgr8; png compressed bgr8', 'bgr8', 'png', [0, 1, 2]),
    ('rgb8; png compressed bgr8', 'rgb8', 'png', [2, 1, 0]),
    ('bgra8; png compressed bgra8', 'bgra8', 'png', [0, 1, 2, 3]),
    ('rgba8; png compressed bgra8', 'rgba8', 'png', [2, 1, 0, 3]),
    ('rgba8; png compressed rgba8', 'rgba8', 'png', [0, 1, 2, 3]),
    ('bgra8; png compressed bgr8', 'bgra8', 'png', [0, 1, 2]),
    ('rgb8; png compressed ', 'rgb8', 'png', [0, 1, 2]),
    ('mono8; png compressed ', 'mono8', 'png', None),
    ('mono16; png compressed ', 'mono16', 'png', None),
    ('bayer_rggb8; png compressed ', 'bayer_rggb8', 'png', None),
]


@pytest.mark.parametrize('format_, encoding, codec, stored', VARIANTS,
                         ids=[v[0] for v in VARIANTS])
@pytest.mark.parametrize('size', [(37, 53), (2, 2), (480, 640)], ids=str)
def test_round_trip(format_: str, encoding: str, codec: str, stored: list[int] | None,
                    size: tuple[int, int]) -> None:
    image = smooth_image(encoding, *size)
    data = encode(image, codec, stored)
    raw = decode_compressed(format_, data)
    info = ENCODINGS[encoding]
    assert (raw.encoding, raw.height, raw.width, raw.step) == (
        encoding, size[0], size[1], size[1] * info.bytes_per_pixel)
    got = raw_to_array(raw)
    assert got.dtype == info.dtype and got.shape == image.shape
    if stored is not None and len(stored) < info.channels:  # alpha not stored: opaque
        assert np.all(got[..., 3] == 255)
        got, image = got[..., :3], image[..., :3]
    if codec == 'png':
        np.testing.assert_array_equal(got, image)
    else:
        error = np.abs(got.astype(np.int32) - image)
        assert error.mean() <= JPEG_MEAN_ERROR and error.max() <= JPEG_MAX_ERROR, (
            error.mean(), error.max())


@pytest.mark.parametrize('format_, encoding, codec, stored', VARIANTS,
                         ids=[v[0] for v in VARIANTS])
def test_equals_opencv_decode(format_: str, encoding: str, codec: str,
                              stored: list[int] | None) -> None:
    """The decoded pixels are OpenCV's, each channel back where the publisher took it from."""
    image = smooth_image(encoding)
    data = encode(image, codec, stored)
    np.testing.assert_array_equal(raw_to_array(decode_compressed(format_, data)),
                                  expected_from_codec(data, image, stored))


@pytest.mark.parametrize('format_, image, encoding', [
    ('jpeg', smooth_image('bgr8'), 'bgr8'),
    ('jpg', smooth_image('bgr8'), 'bgr8'),
    ('JPEG', smooth_image('mono8'), 'mono8'),
    ('png', smooth_image('bgr8'), 'bgr8'),
    ('png', smooth_image('bgra8'), 'bgra8'),
    ('png', smooth_image('mono8'), 'mono8'),
    ('png', smooth_image('mono16'), 'mono16'),
], ids=['jpeg-bgr', 'jpg-bgr', 'JPEG-mono', 'png-bgr', 'png-bgra', 'png-mono8', 'png-mono16'])
def test_bare_format(format_: str, image: np.ndarray, encoding: str) -> None:
    """Old drivers say only the codec: the encoding follows the data, OpenCV's BGR order."""
    codec = 'png' if format_ == 'png' else 'jpeg'
    data = encode(image, codec)
    raw = decode_compressed(format_, data)
    assert raw.encoding == encoding
    expected = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(raw_to_array(raw), expected)
    if codec == 'png':
        np.testing.assert_array_equal(raw_to_array(raw), image)


def test_parse_format() -> None:
    assert parse_format('rgb8; jpeg compressed bgr8') == CompressedFormat('rgb8', 'jpeg', 'bgr')
    assert parse_format('mono16; png compressed ') == CompressedFormat('mono16', 'png', '')
    assert parse_format('bgra8; png compressed rgba8') == CompressedFormat('bgra8', 'png', 'rgb')
    assert parse_format(' jpg ') == CompressedFormat('', 'jpeg', '')


def test_from_serialized_message() -> None:
    """A received message's data view (read-only, inside the CDR bytes) decodes in place."""
    image = smooth_image('mono16', 21, 34)
    CompressedImage = TS.types['sensor_msgs/msg/CompressedImage']
    Header, Time = TS.types['std_msgs/msg/Header'], TS.types['builtin_interfaces/msg/Time']
    msg = CompressedImage(header=Header(stamp=Time(sec=0, nanosec=0), frame_id=''),
                          format='mono16; png compressed ',
                          data=np.frombuffer(encode(image, 'png'), np.uint8))
    header, frame = parse_compressed_image(bytes(TS.serialize_cdr(msg, msg.__msgtype__)))
    assert not frame.data.flags.writeable
    raw = decode_compressed(frame.format, frame.data)
    np.testing.assert_array_equal(raw_to_array(raw), image)


def png_with_size(width: int, height: int) -> bytes:
    """Return a PNG whose header claims ``width`` x ``height`` gray pixels."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack('>I', len(body)) + kind + body
                + struct.pack('>I', zlib.crc32(kind + body)))
    header = struct.pack('>IIBBBBB', width, height, 8, 0, 0, 0, 0)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header)
            + chunk(b'IDAT', zlib.compress(b'\0' * 10)) + chunk(b'IEND', b''))


JPEG = encode(smooth_image('bgr8'), 'jpeg', [0, 1, 2])
PNG = encode(smooth_image('bgr8'), 'png', [0, 1, 2])
CORRUPT_PNG = bytearray(PNG)
CORRUPT_PNG[60] ^= 0xff


def test_zero_padding_after_a_jpeg_is_not_a_cut() -> None:
    """UVC cameras pad MJPEG frames with zeros; a JPEG cut short is refused (test below)."""
    raw = decode_compressed('bgr8; jpeg compressed bgr8', JPEG + bytes(100))
    expected = cv2.imdecode(np.frombuffer(JPEG, np.uint8), cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(raw_to_array(raw), expected)


@pytest.mark.parametrize('format_, data, message', [
    ('bgr8; jpeg compressed bgr8', b'', 'has no data'),
    ('bgr8; jpeg compressed bgr8', JPEG[:len(JPEG) // 2], 'do not decode'),
    ('bgr8; jpeg compressed bgr8', JPEG[:40], 'do not decode'),
    ('bgr8; png compressed bgr8', PNG[:len(PNG) - 20], 'do not decode'),
    ('bgr8; png compressed bgr8', bytes(CORRUPT_PNG), 'do not decode'),
    ('bgr8; jpeg compressed bgr8', PNG, r'not a JPEG stream \(starts with 89 50 4e 47'),
    ('bgr8; png compressed bgr8', JPEG, 'not a PNG stream'),
    ('jpeg', bytes(range(256)), 'not a JPEG stream'),
    ('mono8; png compressed ', png_with_size(100_000, 100_000), 'does not decode: .*PIXELS'),
    ('mono16; jpeg compressed ', encode(smooth_image('mono16'), 'jpeg'),
     'holds uint8 pixels; mono16 needs uint16'),
    ('mono8; png compressed ', PNG, r'3 channel\(s\); mono8 has 1'),
    ('bgr8; png compressed bgr8', encode(smooth_image('mono8'), 'png'),
     r'1 channel\(s\); bgr8 has 3'),
    ('bgr16; png compressed bgr16', encode(smooth_image('mono16'), 'png'),
     "unsupported image encoding 'bgr16'"),
    ('32FC1; png compressed ', PNG, '32FC1 images do not travel as JPEG or PNG'),
    ('png', encode(np.zeros((4, 4, 3), np.uint16), 'png'), '3 channels of uint16'),
    ('bayer_rggb8; png compressed ', encode(np.zeros((1, 1), np.uint8), 'png'),
     'Bayer mosaic needs at least 2x2'),
], ids=['empty', 'jpeg-half', 'jpeg-header-only', 'png-truncated', 'png-bad-crc', 'png-as-jpeg',
        'jpeg-as-png', 'garbage', 'png-too-large', 'mono16-8bit-jpeg', 'colour-as-mono',
        'mono-as-colour', 'bgr16', '32FC1', 'bare-bgr16', 'bayer-1x1'])
def test_malformed_data(format_: str, data: bytes, message: str) -> None:
    with pytest.raises(ImageFormatError, match=message):
        decode_compressed(format_, data)


@pytest.mark.parametrize('format_, message', [
    ('16UC1; compressedDepth png', 'compressedDepth .* not supported'),
    ('32FC1; compressedDepth', 'compressedDepth .* not supported'),
    ('bgr8; tiff compressed bgr8', 'unsupported compressed image format'),
    ('h264', 'unsupported compressed image format'),
    ('', 'unsupported compressed image format'),
    ('bgr8', 'unsupported compressed image format'),
    ('bgr8; ', 'unsupported compressed image format'),
    ('bgr8; jpeg packed bgr8', 'unsupported compressed image format'),
    ('bgr8; jpeg compressed bgr8 extra', 'unsupported compressed image format'),
    ('bgr8; jpeg compressed yuv', "unknown channel order 'yuv'"),
])
def test_unknown_format(format_: str, message: str) -> None:
    with pytest.raises(ImageFormatError, match=message):
        decode_compressed(format_, JPEG)
