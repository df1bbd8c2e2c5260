"""sensor_msgs/Image <-> NumPy for the nodes: a thin ROS wrapper around ``imaging.encodings``.

Receive is zero copy: ``np.frombuffer`` over the message's ``array.array('B')`` and a strided
view honouring ``step``. Publish packs the array with one ``frombytes`` straight into the new
message's own ``array.array('B')``: assigning bytes, an ndarray or (Kilted, field checks off)
even an array.array to ``msg.data`` makes rclpy convert it again (per byte on Humble, or on
Kilted with ROS_PYTHON_CHECK_FIELDS=1: ~2000x slower at 1080p).

cv_bridge: the design names it, but PyPI has no ROS 2 cv_bridge (its ``cv-bridge`` is a ROS 1
shim that breaks on NumPy 2). Where a ROS 2 cv_bridge imports, a one-off probe at import
converts a tiny image of every encoding both ways and keeps the bridge only for the encodings on
which it agrees exactly with the built-in converter; it is then used for native-byte-order
images with packed rows (its receive path mishandles a ``step`` that is not a multiple of the
pixel size). Everything else, and every malformed-image check, goes through the built-in
converter, which is the tested path.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from cl_vision_nodes.imaging.encodings import (
    ENCODINGS, HOST_IS_BIG_ENDIAN, EncodingInfo, RawImage, array_to_raw, check_array,
    raw_to_array, validate)


def image_msg_to_raw(msg: Image) -> RawImage:
    """The message's fields as a RawImage; ``data`` shares the message buffer."""
    return RawImage(msg.encoding, msg.height, msg.width, msg.step, bool(msg.is_bigendian),
                    np.frombuffer(msg.data, dtype=np.uint8))


def _fill(msg: Image, raw: RawImage, info: EncodingInfo, header: Optional[Header]) -> Image:
    msg.height, msg.width, msg.step = raw.height, raw.width, raw.step
    msg.encoding, msg.is_bigendian = info.name, int(raw.is_bigendian)
    if header is not None:
        msg.header = header
    return msg


def raw_to_msg(raw: RawImage, header: Optional[Header] = None) -> Image:
    """A message of ``raw`` (validated; an alias becomes the ROS name), rows as they are.

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


def _probe_cv_bridge() -> tuple[Any, frozenset[str]]:
    """A working ROS 2 CvBridge and the encodings it converts exactly as the built-in does."""
    try:
        from cv_bridge import CvBridge
        bridge = CvBridge()
    except Exception:  # absent, or a ROS 1 / NumPy-1 build failing in its own way
        return None, frozenset()
    agreed = set()
    for info in ENCODINGS.values():
        sample = _sample(info)
        ours = _array_to_msg(sample, info, None)
        try:
            theirs = bridge.cv2_to_imgmsg(sample, info.name)
            back = bridge.imgmsg_to_cv2(ours, 'passthrough')
        except Exception:  # encoding unknown to this cv_bridge version
            continue
        if (isinstance(theirs, Image) and theirs.step == ours.step and theirs.encoding == ours.encoding
                and bytes(theirs.data) == bytes(ours.data)
                and back.dtype == sample.dtype and back.shape == sample.shape and np.array_equal(back, sample)):
            agreed.add(info.name)
    return (bridge, frozenset(agreed)) if agreed else (None, frozenset())


_BRIDGE, _BRIDGE_ENCODINGS = _probe_cv_bridge()


def converter_backend() -> str:
    """'cv_bridge' when a verified ROS 2 cv_bridge is in use for some encodings, else 'builtin'."""
    return 'cv_bridge' if _BRIDGE is not None else 'builtin'


def image_to_numpy(msg: Image) -> np.ndarray:
    """HxW / HxWxC array of a message (shapes of ``raw_to_array``); zero copy on the built-in path."""
    raw = image_msg_to_raw(msg)
    info = validate(raw)
    if (_BRIDGE is not None and raw.encoding in _BRIDGE_ENCODINGS
            and raw.is_bigendian == HOST_IS_BIG_ENDIAN and raw.step == raw.width * info.bytes_per_pixel):
        return _BRIDGE.imgmsg_to_cv2(msg, 'passthrough')
    return raw_to_array(raw)


def numpy_to_image(array_: np.ndarray, encoding: str, header: Optional[Header] = None) -> Image:
    """An Image message of ``array_`` (checked by ``check_array``), packed rows, host byte order."""
    info, a = check_array(array_, encoding)
    if _BRIDGE is not None and info.name in _BRIDGE_ENCODINGS and a.dtype.isnative:
        return _BRIDGE.cv2_to_imgmsg(np.ascontiguousarray(a), info.name, header)
    return _array_to_msg(a, info, header)
