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
Disparity maps, depth images and point clouds as files, each format chosen by the suffix.

Disparity: .pfm or .npy (float32, inf = invalid) or .png (KITTI 16-bit, d*256, 0 = invalid).
Depth: .npy or .pfm (float32 metres, NaN = no depth) or .png (16-bit millimetres). Points: .ply
(the valid points, x y z [red green blue]) or .npy (stereo.point_cloud.point_table).
"""
from __future__ import annotations

from pathlib import Path

from cl_vision_nodes.dataio.formats import (write_depth_png, write_kitti_disparity, write_pfm,
                                            write_ply)
from cl_vision_nodes.stereo.point_cloud import point_table, PointCloud
import numpy as np

DISPARITY_SUFFIXES = ('.pfm', '.png', '.npy')
DEPTH_SUFFIXES = ('.npy', '.pfm', '.png')
POINTS_SUFFIXES = ('.ply', '.npy')


def write_disparity(out: Path, disparity: np.ndarray) -> None:
    """Write a map whose invalid pixels are negative (ElasMatcher's)."""
    valid = disparity >= 0
    if out.suffix == '.png':
        write_kitti_disparity(out, np.where(valid, disparity, np.nan))
    else:
        stored = np.where(valid, disparity, np.inf).astype(np.float32)
        write_pfm(out, stored) if out.suffix == '.pfm' else np.save(out, stored)


def write_depth(out: Path, depth: np.ndarray) -> str:
    """Write the depth image; return a summary for a report line."""
    if out.suffix == '.png':
        write_depth_png(out, depth)
    else:
        write_pfm(out, depth) if out.suffix == '.pfm' else np.save(out, depth)
    finite = np.isfinite(depth)
    median = f', median {np.median(depth[finite]):.2f} m' if finite.any() else ''
    return f'depth {100 * finite.mean():.1f} % finite{median} -> {out}'


def write_points(out: Path, cloud: PointCloud, ascii_ply: bool) -> str:
    """
    Write the cloud (.ply: its points; .npy: the table, organised or dense as computed).

    Return a summary for a report line.
    """
    table = point_table(cloud)
    if out.suffix == '.ply':
        flat = table.reshape(-1)
        xyz = np.stack([flat[name] for name in 'xyz'], axis=1)
        rgb = np.stack([flat[name] for name in ('red', 'green', 'blue')], axis=1) \
            if cloud.layout.use_color else None
        write_ply(out, xyz, rgb, binary=not ascii_ply)
    else:
        np.save(out, table)
    count = int(np.isfinite(table['z']).sum())
    return f'{count} points ({"dense" if cloud.is_dense else "organised"}) -> {out}'
