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
Point clouds as PointCloud2 data: the four layouts of stereo_image_proc's point_cloud_node.

``use_color`` adds a float32 field ``rgb`` whose bits are 0x00RRGGBB (PCL's packing; as
little-endian bytes B, G, R, 0). ``avoid_padding`` is stereo_image_proc's
``avoid_point_cloud_padding``: without it x, y, z are padded to 16 bytes like PCL's PointXYZ
(and PointXYZRGB to 32). Padding bytes are zero. Every field is FLOAT32, count 1, little-endian:

    use_color  avoid_padding  point_step  x  y  z  rgb
    no         no             16          0  4  8  -
    yes        no             32          0  4  8  16
    no         yes            12          0  4  8  -
    yes        yes            16          0  4  8  12

``PointCloud.data`` is exactly a PointCloud2's ``data`` for its ``height``, ``width``,
``point_step``, ``row_step``, ``fields`` and ``is_dense``, so a node fills the message with one
memcpy and no per-point Python.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOAT32 = 7
"""sensor_msgs/PointField.FLOAT32."""


@dataclass(frozen=True)
class PointField:
    """One field of sensor_msgs/PointCloud2 (name, byte offset, datatype, count)."""

    name: str
    offset: int
    datatype: int = FLOAT32
    count: int = 1


@dataclass(frozen=True)
class CloudLayout:
    """Which fields a point has and how they are laid out (see the module table)."""

    use_color: bool = True
    avoid_padding: bool = False

    @property
    def point_step(self) -> int:
        if self.avoid_padding:
            return 16 if self.use_color else 12
        return 32 if self.use_color else 16

    @property
    def rgb_offset(self) -> int | None:
        if not self.use_color:
            return None
        return 12 if self.avoid_padding else 16

    @property
    def fields(self) -> tuple[PointField, ...]:
        xyz = (PointField('x', 0), PointField('y', 4), PointField('z', 8))
        offset = self.rgb_offset
        return xyz if offset is None else (*xyz, PointField('rgb', offset))

    @property
    def dtype(self) -> np.dtype:
        """
        Return a NumPy structured dtype of one point.

        Its itemsize is point_step; padding is skipped.
        """
        return np.dtype({'names': [f.name for f in self.fields],
                         'formats': ['<f4'] * len(self.fields),
                         'offsets': [f.offset for f in self.fields],
                         'itemsize': self.point_step})


@dataclass(frozen=True, eq=False)
class PointCloud:
    """
    A cloud in PointCloud2 form: ``height`` x ``width`` points of ``layout`` in ``data``.

    ``data`` is uint8, row-major. Organised clouds have the disparity map's shape and NaN x, y, z
    where there is no point (``is_dense`` false); dense ones are one row of valid points.
    """

    data: np.ndarray
    height: int
    width: int
    layout: CloudLayout
    is_dense: bool

    @property
    def point_step(self) -> int:
        return self.layout.point_step

    @property
    def row_step(self) -> int:
        return self.width * self.layout.point_step

    def points(self) -> np.ndarray:
        """Return the points as a (height, width) structured array viewing ``data`` (no copy)."""
        return self.data.view(self.layout.dtype).reshape(self.height, self.width)


def unpack_rgb(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 red, green, blue of packed ``rgb`` float32 values (bits 0x00RRGGBB)."""
    bits = np.ascontiguousarray(rgb, dtype=np.float32).view(np.uint32)
    return np.stack([(bits >> shift) & 0xFF for shift in (16, 8, 0)], axis=-1).astype(np.uint8)


def point_table(cloud: PointCloud) -> np.ndarray:
    """
    Return the cloud as a structured array: the columns of a PLY file or a .npy of points.

    Fields x, y, z float32 [, red, green, blue uint8], of the cloud's shape (N for a dense cloud).
    """
    points = cloud.points()
    if cloud.is_dense:
        points = points.reshape(-1)
    color = cloud.layout.use_color
    table = np.empty(points.shape, [(name, '<f4') for name in 'xyz']
                     + ([(name, 'u1') for name in ('red', 'green', 'blue')] if color else []))
    for name in 'xyz':
        table[name] = points[name]
    if color:
        rgb = unpack_rgb(points['rgb'])
        for channel, name in enumerate(('red', 'green', 'blue')):
            table[name] = rgb[..., channel]
    return table
