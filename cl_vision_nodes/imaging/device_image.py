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
Raw image bytes onto the device and back: the first and last stage of every algorithm.

``DeviceImages.upload_gray`` sends a message's bytes as they are (padded rows, either byte order,
Bayer, YUV) and decodes them to float gray on the device, so the host never converts pixels.
``decode`` keeps a mono8 frame's bytes for its consumers to decode (``DeviceGray``,
``floats``): flow's pyramid reads the bytes themselves. ``convert`` is the whole round trip used
by ``convert_node`` and the tests. Each ``DeviceImages`` owns its buffers: an estimator that keeps
two decoded frames asks for two roles, and a role's frame keeps its bytes until the next frame of
that role. A frame can also be decoded ahead of its bytes (``staged``): the upload reads the
page-locked staging array when the queue reaches it, and ``stage`` fills it (behind a hold on
the queue, ``QueueGate``, flow enqueues the next frame's work before it arrives).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cl_vision_nodes.imaging.encodings import (array_to_raw, as_bytes, HOST_IS_BIG_ENDIAN,
                                               opencl_defines, RawImage, validate,
                                               validate_intensity)
from cl_vision_nodes.opencl.kernel import BoundLaunches
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

OutputEncoding = Literal['mono8', '32FC1', 'passthrough']
OUTPUT_ENCODINGS: tuple[str, ...] = ('mono8', '32FC1', 'passthrough')
KERNELS = 'imaging/device_image.cl'


@dataclass(frozen=True)
class Mono8Frame:
    """A mono8 message's bytes on the device as uploaded: ``step`` bytes a row."""

    buffer: cl.Buffer
    step: int
    height: int
    width: int


@dataclass(frozen=True)
class DeviceGray:
    """
    A frame on the device as every algorithm starts from it.

    Float32 HxW intensities on the 0..255 scale (``buffer``), or a mono8 frame's bytes
    (``mono8``) that each consumer decodes itself. What one upload of a message becomes: the
    pipeline node decodes a camera frame once and hands the same ``DeviceGray`` to flow, SURF
    and ELAS. A mono8 frame is not decoded where it is uploaded: a flow pyramid makes its level
    1 from the bytes, a copy decodes into its target and ``DeviceImages.floats`` into its
    caller's buffer, each on its consumer's own queue (a launch fewer where nothing needs
    floats, 2.4 MB fewer moved at 640 x 480, and no wait between queues). Valid until its owner
    decodes the next frame of its role.
    """

    buffer: cl.Buffer | None
    height: int
    width: int
    mono8: Mono8Frame | None = None

    def __post_init__(self) -> None:
        if (self.buffer is None) == (self.mono8 is None):
            raise ValueError('a DeviceGray holds either decoded floats or mono8 bytes')

    @property
    def source(self) -> cl.Buffer | Mono8Frame:
        """Return what the frame is held as: the bytes of a mono8 frame, else the floats."""
        return self.mono8 if self.mono8 is not None else self.buffer

    @property
    def nbytes(self) -> int:
        """Return the size of the frame's floats."""
        return self.height * self.width * 4

    def held_in(self, buffer: cl.Buffer) -> bool:
        """Whether the decoded frame is in ``buffer`` now."""
        return self.buffer is not None and self.buffer == buffer


class DeviceImages:
    """Uploads, decodes and downloads images with buffers reused across frames."""

    def __init__(self, runtime: ClRuntime, staging: bool | None = None):
        """
        Build the decode kernels on ``runtime``.

        ``staging``: whether uploads go through the page-locked staging array (by default on
        GPUs), which then holds the last frame's bytes.
        """
        self.runtime = runtime
        self.through_staging = runtime.limits.is_gpu if staging is None else staging
        self.buffers = runtime.buffers()
        self._staged: cl.Event | None = None
        self._launches = BoundLaunches()  # a stream's decodes repeat one launch
        program = runtime.program(KERNELS, opencl_defines())
        self._decode = program.kernel('decode_gray')
        self._decode_mono8 = program.kernel('decode_mono8')
        self._decode_rgb8 = program.kernel('decode_rgb8')
        self._to_mono8 = program.kernel('gray_to_mono8')
        self._scale = program.kernel('scale_f32')
        self._repack_rows = program.kernel('repack_rows')

    def upload_raw(self, raw: RawImage, role: str = 'raw', staged: bool = False) -> cl.Buffer:
        """
        Copy the message bytes (step*height of them) into the device buffer of ``role``.

        On a GPU through a page-locked staging array: the transfer then starts at once, where
        from the message's own (pageable) memory the driver first copied it aside. ``staged``:
        from the staging array as it is when the queue reaches the copy (``stage``).
        """
        validate(raw)
        nbytes = raw.step * raw.height
        buf = self.buffers.get(role, nbytes, cl.mem_flags.READ_ONLY)
        if staged:
            host = self._staging(nbytes)
        elif self.through_staging:
            if self._staged is not None:
                self._staged.wait()  # the previous frame's transfer has read the array
            host = self.stage(raw)
        else:
            host = as_bytes(raw.data)[:nbytes]
        self._staged = self.runtime.upload(buf, host, 'upload')
        return buf

    def stage(self, raw: RawImage) -> np.ndarray:
        """
        Copy ``raw``'s bytes into the staging array, without waiting; return the array.

        The caller knows that no transfer reads the array now: the last one has completed, or
        waits behind a hold for these bytes.
        """
        staging = self._staging(raw.step * raw.height)
        np.copyto(staging, as_bytes(raw.data)[:staging.nbytes])
        return staging

    def _staging(self, nbytes: int) -> np.ndarray:
        return self.buffers.pinned('raw_host', (nbytes,), np.dtype(np.uint8))

    def upload_gray(self, raw: RawImage, role: str = 'gray', staged: bool = False) -> cl.Buffer:
        """Decode ``raw`` into a float32 HxW device buffer of intensities on the 0..255 scale."""
        info = validate_intensity(raw)
        src = self.upload_raw(raw, staged=staged)
        gray = self.buffers.get(role, raw.width * raw.height * 4)
        frame = (src, np.int32(raw.step), np.int32(raw.width), np.int32(raw.height))
        size = (raw.width, raw.height)
        if info.name == 'mono8':
            self._decode_mono8_into(Mono8Frame(src, raw.step, raw.height, raw.width), gray)
        elif info.name in ('bgr8', 'rgb8'):
            blue = np.int32(0 if info.name == 'bgr8' else 2)
            self._launches(self._decode_rgb8, size, (*frame, blue, gray), 'decode')
        else:
            swap = int(bool(raw.is_bigendian) != HOST_IS_BIG_ENDIAN and info.dtype.itemsize > 1)
            self._launches(self._decode, size, (*frame, np.int32(info.id), np.int32(swap), gray),
                           'decode')
        return gray

    def warm(self, width: int, height: int) -> None:
        """
        Decode a mono8 and a bgr8 frame of this size once.

        Each has a kernel of its own, and PoCL compiles a kernel for its work-group size when it
        first runs: without this, a bgr8 camera's first frame.
        """
        for encoding, channels in (('mono8', 1), ('bgr8', 3)):
            self.upload_gray(RawImage(encoding, height, width, width * channels, False,
                                      bytes(width * height * channels)), 'warm')

    def decode(self, raw: RawImage, role: str = 'gray', staged: bool = False) -> DeviceGray:
        """
        Upload and decode ``raw`` (``upload_gray``; ``staged`` as ``upload_raw``), as a DeviceGray.

        A mono8 frame is uploaded to bytes of its role and left for its consumers to decode.
        """
        if validate_intensity(raw).name != 'mono8':
            return DeviceGray(self.upload_gray(raw, role, staged), raw.height, raw.width)
        frame = Mono8Frame(self.upload_raw(raw, f'{role}_mono8', staged), raw.step, raw.height,
                           raw.width)
        return DeviceGray(None, raw.height, raw.width, frame)

    def floats(self, gray: DeviceGray, role: str = 'gray') -> cl.Buffer:
        """
        Return ``gray``'s float32 frame: its own, or a mono8 frame decoded into ``role``.

        The decode runs on this object's queue: a consumer on a queue of its own (a node's SURF)
        asks its own DeviceImages, so the floats are ready for its kernels without a wait.
        """
        source = gray.source
        if isinstance(source, cl.Buffer):
            return source
        decoded = self.buffers.get(role, gray.nbytes)
        self._decode_mono8_into(source, decoded)
        return decoded

    def _decode_mono8_into(self, frame: Mono8Frame, dst: cl.Buffer,
                           stage: str = 'decode') -> cl.Event:
        return self._launches(self._decode_mono8, (frame.width, frame.height),
                              (frame.buffer, np.int32(frame.step), np.int32(frame.width),
                               np.int32(frame.height), dst), stage)

    def copy(self, gray: DeviceGray, dst: cl.Buffer, stage: str = 'copy') -> None:
        """
        Copy a decoded frame into ``dst`` on the device (a consumer's own input buffer).

        A mono8 frame is decoded into ``dst`` from its bytes.
        """
        source = gray.source
        if isinstance(source, Mono8Frame):
            self._decode_mono8_into(source, dst, stage)
        else:
            self.runtime.copy(dst, source, stage, gray.nbytes)

    def download(self, buf: cl.Buffer, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """Blocking copy of a device buffer into a new host array."""
        out = np.empty(shape, dtype)
        self.runtime.download(out, buf, 'download')
        return out

    def convert(self, raw: RawImage, output: OutputEncoding, gain: float = 1.0) -> RawImage:
        """
        Round trip through the device.

        The result is gray (mono8 / 32FC1, times ``gain``) or the input encoding with packed
        little-endian rows (``passthrough``).
        """
        if output == 'passthrough':
            return self._repack(raw)
        gray = self.upload_gray(raw)
        count = raw.width * raw.height
        mono8 = output == 'mono8'
        out_buf = self.buffers.get(f'out_{output}', count * (1 if mono8 else 4))
        (self._to_mono8 if mono8 else self._scale)(
            (count,), (gray, np.int32(count), np.float32(gain), out_buf), 'scale')
        pixels = self.download(out_buf, (raw.height, raw.width),
                               np.dtype(np.uint8 if mono8 else np.float32))
        return array_to_raw(pixels, output)

    def _repack(self, raw: RawImage) -> RawImage:
        info = validate(raw)
        src = self.upload_raw(raw)
        row_bytes = raw.width * info.bytes_per_pixel
        item = info.dtype.itemsize
        swap = bool(raw.is_bigendian) != HOST_IS_BIG_ENDIAN and item > 1
        out_buf = self.buffers.get('out_passthrough', row_bytes * raw.height)
        self._repack_rows((row_bytes, raw.height),
                          (src, np.int32(raw.step), np.int32(row_bytes), np.int32(raw.height),
                           np.int32(item - 1 if swap else 0), out_buf), 'repack')
        packed = self.download(out_buf, (raw.height * row_bytes,), np.dtype(np.uint8))
        return RawImage(info.name, raw.height, raw.width, row_bytes, HOST_IS_BIG_ENDIAN, packed)
