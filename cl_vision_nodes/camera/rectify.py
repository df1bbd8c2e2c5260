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
Rectifier: image_proc's rectify on the OpenCL device (raw image + calibration -> image_rect).

The maps are computed on the host once per calibration (rectify_maps.py) and kept on the device;
per frame the raw message bytes go up once, one kernel samples them at the maps (nearest, linear
or cubic, as cv2.remap with a constant border) and the rectified image comes back in the input's
encoding: mono8, mono16, bgr8, rgb8, bgra8, rgba8 and 32FC1 (whose border is NaN, as
image_geometry's, elsewhere 0). Bayer and YUV images are rectified as their gray (the device
decoder's demosaic and BT.601 weights, or the luma) and come back as mono8.

``rectify_gray`` is the path of a stereo matcher: it decodes a raw image (or takes a device
float gray buffer) and writes the rectified float gray into a device buffer the caller names,
e.g. the matcher's own input buffer, so a raw pair goes to disparity with one upload per image.
"""
from __future__ import annotations

from cl_vision_nodes.camera.calibration import CalibrationError, CameraCalibration
from cl_vision_nodes.camera.rectify_maps import rectify_maps
from cl_vision_nodes.errors import ImageFormatError, ParameterError
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import (ENCODINGS, HOST_IS_BIG_ENDIAN, opencl_defines,
                                               RawImage, validate_intensity)
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = ('imaging/device_image.cl', 'camera/rectify.cl')
INTERPOLATIONS: dict[str, int] = {'nearest': 0, 'linear': 1, 'cubic': 2}
"""Interpolation names and their ids in the kernel (OpenCV's INTER_* numbers)."""
INTERPOLATION_NUMBERS = tuple((str(number), name) for name, number in INTERPOLATIONS.items())
"""The numbers image_proc's integer ``interpolation`` takes for them, as parameter aliases."""
GRAY_KINDS = ('bayer', 'yuv')  # rectified as their decoded gray, returned as mono8
PREFERRED_GROUP = (16, 8)
RAW_GRAY_ROLE = 'raw_gray'  # the DeviceImages buffer a decoded gray lands in before rectifying
GRAY = ENCODINGS['32FC1']  # a device float gray buffer is a packed 32FC1 image


def interpolation_id(name: str) -> int:
    """Return the kernel id of an interpolation name; ParameterError for an unknown one."""
    found = INTERPOLATIONS.get(name)
    if found is None:
        raise ParameterError(f'interpolation: {name!r} is not one of '
                             f'{", ".join(INTERPOLATIONS)}')
    return found


class Rectifier:
    """
    Rectifies the images of one camera on a runtime; owns its maps and buffers.

    Its program is built by the constructor; ``set_calibration`` must come before the first
    image. Not thread-safe (one runtime and queue per thread).
    """

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime
        self.images = DeviceImages(runtime)
        self.buffers = runtime.buffers()
        defines = {**opencl_defines(),
                   **{f'INTER_{name.upper()}': ident for name, ident in INTERPOLATIONS.items()}}
        self._remap = runtime.program(KERNELS, defines).kernel('remap')
        self._local = self._remap.fit(PREFERRED_GROUP)
        self.calibration: CameraCalibration | None = None
        self.maps: tuple[np.ndarray, np.ndarray] | None = None  # host copies (map_x, map_y)
        self._map_buffers: tuple[cl.Buffer, ...] = ()

    def set_calibration(self, calibration: CameraCalibration) -> bool:
        """
        Use ``calibration`` from now on; return whether its maps were computed and uploaded.

        They are computed and uploaded only when it differs (by value) from the current one.
        """
        if calibration == self.calibration:
            return False
        self.maps = rectify_maps(calibration)
        self._map_buffers = tuple(self.buffers.get(role, host.nbytes, cl.mem_flags.READ_ONLY)
                                  for role, host in zip(('map_x', 'map_y'), self.maps))
        for buf, host in zip(self._map_buffers, self.maps):
            self.runtime.upload(buf, host, 'upload_maps')
        self.calibration = calibration
        return True

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of the images this rectifier takes and returns."""
        cal = self._calibration()
        return cal.height, cal.width

    def rectify(self, raw: RawImage, interpolation: str = 'linear') -> RawImage:
        """
        Return the rectified image in the encoding of ``raw``, with packed little-endian rows.

        Bayer and YUV images come out as mono8.
        """
        out, encoding = self.rectify_device(raw, interpolation)
        height, width = self.shape
        row_bytes = width * ENCODINGS[encoding].bytes_per_pixel
        data = self.images.download(out, (row_bytes * height,), np.dtype(np.uint8))
        return RawImage(encoding, height, width, row_bytes, False, data)

    def rectify_device(self, raw: RawImage,
                       interpolation: str = 'linear') -> tuple[cl.Buffer, str]:
        """
        Rectify as ``rectify`` does, without the download.

        Returns the device buffer of the rectified image (packed little-endian rows, owned by this
        rectifier, overwritten by the next call) and its encoding, for later stages on the device
        (the colours of a point cloud).
        """
        info = validate_intensity(raw)
        ident = interpolation_id(interpolation)
        height, width = self._check_size(raw.width, raw.height)
        if info.kind in GRAY_KINDS:
            src, step, swap = self.images.upload_gray(raw, RAW_GRAY_ROLE), 4 * width, 0
            src_info, out_info = GRAY, ENCODINGS['mono8']
        else:
            src, step = self.images.upload_raw(raw), raw.step
            swap = int(bool(raw.is_bigendian) != HOST_IS_BIG_ENDIAN and info.dtype.itemsize > 1)
            src_info = out_info = info
        out = self.buffers.get(f'out_{out_info.name}',
                               width * height * out_info.bytes_per_pixel)
        border = np.float32(np.nan if out_info.kind == 'float' else 0.0)
        self._launch(src, step, src_info.id, swap, ident, border, out, out_info.id)
        return out, out_info.name

    def rectify_gray(self, source: RawImage | cl.Buffer, out: cl.Buffer | None = None,
                     interpolation: str = 'linear') -> cl.Buffer:
        """
        Rectify into float32 gray (0..255 scale, HxW, border 0) in ``out``; nothing is downloaded.

        ``out`` defaults to a buffer of this rectifier. The source is a raw image (decoded on the
        device as ``DeviceImages.upload_gray`` does) or a device float gray buffer of the
        calibration's size. ``out`` must not be ``source``. Returns ``out``.
        """
        ident = interpolation_id(interpolation)
        if isinstance(source, RawImage):
            height, width = self._check_size(source.width, source.height)
            source = self.images.upload_gray(source, RAW_GRAY_ROLE)
        else:
            height, width = self.shape
        nbytes = 4 * width * height
        out = self.buffers.get('gray', nbytes) if out is None else out
        if source.size < nbytes or out.size < nbytes:
            raise ValueError(f'gray buffers of {source.size} and {out.size} bytes; a '
                             f'{width}x{height} float gray needs {nbytes}')
        if out == source:
            raise ValueError('rectify_gray cannot work in place: out is the source buffer')
        self._launch(source, 4 * width, GRAY.id, 0, ident, np.float32(0.0), out, GRAY.id)
        return out

    def _calibration(self) -> CameraCalibration:
        if self.calibration is None:
            raise CalibrationError('no calibration yet: a camera_info (set_calibration) must '
                                   'come before the first image')
        return self.calibration

    def _check_size(self, width: int, height: int) -> tuple[int, int]:
        cal = self._calibration()
        if (width, height) != (cal.width, cal.height):
            raise ImageFormatError(f'image is {width}x{height} but the {cal.describe()} is for '
                                   f'{cal.width}x{cal.height}')
        return height, width

    def _launch(self, src: cl.Buffer, step: int, src_encoding: int, swap: int,
                interpolation: int, border: np.float32, out: cl.Buffer,
                out_encoding: int) -> None:
        height, width = self.shape
        self._remap((width, height),
                    (src, np.int32(step), np.int32(width), np.int32(height),
                     np.int32(src_encoding), np.int32(swap), *self._map_buffers,
                     np.int32(width), np.int32(height),
                     np.int32(interpolation), border, out, np.int32(out_encoding)),
                    'rectify', local=self._local)
