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
SURF keypoints in sensor_msgs/PointCloud2 (one point per keypoint, DESIGN.md layout).

Fields: x, y, size, angle (degrees), response (float32), octave (int32), laplacian (int8),
descriptor (float32, count 64 or 128), little-endian, height 1. ``cloud_to_array`` is the
decoder for consumers: it reads any PointCloud2 with these fields (whatever their offsets) into
a NumPy structured array without copying the data, from rclpy or from a bag (rosbags), so this
module imports no ROS: eval and tune read the clouds of a bag where ROS is not installed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.surf.keypoints import Keypoints
import numpy as np

POINT_FIELD_TYPES = {1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 8: 'f8'}
"""sensor_msgs/PointField's datatype constants (INT8 .. FLOAT64) -> NumPy type codes."""
NUMPY_TO_POINT_FIELD = {np.dtype(code).newbyteorder('<').str.lstrip('<|'): datatype
                        for datatype, code in POINT_FIELD_TYPES.items()}


@dataclass(frozen=True)
class CloudField:
    """One field of a PointCloud2 as ``cdr.cloud_framing`` writes it (a PointField's members)."""

    name: str
    offset: int
    datatype: int
    count: int


def point_fields(dtype: np.dtype) -> list[CloudField]:
    """Return the PointCloud2 fields of a structured dtype (names, offsets, types, counts)."""
    fields = []
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        base, count = (sub.base, int(np.prod(sub.shape))) if sub.shape else (sub, 1)
        fields.append(CloudField(name, offset, NUMPY_TO_POINT_FIELD[base.str.lstrip('<|')],
                                 count))
    return fields


def cloud_to_array(msg: Any) -> np.ndarray:
    """Return the cloud's points as a structured array, one field per PointField (zero copy)."""
    order = '>' if msg.is_bigendian else '<'
    names, formats, offsets = [], [], []
    for field in msg.fields:
        code = POINT_FIELD_TYPES.get(field.datatype)
        if code is None:
            raise ImageFormatError(f'PointCloud2 field {field.name}: unknown datatype '
                                   f'{field.datatype}')
        names.append(field.name)
        formats.append((order + code, (field.count,)) if field.count > 1 else order + code)
        offsets.append(field.offset)
    dtype = np.dtype({'names': names, 'formats': formats, 'offsets': offsets,
                      'itemsize': msg.point_step})
    count = msg.width * msg.height
    if len(msg.data) < count * msg.point_step:
        raise ImageFormatError(f'PointCloud2 has {len(msg.data)} bytes; expected '
                               f'{count} points x {msg.point_step}')
    return np.frombuffer(msg.data, dtype, count=count)


def cloud_to_keypoints(msg: Any) -> Keypoints:
    return Keypoints.from_structured(cloud_to_array(msg))
