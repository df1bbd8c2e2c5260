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
sensor_msgs/CompressedImage payloads (JPEG, PNG) decoded to the image their publisher had.

Why: cameras and bags usually carry images through image_transport's ``compressed`` plugin, and
the nodes take any image as a ``RawImage``. The ``format`` field says how to undo the plugin's
work: ``"<encoding>; <codec> compressed <order>"``, e.g. ``"rgb8; jpeg compressed bgr8"``
(an rgb8 image, stored as BGR JPEG), ``"mono8; jpeg compressed "``, ``"mono16; png
compressed "``, ``"bgra8; png compressed bgra8"``. The codec's channels are in ``<order>``
(OpenCV's BGR unless it says rgb); the result is converted to ``<encoding>``, adding or dropping
alpha as the plugin's subscriber does. Without an order word a colour image is taken in its
encoding's own order (the subscriber would assume RGB; the plugin never writes that form). A
bare ``"jpeg"``, ``"jpg"`` or ``"png"`` (old drivers, cv_bridge's ``cv2_to_compressed_imgmsg``)
decodes to mono8, mono16, bgr8 or bgra8 by what the data holds.

Pixels keep their bit depth (16-bit PNG stays mono16); a format whose encoding disagrees with
the data (mono16 in an 8-bit JPEG, colour data declared mono8), ``compressedDepth``, other
codecs, empty, truncated or corrupt data raise ``ImageFormatError`` saying which.
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.encodings import (as_bytes, Buffer, encoding_info, EncodingInfo,
                                               HOST_IS_BIG_ENDIAN, RawImage, validate)
import cv2
import numpy as np

CODECS = ('jpeg', 'png')
_CODEC_NAMES = {'jpeg': 'jpeg', 'jpg': 'jpeg', 'png': 'png'}
_SIGNATURES = {'jpeg': b'\xff\xd8\xff', 'png': b'\x89PNG\r\n\x1a\n'}
_BARE_ENCODINGS = {(1, np.dtype(np.uint8)): 'mono8', (1, np.dtype(np.uint16)): 'mono16',
                   (3, np.dtype(np.uint8)): 'bgr8', (4, np.dtype(np.uint8)): 'bgra8'}


@dataclass(frozen=True)
class CompressedFormat:
    """
    What a CompressedImage's ``format`` says.

    ``encoding`` is the publisher's image encoding ('' for a bare codec name: taken from the
    data), ``order`` the channel order inside the codec ('bgr' or 'rgb'; '' for the encoding's
    own).
    """

    encoding: str
    codec: str
    order: str


def parse_format(text: str) -> CompressedFormat:
    """Read a CompressedImage ``format`` as image_transport's compressed plugin writes it."""
    if 'compresseddepth' in text.lower():
        raise ImageFormatError(
            f'compressed image format {text!r} is compressedDepth (compressed_depth_image_'
            'transport), which is not supported: subscribe the raw depth topic instead')
    encoding, sep, rest = text.partition(';')
    words = rest.split() if sep else [encoding.strip().lower()]
    codec = _CODEC_NAMES.get(words[0].lower()) if words else None
    if codec is None or words[1:2] not in ([], ['compressed']) or len(words) > 3:
        raise ImageFormatError(
            f'unsupported compressed image format {text!r}: expected jpeg or png as '
            "image_transport's compressed plugin writes them (e.g. 'bgr8; jpeg compressed "
            "bgr8', 'mono16; png compressed ') or a bare 'jpeg' or 'png'")
    order = words[2].lower()[:3] if len(words) == 3 else ''
    if order not in ('', 'bgr', 'rgb'):
        raise ImageFormatError(f'compressed image format {text!r}: unknown channel order '
                               f'{words[2]!r}; expected bgr or rgb')
    return CompressedFormat(encoding.strip() if sep else '', codec, order)


def _jpeg_ends(payload: np.ndarray) -> bool:
    """
    Whether a JPEG stream ends with its end-of-image marker (FF D9).

    Zero bytes after it are padding (UVC cameras pad MJPEG frames), not a cut.
    """
    nonzero = np.flatnonzero(payload)
    last = nonzero[-1] if nonzero.size else 0
    return last >= 1 and payload[last - 1] == 0xff and payload[last] == 0xd9


def decode_compressed(format_: str, data: Buffer) -> RawImage:
    """
    Decode a CompressedImage's ``data`` to a packed RawImage in the publisher's encoding.

    ``data`` may be a read-only view of the received message; the result owns a new array.
    """
    fmt = parse_format(format_)
    payload = as_bytes(data)
    if payload.size == 0:
        raise ImageFormatError(f'compressed image ({format_!r}) has no data')
    signature = _SIGNATURES[fmt.codec]
    if payload[:len(signature)].tobytes() != signature:
        raise ImageFormatError(
            f'compressed image ({format_!r}): the data is not a {fmt.codec.upper()} stream '
            f'(starts with {payload[:8].tobytes().hex(" ")})')
    # A JPEG cut short: OpenCV 5 refuses it, 4.5 and 4.6 decode it with the missing rows grey.
    complete = fmt.codec != 'jpeg' or _jpeg_ends(payload)
    try:
        pixels = cv2.imdecode(payload, cv2.IMREAD_UNCHANGED) if complete else None
    except cv2.error as exc:  # e.g. a header claiming more than CV_IO_MAX_IMAGE_PIXELS
        reason = str(exc).strip().partition('error: ')[2] or str(exc).strip()
        raise ImageFormatError(f'compressed image ({format_!r}) does not decode: {reason}') \
            from None
    if pixels is None:
        raise ImageFormatError(f'compressed image ({format_!r}): {payload.size} bytes of '
                               f'{fmt.codec.upper()} do not decode (truncated or corrupt)')
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    encoding = fmt.encoding or _BARE_ENCODINGS.get((channels, pixels.dtype), '')
    if not encoding:
        raise ImageFormatError(
            f'compressed image ({format_!r}) decodes to {channels} channels of {pixels.dtype}, '
            'which no image encoding of this package holds')
    info = _target(format_, encoding)
    if pixels.dtype != info.dtype:
        raise ImageFormatError(
            f'compressed image ({format_!r}) holds {pixels.dtype} pixels; {info.name} needs '
            f'{info.dtype} (the publisher lost the bit depth)')
    pixels = _convert(format_, pixels, channels, fmt.order or info.order.lower()[:3], info)
    height, width = pixels.shape[:2]
    raw = RawImage(info.name, height, width, width * info.bytes_per_pixel, HOST_IS_BIG_ENDIAN,
                   np.ascontiguousarray(pixels))
    validate(raw)  # e.g. a Bayer mosaic smaller than 2x2
    return raw


def _target(format_: str, encoding: str) -> EncodingInfo:
    try:
        info = encoding_info(encoding)
    except ImageFormatError as exc:
        raise ImageFormatError(f'compressed image ({format_!r}): {exc}') from None
    if info.kind not in ('gray', 'bayer', 'color'):
        raise ImageFormatError(
            f'compressed image ({format_!r}): {info.name} images do not travel as JPEG or PNG; '
            'expected mono, bayer, bgr(a) or rgb(a) of 8 or 16 bits')
    return info


def _convert(format_: str, pixels: np.ndarray, channels: int, order: str,
             info: EncodingInfo) -> np.ndarray:
    """Return the decoded channels (``order``, alpha when 4) in the layout of ``info``."""
    if (channels == 1) != (info.channels == 1):
        raise ImageFormatError(
            f'compressed image ({format_!r}) decodes to {channels} channel(s); {info.name} has '
            f'{info.channels}')
    if channels == 1:
        return pixels
    source = order + ('a' if channels == 4 else '')
    target = info.order.lower()
    if source == target:
        return pixels
    return cv2.cvtColor(pixels, getattr(cv2, f'COLOR_{source}2{target}'.upper()))
