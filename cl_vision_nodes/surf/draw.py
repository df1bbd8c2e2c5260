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
Keypoints drawn on their frame: circles of the keypoint size with a radius at the angle.

``KeypointPainter`` draws them on the device, on the gray frame and from the keypoint records the
extractor leaves there (``SurfExtractor.last_device_frame``), and downloads only the finished
bgr8 picture. Why: subscribing to a visual topic must cost under 10 % of the node's compute, and
on the host the gray frame was downloaded, converted and drawn on with OpenCV, 30 to 60 ms a
frame at 640x480 (2700 keypoints) and 90 to 140 ms at 1280x720 (8000), more than SURF itself on
a GPU; the device takes about 1 to 4 ms on a 2-core PoCL and 0.15 to 0.3 ms on an H100, mostly
the download. The device draws one-pixel circles and lines without anti-aliasing;
``draw_keypoints`` (OpenCV, anti-aliased) stays for the CLI and as the reference of where the
circles lie.
"""
from __future__ import annotations

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.pictures import check_device_input, download_bgr8, PIXEL_GROUP
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.keypoints import Keypoints, KP_FIELDS, record_defines
import cv2
import numpy as np
import pyopencl as cl

POSITIVE_LAPLACIAN, NEGATIVE_LAPLACIAN = (0, 255, 0), (0, 128, 255)  # BGR: bright / dark blobs
KERNELS = 'surf/draw.cl'
KEYPOINT_LANES = 16
"""Work-items sharing one keypoint's circle and radius on a GPU: a circle of radius r has about
0.7 r rows per octant, so each lane takes a few up to r ~ 50 px. On a CPU one work-item draws a
keypoint (the lanes would repeat its set-up, sin and cos, for parallelism a CPU lacks: 16 lanes
made PoCL's overlay 4x slower), as ELAS' raster_lanes."""
KEYPOINTS_PER_GROUP = 64
"""Work-items of a work-group of draw_keypoints: lanes x keypoints."""


def draw_keypoints(gray: np.ndarray, keypoints: Keypoints) -> np.ndarray:
    """Draw every keypoint on a bgr8 picture of ``gray`` (HxW, 0..255)."""
    canvas = cv2.cvtColor(np.clip(gray, 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
    radius = keypoints.size / 2
    angle = np.radians(keypoints.angle)
    tips = np.stack([keypoints.x + radius * np.cos(angle),
                     keypoints.y + radius * np.sin(angle)], axis=1)
    for (x, y), r, tip, sign in zip(keypoints.points, radius, tips, keypoints.laplacian):
        colour = POSITIVE_LAPLACIAN if sign > 0 else NEGATIVE_LAPLACIAN
        centre = (int(round(x)), int(round(y)))
        cv2.circle(canvas, centre, max(int(round(r)), 1), colour, 1, cv2.LINE_AA)
        cv2.line(canvas, centre, (int(round(tip[0])), int(round(tip[1]))), colour, 1,
                 cv2.LINE_AA)
    return canvas


def _packed(bgr: tuple[int, int, int]) -> int:
    """Return a BGR colour as the kernel's 0xRRGGBB."""
    blue, green, red = bgr
    return red << 16 | green << 8 | blue


class KeypointPainter:
    """Keypoints drawn on their gray frame, on the device."""

    def __init__(self, runtime: ClRuntime):
        """Build the kernels (KernelBuildError while a node starts)."""
        self.runtime = runtime
        self.buffers = runtime.buffers()
        program = runtime.program(KERNELS, {**record_defines(),
                                            'POSITIVE_COLOUR': _packed(POSITIVE_LAPLACIAN),
                                            'NEGATIVE_COLOUR': _packed(NEGATIVE_LAPLACIAN)})
        self._gray_to_bgr = program.kernel('gray_to_bgr')
        self._draw_keypoints = program.kernel('draw_keypoints')
        self._gray_group = self._gray_to_bgr.fit((PIXEL_GROUP,))
        lanes = KEYPOINT_LANES if runtime.limits.is_gpu else 1
        self._keypoint_group = self._draw_keypoints.fit((lanes, KEYPOINTS_PER_GROUP // lanes))

    def draw(self, gray: cl.Buffer, height: int, width: int, records: cl.Buffer, count: int,
             record_floats: int, out: np.ndarray | None = None) -> np.ndarray:
        """
        Draw ``count`` keypoint records on the HxW float ``gray``; return the HxWx3 bgr8 picture.

        ``records`` holds ``count`` rows of ``record_floats`` float32 in the extractor's layout
        (keypoints.RECORD_FIELDS, then the descriptor); rows not valid are skipped. The picture
        is downloaded into ``out`` when given (writable C-contiguous uint8, H*W*3 elements), else
        into a new array.
        """
        pixels = height * width
        check_device_input(gray, pixels * 4, 'gray')
        if record_floats < KP_FIELDS:
            raise ImageFormatError(f'keypoint records of {record_floats} floats: the layout has '
                                   f'{KP_FIELDS} before the descriptor')
        picture = self.buffers.get('picture', pixels * 3)
        self._gray_to_bgr((pixels,), (gray, np.int32(pixels), picture), 'draw', self._gray_group)
        if count > 0:
            check_device_input(records, count * record_floats * 4, 'keypoint records')
            for positive in (0, 1):  # one colour a launch: no pixel mixes two (draw.cl)
                self._draw_keypoints((self._keypoint_group[0], count),
                                     (records, np.int32(count), np.int32(record_floats),
                                      np.int32(width), np.int32(height), np.int32(positive),
                                      picture), 'draw', self._keypoint_group)
        return download_bgr8(self.runtime, picture, height, width, out)
