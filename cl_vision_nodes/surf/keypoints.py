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
The result of one frame: keypoints as NumPy arrays, and their packed point layout.

``point_dtype(length)`` is the layout of one keypoint in the ``keypoints`` PointCloud2 of
DESIGN.md (x, y, size, angle, response float32; octave int32; laplacian int8; descriptor float32
x 64/128), with the descriptor aligned to 4 bytes: offsets 0, 4, 8, 12, 16, 20, 24, 28,
point_step 28 + 4 length. ``Keypoints.to_structured()`` produces exactly those bytes, and
``Keypoints.from_structured()`` reads them back (the decoder for consumers).

``RECORD_FIELDS`` is the device layout of a keypoint while the kernels work on it, passed to
them as build defines (``record_defines``): the one definition of the record.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCALAR_FIELDS: tuple[tuple[str, str, int], ...] = (
    ('x', '<f4', 0), ('y', '<f4', 4), ('size', '<f4', 8), ('angle', '<f4', 12),
    ('response', '<f4', 16), ('octave', '<i4', 20), ('laplacian', 'i1', 24))
DESCRIPTOR_OFFSET = 28
RECORD_FIELDS: tuple[str, ...] = ('x', 'y', 'size', 'angle', 'response', 'octave', 'laplacian',
                                  'valid')
"""Floats of a device keypoint record before its descriptor (64 or 128 floats), so that one read
fetches a whole record; the kernels see field ``name`` at index ``KP_<NAME>``."""
KP_FIELDS = len(RECORD_FIELDS)


def record_defines() -> dict[str, int]:
    """Build defines of the record layout: KP_X ... KP_VALID and KP_FIELDS."""
    return {**{f'KP_{name.upper()}': index for index, name in enumerate(RECORD_FIELDS)},
            'KP_FIELDS': KP_FIELDS}


def point_dtype(length: int) -> np.dtype:
    """Structured dtype of one keypoint with a ``length``-value descriptor."""
    names = [name for name, _, _ in SCALAR_FIELDS] + ['descriptor']
    formats = [fmt for _, fmt, _ in SCALAR_FIELDS] + [('<f4', (length,))]
    offsets = [offset for _, _, offset in SCALAR_FIELDS] + [DESCRIPTOR_OFFSET]
    return np.dtype({'names': names, 'formats': formats, 'offsets': offsets,
                     'itemsize': DESCRIPTOR_OFFSET + 4 * length})


@dataclass(frozen=True)
class Keypoints:
    """
    N keypoints in OpenCV's conventions.

    Pixel coordinates (x right, y down, pixel centres at integers), size = filter side in pixels,
    angle in degrees [0, 360) measured from +x towards +y, response = Hessian determinant, octave
    index, laplacian sign (-1, 0, 1), descriptor N x 64 or N x 128 float32 with unit L2 norm.
    """

    x: np.ndarray
    y: np.ndarray
    size: np.ndarray
    angle: np.ndarray
    response: np.ndarray
    octave: np.ndarray
    laplacian: np.ndarray
    descriptor: np.ndarray

    def __len__(self) -> int:
        return len(self.x)

    @classmethod
    def empty(cls, length: int) -> Keypoints:
        f = np.zeros(0, np.float32)
        return cls(f, f, f, f, f, np.zeros(0, np.int32), np.zeros(0, np.int8),
                   np.zeros((0, length), np.float32))

    @classmethod
    def from_records(cls, records: np.ndarray) -> Keypoints:
        """
        Build keypoints from the device layout, dropping invalid rows, order kept.

        The layout is N x (KP_FIELDS + length) float32 records (RECORD_FIELDS, then the
        descriptor). The descriptor is a view into ``records`` (no copy of the largest part).
        """
        valid = records[:, RECORD_FIELDS.index('valid')] > 0
        r = records if valid.all() else records[valid]
        field = dict(zip(RECORD_FIELDS, r[:, :KP_FIELDS].T, strict=True))
        return cls(field['x'].copy(), field['y'].copy(), field['size'].copy(),
                   field['angle'].copy(), field['response'].copy(),
                   field['octave'].astype(np.int32), field['laplacian'].astype(np.int8),
                   r[:, KP_FIELDS:])

    @property
    def points(self) -> np.ndarray:
        """N x 2 float64 (x, y)."""
        return np.stack([self.x, self.y], axis=1).astype(np.float64)

    def to_structured(self) -> np.ndarray:
        """One record per keypoint in ``point_dtype`` (PointCloud2 point layout)."""
        out = np.zeros(len(self), point_dtype(self.descriptor.shape[1]))
        for name, _, _ in SCALAR_FIELDS:
            out[name] = getattr(self, name)
        out['descriptor'] = self.descriptor
        return out

    @classmethod
    def from_structured(cls, records: np.ndarray) -> Keypoints:
        """Inverse of ``to_structured`` (any array with those field names)."""
        return cls(*(np.ascontiguousarray(records[name], dtype)
                     for name, dtype in (('x', np.float32), ('y', np.float32),
                                         ('size', np.float32), ('angle', np.float32),
                                         ('response', np.float32), ('octave', np.int32),
                                         ('laplacian', np.int8), ('descriptor', np.float32))))
