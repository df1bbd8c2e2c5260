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
sensor_msgs/Image <-> NumPy for the nodes: a thin ROS wrapper around ``imaging.encodings``.

Receive is zero copy: ``np.frombuffer`` over the message's ``array.array('B')`` and a strided
view honouring ``step``. Publish packs the array with one ``frombytes`` straight into the new
message's own ``array.array('B')``: assigning bytes, an ndarray or (Kilted, field checks off)
even an array.array to ``msg.data`` makes rclpy convert it again (per byte on Humble, or on
Kilted with ROS_PYTHON_CHECK_FIELDS=1: ~2000x slower at 1080p).

cv_bridge: the design names it, but PyPI has no ROS 2 cv_bridge (its ``cv-bridge`` is a ROS 1
shim that breaks on NumPy 2). ``converter()`` decides once per process, on first use (a node
calls it while it starts and logs ``converter_backend()``): where ``cv_bridge`` imports and
converts a tiny image of an encoding both ways exactly as the built-in converter does, it is
used for that encoding on native-byte-order images with packed rows (its receive path
mishandles a ``step`` that is not a multiple of the pixel size). Everything else, and every
malformed-image check, goes through the built-in converter, which is the tested path.
"""
from __future__ import annotations

from dataclasses import dataclass
import functools
import importlib.util
from typing import Any, Optional

from cl_vision_nodes.imaging.encodings import (array_to_raw, check_array, EncodingInfo, ENCODINGS,
                                               HOST_IS_BIG_ENDIAN, raw_to_array, RawImage,
                                               validate)
import numpy as np
from sensor_msgs.msg import Image
from std_msgs.msg import Header


def image_msg_to_raw(msg: Image) -> RawImage:
    """Return the message's fields as a RawImage; ``data`` shares the message buffer."""
    return RawImage(msg.encoding, msg.height, msg.width, msg.step, bool(msg.is_bigendian),
                    np.frombuffer(msg.data, dtype=np.uint8))


def _fill(msg: Image, raw: RawImage, info: EncodingInfo, header: Optional[Header]) -> Image:
    msg.height, msg.width, msg.step = raw.height, raw.width, raw.step
    msg.encoding, msg.is_bigendian = info.name, int(raw.is_bigendian)
    if header is not None:
        msg.header = header
    return msg


def raw_to_msg(raw: RawImage, header: Optional[Header] = None) -> Image:
    """
    Return a message of ``raw`` (validated; an alias becomes the ROS name), rows as they are.

    The bytes go with one ``frombytes`` into the message's own ``data``: assigning an
    array.array instead would copy it again inside rclpy (field checks off, the Kilted default).
    """
    info = validate(raw)
    msg = Image()
    msg.data.frombytes(np.frombuffer(raw.data, dtype=np.uint8)[:raw.step * raw.height])
    return _fill(msg, raw, info, header)


def _array_to_msg(a: np.ndarray, info: EncodingInfo, header: Optional[Header]) -> Image:
    msg = Image()
    return _fill(msg, array_to_raw(a, info.name, HOST_IS_BIG_ENDIAN, out=msg.data), info, header)


def _sample(info: EncodingInfo) -> np.ndarray:
    shape = (2, 3) if info.channels == 1 else (2, 3, info.channels)
    return np.arange(int(np.prod(shape)), dtype=info.dtype).reshape(shape)


# How a cv_bridge that is not a working ROS 2 one fails: ROS 1 builds lack their boost module
# (ImportError) or call ndarray.tostring, gone in NumPy 2 (AttributeError); wrong types and
# unknown encodings raise TypeError (CvBridgeError subclasses it), ValueError or KeyError.
_BRIDGE_FAILURES = (ImportError, AttributeError, TypeError, ValueError, KeyError)


@dataclass(frozen=True)
class Converter:
    """
    The image converter of this process.

    ``bridge`` (a CvBridge) for ``encodings``, the built-in converter for everything else;
    ``reason`` says why there is no bridge.
    """

    bridge: Any = None
    encodings: frozenset[str] = frozenset()
    reason: str = ''

    def describe(self) -> str:
        if self.bridge is None:
            return f'built-in ({self.reason})'
        return f"cv_bridge for {', '.join(sorted(self.encodings))}; built-in for the rest"


def _bridge_disagreement(bridge: Any, info: EncodingInfo) -> str | None:
    """None when ``bridge`` converts a sample of ``info`` both ways as the built-in does."""
    sample = _sample(info)
    ours = _array_to_msg(sample, info, None)
    try:
        theirs = bridge.cv2_to_imgmsg(sample, info.name)
        back = bridge.imgmsg_to_cv2(ours, 'passthrough')
    except _BRIDGE_FAILURES as exc:
        return f'{info.name}: {type(exc).__name__}: {exc}'
    fields = ('height', 'width', 'step', 'encoding', 'is_bigendian')
    same_msg = (isinstance(theirs, Image) and bytes(theirs.data) == bytes(ours.data)
                and all(getattr(theirs, f) == getattr(ours, f) for f in fields))
    same_array = (isinstance(back, np.ndarray) and back.dtype == sample.dtype
                  and back.shape == sample.shape and np.array_equal(back, sample))
    return None if same_msg and same_array else f'{info.name}: converts differently'


@functools.cache
def converter() -> Converter:
    """Probe cv_bridge once: used for the encodings on which it agrees with the built-in."""
    try:
        from cv_bridge import CvBridge
    except ImportError as exc:
        installed = importlib.util.find_spec('cv_bridge') is not None
        return Converter(reason=f'cv_bridge does not import: {exc}' if installed
                         else 'cv_bridge is not installed')
    try:
        bridge = CvBridge()
    except _BRIDGE_FAILURES as exc:
        return Converter(reason=f'cv_bridge does not start: {type(exc).__name__}: {exc}')
    disagreements = {name: _bridge_disagreement(bridge, info) for name, info in ENCODINGS.items()}
    agreed = frozenset(name for name, why in disagreements.items() if why is None)
    if not agreed:
        return Converter(reason='cv_bridge converts no encoding as the built-in does; '
                         + next(iter(disagreements.values())))
    return Converter(bridge, agreed)


def converter_backend() -> str:
    """Return the converter in use, in words, for start-up logs and benchmarks."""
    return converter().describe()


def image_to_numpy(msg: Image) -> np.ndarray:
    """
    Return the HxW / HxWxC array of a message (shapes of ``raw_to_array``).

    Zero copy when built-in.
    """
    raw = image_msg_to_raw(msg)
    info = validate(raw)
    chosen = converter()
    if (raw.encoding in chosen.encodings and raw.is_bigendian == HOST_IS_BIG_ENDIAN
            and raw.step == raw.width * info.bytes_per_pixel):
        return chosen.bridge.imgmsg_to_cv2(msg, 'passthrough')
    return raw_to_array(raw)


def numpy_to_image(array_: np.ndarray, encoding: str, header: Optional[Header] = None) -> Image:
    """
    Return an Image message of ``array_``: packed rows, host order.

    ``array_`` is checked by ``check_array``.
    """
    info, a = check_array(array_, encoding)
    chosen = converter()
    if info.name in chosen.encodings and a.dtype.isnative:
        return chosen.bridge.cv2_to_imgmsg(np.ascontiguousarray(a), info.name, header)
    return _array_to_msg(a, info, header)
