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
Depth image and point cloud of a disparity map, computed on the device where it lies.

``Reprojector`` turns a device disparity map (ElasMatcher's output, or a map uploaded with
``upload``) into a REP 118 depth image (32FC1 metres; NaN where no depth, +inf where the
disparity says "at infinity") and into stereo_image_proc's point cloud (x, y, z in metres in the
frame of the left rectified camera, rgb from the left image), organised or dense. The host
receives finished bytes: the depth pixels, or the PointCloud2 data of ``point_cloud.py``.

With ELAS ``subsampling`` the map holds the disparities (in input pixels) of input pixels
(2i, 2j): ``DisparityMap(subsampled=True)`` reprojects them with the input's geometry and
colours, which is the geometry scaled by 0.5 applied to the halved disparities.
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import (HOST_IS_BIG_ENDIAN, opencl_defines, RawImage,
                                               validate)
from cl_vision_nodes.opencl.limits import MIN_GROUP
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout, PointCloud
import numpy as np
import pyopencl as cl

KERNELS = ('imaging/device_image.cl', 'stereo/reproject.cl')
SCAN_GROUP = MIN_GROUP
"""Pixels per block of the dense compaction (the work-group size of its kernels): the smallest
limit we support, so every device runs the same blocks."""
COLOR_KINDS = ('gray', 'color', 'bayer')
NO_RGB = -1


@dataclass(frozen=True)
class DisparityMap:
    """
    A float32 disparity map on the device: ``height`` x ``width``, row-major.

    In pixels of the input images (``x_R = x_L - d``); values below ``min_disparity`` (and NaN,
    inf) are invalid. ``subsampled``: pixel (i, j) is input pixel (2i, 2j) (ELAS ``subsampling``).
    """

    buffer: cl.Buffer
    width: int
    height: int
    min_disparity: float
    subsampled: bool = False

    @property
    def pixel_step(self) -> int:
        return 2 if self.subsampled else 1

    @property
    def count(self) -> int:
        return self.width * self.height


class Reprojector:
    """
    Depth and points of disparity maps on one runtime.

    It owns its buffers (reused while the map size and layout stay the same). Its program is built
    by the constructor.
    """

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime
        self.images = DeviceImages(runtime)
        self.buffers = runtime.buffers()
        program = runtime.program(KERNELS, {**opencl_defines(), 'SCAN_GROUP': SCAN_GROUP})
        self._depth = program.kernel('depth_map')
        self._points = program.kernel('point_cloud')
        self._scan = program.kernel('scan_blocks')
        self._compact = program.kernel('compact_points')

    def upload(self, disparity: np.ndarray, min_disparity: float,
               subsampled: bool = False) -> DisparityMap:
        """Upload a host disparity map (HxW float32, e.g. a DisparityImage's) to the device."""
        host = np.ascontiguousarray(disparity, dtype=np.float32)
        if host.ndim != 2 or host.size == 0:
            raise ImageFormatError(f'disparity must be a non-empty HxW array; got shape '
                                   f'{host.shape}')
        buf = self.buffers.get('disparity', host.nbytes, cl.mem_flags.READ_ONLY)
        self.runtime.upload(buf, host, 'upload')
        return DisparityMap(buf, host.shape[1], host.shape[0], float(min_disparity), subsampled)

    def depth(self, disparity: DisparityMap, geometry: StereoGeometry) -> np.ndarray:
        """Return the depth image (HxW float32 metres, the map's shape)."""
        out = self.buffers.get('depth', 4 * disparity.count)
        self._depth((disparity.count,),
                    (disparity.buffer, np.int32(disparity.count),
                     np.float32(disparity.min_disparity), np.float32(geometry.delta_cx),
                     np.float32(geometry.fx * geometry.baseline), out), 'depth')
        return self.images.download(out, (disparity.height, disparity.width),
                                    np.dtype(np.float32))

    def points(self, disparity: DisparityMap, geometry: StereoGeometry,
               layout: CloudLayout = CloudLayout(), *, dense: bool = False,
               color: RawImage | None = None) -> PointCloud:
        """
        Return the point cloud, organised or ``dense``.

        Organised: the map's shape, NaN x, y, z where there is no point; ``dense``: one row of the
        valid points, in map order. With ``layout.use_color``, ``color`` is the left image
        (mono8/mono16, bgr8/rgb8/bgra8/rgba8 or Bayer, the size of the input images) whose pixel
        colours the points take.
        """
        image, image_args = self._color_source(disparity, layout, color)
        words = layout.point_step // 4
        rgb_offset = layout.rgb_offset
        blocks = -(-disparity.count // SCAN_GROUP)
        cloud = self.buffers.get('cloud', disparity.count * layout.point_step)
        counts = self.buffers.get('block_counts', 4 * blocks)
        self._points((disparity.count,),
                     (disparity.buffer, np.int32(disparity.width), np.int32(disparity.count),
                      np.int32(disparity.pixel_step), np.float32(disparity.min_disparity),
                      np.float32(geometry.delta_cx),
                      np.float32(geometry.fx * geometry.baseline), np.float32(geometry.fx),
                      np.float32(geometry.fy), np.float32(geometry.cx),
                      np.float32(geometry.cy), image, *image_args, np.int32(words),
                      np.int32(NO_RGB if rgb_offset is None else rgb_offset // 4), cloud,
                      counts), 'points', (SCAN_GROUP,))
        if not dense:
            data = self.images.download(cloud, (disparity.count * layout.point_step,),
                                        np.dtype(np.uint8))
            return PointCloud(data, disparity.height, disparity.width, layout, is_dense=False)
        return self._compacted(cloud, counts, blocks, disparity.count, layout)

    def _compacted(self, cloud: cl.Buffer, counts: cl.Buffer, blocks: int, count: int,
                   layout: CloudLayout) -> PointCloud:
        offsets = self.buffers.get('block_offsets', 4 * (blocks + 1))
        dense = self.buffers.get('dense_cloud', count * layout.point_step)
        self._scan((SCAN_GROUP,), (counts, np.int32(blocks), offsets), 'points', (SCAN_GROUP,))
        self._compact((count,), (cloud, np.int32(count), np.int32(layout.point_step // 4),
                                 offsets, dense), 'points', (SCAN_GROUP,))
        total = np.empty(1, np.int32)
        self.runtime.download(total, offsets, 'download', src_offset=4 * blocks)
        valid = int(total[0])
        data = np.empty(valid * layout.point_step, np.uint8)
        if valid:
            self.runtime.download(data, dense, 'download')
        return PointCloud(data, 1, valid, layout, is_dense=True)

    def _color_source(self, disparity: DisparityMap, layout: CloudLayout,
                      color: RawImage | None) -> tuple[cl.Buffer, tuple[np.int32, ...]]:
        """
        Return the colour image on the device and its kernel arguments.

        The arguments are step, width, height, encoding, byte swap; without colour, the disparity
        buffer stands in (never read).
        """
        if not layout.use_color:
            return disparity.buffer, tuple(np.int32(0) for _ in range(5))
        if color is None:
            raise ImageFormatError('use_color needs the left image: pass color=RawImage')
        info = validate(color)
        if info.kind not in COLOR_KINDS:
            raise ImageFormatError(
                f'{info.name} has no colour for a point cloud; expected mono8, mono16, bgr8, '
                'rgb8, bgra8, rgba8 or a Bayer encoding (or use_color off)')
        step = disparity.pixel_step
        if (color.width // step, color.height // step) != (disparity.width, disparity.height):
            expected = (f'{disparity.width * step}x{disparity.height * step} (or one more '
                        'pixel) for a subsampled map' if disparity.subsampled
                        else f'{disparity.width}x{disparity.height}')
            raise ImageFormatError(f'colour image is {color.width}x{color.height}; the '
                                   f'{disparity.width}x{disparity.height} disparity map needs '
                                   f'{expected}')
        swap = int(bool(color.is_bigendian) != HOST_IS_BIG_ENDIAN and info.dtype.itemsize > 1)
        return self.images.upload_raw(color), (
            np.int32(color.step), np.int32(color.width), np.int32(color.height),
            np.int32(info.id), np.int32(swap))
