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
a NumPy structured array without copying the data.
"""
from __future__ import annotations

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.surf.keypoints import Keypoints
import numpy as np
from sensor_msgs.msg import PointCloud2, PointField

POINT_FIELD_TYPES = {PointField.INT8: 'i1', PointField.UINT8: 'u1', PointField.INT16: 'i2',
                     PointField.UINT16: 'u2', PointField.INT32: 'i4', PointField.UINT32: 'u4',
                     PointField.FLOAT32: 'f4', PointField.FLOAT64: 'f8'}
NUMPY_TO_POINT_FIELD = {np.dtype(code).newbyteorder('<').str.lstrip('<|'): datatype
                        for datatype, code in POINT_FIELD_TYPES.items()}


def point_fields(dtype: np.dtype) -> list[PointField]:
    """Return the PointFields of a structured point dtype (names, offsets, types, counts)."""
    fields = []
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        base, count = (sub.base, int(np.prod(sub.shape))) if sub.shape else (sub, 1)
        fields.append(PointField(name=name, offset=offset, count=count,
                                 datatype=NUMPY_TO_POINT_FIELD[base.str.lstrip('<|')]))
    return fields


def cloud_to_array(msg: PointCloud2) -> np.ndarray:
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


def cloud_to_keypoints(msg: PointCloud2) -> Keypoints:
    return Keypoints.from_structured(cloud_to_array(msg))
