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
Images, disparity maps and point clouds as serialized CDR bytes, read and written in place.

Why: rclpy's message objects cost a copy of every pixel on receive and another on publish. A
subscription made with ``raw=True`` hands its callback the serialized ``bytes``, and
``Publisher.publish(bytes)`` sends bytes as they are, so a node reads pixels straight out of
the received bytes (``parse_image``: ``RawImage.data`` is a view of them) and builds its output
with exactly one copy of the payload (``Framing.join``).

Layout: a 4-byte encapsulation header, then the message in CDR, each primitive aligned to its
size counted from the end of that header; a string is a uint32 length counting its NUL, then
its bytes and the NUL; a sequence is a uint32 count, then its elements. rmw_fastrtps (hence
``rclpy.serialization.serialize_message``) always writes XCDR1 plain CDR, CDR_LE on a
little-endian host. Read: CDR_LE / CDR_BE and, from foreign DDS writers, PLAIN_CDR2 LE / BE,
which for Image and CompressedImage is the same bytes (no member wider than 4 bytes, octet
sequences only); the other XTypes encapsulations are refused by name. Written: CDR_LE with zero
padding, the bytes ``serialize_message`` makes except for its padding, which Fast CDR leaves
uninitialised.

No ROS import at module level (std_msgs only inside ``CdrHeader.to_msg``): the tools, which
import without ROS (test_layers), read and rewrite the stamps and images of bags with it.

Malformed bytes (truncated, lengths running past the end, a string without its NUL, data
shorter than step*height, an unknown encapsulation) raise ``ImageFormatError`` saying which
field and byte. Pixel checks (encoding, size, step) stay in ``encodings.validate``.
"""
from __future__ import annotations

from dataclasses import dataclass
import struct
from typing import Optional, Protocol, Sequence, TYPE_CHECKING, Union

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import Buffer, HOST_IS_BIG_ENDIAN, RawImage
import numpy as np

if TYPE_CHECKING:
    from std_msgs.msg import Header

ORIGIN = 4
"""Bytes of the encapsulation header; CDR alignment counts from its end."""

CDR_LE_ENCAPSULATION = b'\x00\x01\x00\x00'
"""CDR_LE with options 0: the encapsulation every message written here starts with."""

_READABLE = {0x0000: '>', 0x0001: '<', 0x0006: '>', 0x0007: '<'}
_UINT32_INT32 = {order: (struct.Struct(order + 'I'), struct.Struct(order + 'i')) for order in '<>'}
_REFUSED = {0x0002: 'PL_CDR_BE', 0x0003: 'PL_CDR_LE', 0x0004: 'XML',
            0x0008: 'DELIMIT_CDR2_BE', 0x0009: 'DELIMIT_CDR2_LE',
            0x000a: 'PL_CDR2_BE', 0x000b: 'PL_CDR2_LE'}


@dataclass(frozen=True)
class CdrHeader:
    """
    The std_msgs/Header of a received message, and its serialized bytes for the outputs.

    ``cdr`` is the little-endian CDR of the Header alone (no encapsulation, no trailing
    padding): the received bytes themselves for a CDR_LE message, re-encoded for a big-endian
    one. Every message written here starts with its Header at offset 0, so ``cdr`` goes in
    verbatim.
    """

    sec: int
    nanosec: int
    frame_id: str
    cdr: bytes

    def to_msg(self) -> Header:
        """Return the header as a std_msgs/Header, for the APIs that take messages."""
        from std_msgs.msg import Header  # ROS only here: see the module's docstring
        msg = Header(frame_id=self.frame_id)
        msg.stamp.sec, msg.stamp.nanosec = self.sec, self.nanosec
        return msg


@dataclass(frozen=True)
class CompressedFrame:
    """The fields of sensor_msgs/CompressedImage after its header; ``data`` views the bytes."""

    format: str  # noqa: A003 (the message field's name)
    data: np.ndarray


HeaderLike = Union[CdrHeader, 'Header']


class PointFieldLike(Protocol):
    """What a PointCloud2 field needs: a sensor_msgs/PointField or the package's own."""

    name: str
    offset: int
    datatype: int
    count: int


_STAMP = {order: struct.Struct(order + 'iI') for order in '<>'}
_U32 = struct.Struct('<I')
_UINT32_TRIPLE = struct.Struct('<III')
_TIME_AND_LENGTH = struct.Struct('<iII')
_UINT32_PAIR = struct.Struct('<II')
_DISPARITY_SCALARS = struct.Struct('<ffIIII')
_DISPARITY_RANGE = struct.Struct('<fff')


class _Reader:
    """Bounds-checked CDR reads of one message; every failure names the field and byte."""

    __slots__ = ('buf', 'int32_', 'order', 'pos', 'uint32_', 'what')

    def __init__(self, data: Union[bytes, bytearray, memoryview], what: str):
        self.what = what
        self.buf = memoryview(data).cast('B')
        if len(self.buf) < ORIGIN:
            raise self.fail(f'{len(self.buf)} bytes; expected at least the 4-byte encapsulation '
                            'header')
        ident = self.buf[0] << 8 | self.buf[1]
        order = _READABLE.get(ident)
        if order is None:
            name = _REFUSED.get(ident, 'unknown')
            raise self.fail(f'encapsulation {name} (0x{ident:04x}) is not supported; expected '
                            'CDR_LE (0x0001) as ROS 2 publishes, CDR_BE (0x0000) or PLAIN_CDR2 '
                            '(0x0007, 0x0006)')
        self.order = order
        self.uint32_, self.int32_ = _UINT32_INT32[order]
        self.pos = ORIGIN

    def fail(self, message: str) -> ImageFormatError:
        return ImageFormatError(f'serialized {self.what}: {message}')

    def _take(self, size: int, align: int, field: str) -> int:
        start = self.pos + (ORIGIN - self.pos) % align
        if start + size > len(self.buf):
            raise self.fail(f'{field} at byte {start} needs {size} bytes; the message has '
                            f'{len(self.buf)}')
        self.pos = start + size
        return start

    def uint32(self, field: str) -> int:
        return self.uint32_.unpack_from(self.buf, self._take(4, 4, field))[0]

    def int32(self, field: str) -> int:
        return self.int32_.unpack_from(self.buf, self._take(4, 4, field))[0]

    def uint8(self, field: str) -> int:
        return self.buf[self._take(1, 1, field)]

    def octets(self, field: str) -> tuple[int, int]:
        """Read a sequence<uint8> (or a string's bytes); return its start and length."""
        length = self.uint32(f'{field} length')
        return self._take(length, 1, field), length

    def string(self, field: str) -> str:
        start, length = self.octets(field)
        if length == 0:  # no NUL at all: Fast CDR reads it as '' too
            return ''
        if self.buf[start + length - 1] != 0:
            raise self.fail(f'{field} at byte {start} does not end with its NUL terminator')
        try:
            return str(self.buf[start:start + length - 1], 'utf-8')
        except UnicodeDecodeError as exc:
            raise self.fail(f'{field} at byte {start} is not UTF-8: {exc}') from None

    def header(self) -> CdrHeader:
        sec = self.int32('header.stamp.sec')
        nanosec = self.uint32('header.stamp.nanosec')
        frame_id = self.string('header.frame_id')
        cdr = (bytes(self.buf[ORIGIN:self.pos]) if self.order == '<'
               else _header_cdr(sec, nanosec, frame_id))
        return CdrHeader(sec, nanosec, frame_id, cdr)

    def view(self, start: int, length: int) -> np.ndarray:
        return np.frombuffer(self.buf, dtype=np.uint8, count=length, offset=start)


def read_stamp(data: Union[bytes, bytearray, memoryview]) -> int:
    """
    Return header.stamp in ns of a serialized message whose first field is a std_msgs/Header.

    Only the stamp is read: matching answers to frames must not cost a parse of every image.
    """
    reader = _Reader(data, 'message header')
    sec = reader.int32('header.stamp.sec')
    return sec * 1_000_000_000 + reader.uint32('header.stamp.nanosec')


def with_stamp(data: Union[bytes, bytearray, memoryview], stamp_ns: int) -> bytes:
    """Return a copy of a serialized message with its header.stamp set; nothing else changes."""
    reader = _Reader(data, 'message header')
    start = reader._take(_STAMP['<'].size, 4, 'header.stamp')
    stamp = _STAMP[reader.order].pack(*divmod(stamp_ns, 1_000_000_000))
    return b''.join((reader.buf[:start], stamp, reader.buf[start + len(stamp):]))


def parse_image(data: Union[bytes, bytearray, memoryview]) -> tuple[CdrHeader, RawImage]:
    """
    Read a serialized sensor_msgs/Image; ``RawImage.data`` is a view of ``data`` (zero copy).

    The view is read-only for ``bytes``, as rclpy's raw subscriptions deliver. The fields are
    taken as they are; ``encodings.validate`` judges them as it does for ``image_msg_to_raw``.
    """
    reader = _Reader(data, 'sensor_msgs/Image')
    header = reader.header()
    height = reader.uint32('height')
    width = reader.uint32('width')
    encoding = reader.string('encoding')
    is_bigendian = reader.uint8('is_bigendian') != 0
    step = reader.uint32('step')
    start, length = reader.octets('data')
    if length < step * height:
        raise reader.fail(f'data has {length} bytes; expected step*height = {step}*{height} = '
                          f'{step * height}')
    return header, RawImage(encoding, height, width, step, is_bigendian,
                            reader.view(start, length))


def parse_compressed_image(
        data: Union[bytes, bytearray, memoryview]) -> tuple[CdrHeader, CompressedFrame]:
    """Read a serialized sensor_msgs/CompressedImage; its ``data`` is a view of ``data``."""
    reader = _Reader(data, 'sensor_msgs/CompressedImage')
    header = reader.header()
    format_ = reader.string('format')
    start, length = reader.octets('data')
    return header, CompressedFrame(format_, reader.view(start, length))


def _header_cdr(sec: int, nanosec: int, frame_id: str) -> bytes:
    text = frame_id.encode() + b'\0'
    return _TIME_AND_LENGTH.pack(sec, nanosec, len(text)) + text


def header_cdr(header: HeaderLike) -> bytes:
    """Return the little-endian CDR of a header: a received one's bytes, or a Header's."""
    if isinstance(header, CdrHeader):
        return header.cdr
    return _header_cdr(header.stamp.sec, header.stamp.nanosec, header.frame_id)


def _payload_view(payload: Buffer, size: int) -> memoryview:
    view = memoryview(payload)
    if not view.c_contiguous:
        raise ImageFormatError('message payload is not C-contiguous; expected one flat buffer '
                               '(np.ascontiguousarray)')
    if view.nbytes != size:
        raise ImageFormatError(f'message payload has {view.nbytes} bytes; its framing was made '
                               f'for {size}')
    return view


@dataclass(frozen=True)
class Framing:
    """
    A serialized message around its one large payload: the bytes before it and after it.

    ``join`` copies the payload in once, making the ``bytes`` rclpy publishes. Download into a
    pinned staging array (``Buffers.pinned``), then join: downloading into the payload region of
    a bytearray message instead and publishing ``bytes(message)`` copies as often, and measured
    3x slower on an H100 at 640x480 32FC2 (0.94 ms against 0.31 ms; pageable memory is slow to
    DMA into, and the new bytearray faults in its pages), the same on PoCL.
    """

    prefix: bytes
    size: int
    suffix: bytes

    def join(self, payload: Buffer) -> bytes:
        """Return the message with ``payload`` (``size`` bytes, C-contiguous, any dtype)."""
        return b''.join((self.prefix, _payload_view(payload, self.size), self.suffix))


class _Writer:
    """Little-endian CDR after a CDR_LE encapsulation, zero padding, parts joined once."""

    __slots__ = ('parts', 'pos')

    def __init__(self) -> None:
        self.parts: list[bytes] = [CDR_LE_ENCAPSULATION]
        self.pos = 0  # counted from the end of the encapsulation header

    def align(self, size: int) -> None:
        pad = -self.pos % size
        if pad:
            self.raw(bytes(pad))

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.pos += len(data)

    def pack(self, layout: struct.Struct, *values: Union[int, float]) -> None:
        """Write a run of 4-byte members (one alignment covers them all)."""
        self.align(4)
        self.raw(layout.pack(*values))

    def uint8(self, value: int) -> None:
        self.raw(bytes((value,)))

    def string(self, text: str) -> None:
        data = text.encode() + b'\0'
        self.pack(_U32, len(data))
        self.raw(data)

    def header(self, header: HeaderLike) -> None:
        self.align(4)
        self.raw(header_cdr(header))

    def image_fields(self, encoding: str, height: int, width: int, step: int,
                     is_bigendian: bool, size: int) -> None:
        """Write Image from height to the data length; the data follows."""
        if size < step * height:
            raise ImageFormatError(f'image payload of {size} bytes; expected at least '
                                   f'step*height = {step * height}')
        self.pack(_UINT32_PAIR, height, width)
        self.string(encoding)
        self.uint8(int(is_bigendian))
        self.pack(_UINT32_PAIR, step, size)

    def take(self) -> bytes:
        data = b''.join(self.parts)
        self.parts.clear()
        return data

    def skip(self, size: int) -> None:
        """Step over a payload written elsewhere."""
        self.pos += size


def image_framing(header: HeaderLike, encoding: str, height: int, width: int, step: int,
                  is_bigendian: bool = HOST_IS_BIG_ENDIAN,
                  size: Optional[int] = None) -> Framing:
    """
    Frame a sensor_msgs/Image; the payload is its data, ``size`` bytes (step*height default).

    ``is_bigendian`` describes the pixels, host order by default (a host or device array).
    """
    size = step * height if size is None else size
    writer = _Writer()
    writer.header(header)
    writer.image_fields(encoding, height, width, step, is_bigendian, size)
    return Framing(writer.take(), size, b'')


def raw_image_framing(header: HeaderLike, raw: RawImage) -> Framing:
    """Frame a sensor_msgs/Image around all of ``raw.data``, as ``raw`` describes it."""
    return image_framing(header, raw.encoding, raw.height, raw.width, raw.step,
                         raw.is_bigendian, memoryview(raw.data).nbytes)


def serialize_image(header: HeaderLike, raw: RawImage) -> bytes:
    """Return the serialized Image of ``raw`` (its ``data`` copied once, all of it)."""
    return raw_image_framing(header, raw).join(raw.data)


def disparity_framing(header: HeaderLike, height: int, width: int, *, f: float, t: float,
                      valid_window: tuple[int, int, int, int], min_disparity: float,
                      max_disparity: float, delta_d: float,
                      image_header: Optional[HeaderLike] = None, step: Optional[int] = None,
                      is_bigendian: bool = HOST_IS_BIG_ENDIAN) -> Framing:
    """
    Frame a stereo_msgs/DisparityImage; the payload is its 32FC1 map, step*height bytes.

    ``valid_window`` is (x_offset, y_offset, width, height), the order the disparity node's
    ``valid_window`` returns (do_rectify False); ``image_header`` defaults to ``header``,
    ``step`` to 4*width.
    """
    step = 4 * width if step is None else step
    size = step * height
    writer = _Writer()
    writer.header(header)
    writer.header(header if image_header is None else image_header)
    writer.image_fields('32FC1', height, width, step, is_bigendian, size)
    prefix = writer.take()
    writer.skip(size)
    x_offset, y_offset, window_width, window_height = valid_window
    writer.pack(_DISPARITY_SCALARS, f, t, x_offset, y_offset, window_height, window_width)
    writer.uint8(0)  # valid_window.do_rectify
    writer.pack(_DISPARITY_RANGE, min_disparity, max_disparity, delta_d)
    return Framing(prefix, size, writer.take())


def cloud_framing(header: HeaderLike, height: int, width: int, fields: Sequence[PointFieldLike],
                  point_step: int, row_step: int, is_dense: bool = True,
                  is_bigendian: bool = HOST_IS_BIG_ENDIAN) -> Framing:
    """Frame a sensor_msgs/PointCloud2; the payload is its data, row_step*height bytes."""
    size = row_step * height
    writer = _Writer()
    writer.header(header)
    writer.pack(_UINT32_PAIR, height, width)
    writer.pack(_U32, len(fields))
    for field in fields:
        writer.string(field.name)
        writer.pack(_U32, field.offset)
        writer.uint8(field.datatype)
        writer.pack(_U32, field.count)
    writer.uint8(int(is_bigendian))
    writer.pack(_UINT32_TRIPLE, point_step, row_step, size)
    prefix = writer.take()
    writer.skip(size)
    writer.uint8(int(is_dense))
    return Framing(prefix, size, writer.take())
