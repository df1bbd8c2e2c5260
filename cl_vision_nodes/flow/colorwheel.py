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
Flow as a picture: the Middlebury colour wheel (Baker et al., ``flowToColor``/``computeColor``).

Hue is the direction (right = red, then counter-clockwise as displayed through yellow, green,
cyan, blue, magenta), saturation the magnitude relative to ``max_flow``; longer vectors are
darkened (x 0.75); unknown (NaN) pixels are black.

``FlowColorizer`` draws it on the device, from the flow buffer the estimator leaves there, and
downloads only the finished bgr8 picture. Why: subscribing to a visual topic must cost under
10 % of the node's compute, and on the host, in NumPy float64, the wheel took 45 ms a frame at
640x480 and 120 to 190 ms at 1280x720, more than the flow itself; on the device it is a few ms
on a 2-core PoCL and 0.2 to 0.3 ms on an H100, mostly the picture's download. With
``max_flow`` <= 0 the frame's largest magnitude is reduced on the device too (no host pass over
the flow). The picture is within one grey level of ``flow_to_color`` (float32 against float64),
which stays as the reference and for the CLI.
"""
from __future__ import annotations

from cl_vision_nodes.imaging.pictures import (check_device_input, download_bgr8, PIXEL_GROUP,
                                              reduction_items)
from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np
import pyopencl as cl

KERNELS = 'flow/colorwheel.cl'

_SEGMENTS = (15, 6, 4, 11, 13, 6)  # red-yellow, yellow-green, green-cyan, cyan-blue, ...


def _wheel() -> np.ndarray:
    """Return the 55 RGB colours of the wheel, 0..255, with the reference code's integer ramps."""
    ry, yg, gc, cb, bm, mr = _SEGMENTS
    rows: list[tuple[int, int, int]] = []
    rows += [(255, 255 * i // ry, 0) for i in range(ry)]
    rows += [(255 - 255 * i // yg, 255, 0) for i in range(yg)]
    rows += [(0, 255, 255 * i // gc) for i in range(gc)]
    rows += [(0, 255 - 255 * i // cb, 255) for i in range(cb)]
    rows += [(255 * i // bm, 0, 255) for i in range(bm)]
    rows += [(255, 0, 255 - 255 * i // mr) for i in range(mr)]
    return np.array(rows, np.float64)


WHEEL = _wheel()


def _known_motion(flow: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return (known, u, v, magnitude) of HxWx2 ``flow`` in float64, 0 where not finite."""
    flow = np.asarray(flow, np.float64)
    known = np.isfinite(flow).all(axis=2)
    u = np.where(known, flow[..., 0], 0.0)
    v = np.where(known, flow[..., 1], 0.0)
    return known, u, v, np.hypot(u, v)


def largest_motion(flow: np.ndarray) -> float:
    """
    Return the largest finite magnitude of HxWx2 ``flow`` (0 if none), as ``flow_to_color`` scales.

    A scale shared by several pictures must be this number: one in float32 is a rounding away
    and draws a picture other than ``flow_to_color``'s own.
    """
    return float(_known_motion(flow)[3].max(initial=0.0))


def flow_to_color(flow: np.ndarray, max_flow: float = 0.0) -> np.ndarray:
    """
    Draw HxWx2 ``flow`` as an HxWx3 bgr8 picture.

    ``max_flow`` <= 0 (or NaN) scales by the largest finite magnitude in the frame.
    """
    known, u, v, radius = _known_motion(flow)
    if not max_flow > 0:
        max_flow = float(radius.max(initial=0.0))
    scale = max_flow if max_flow > 0 else 1.0
    u, v, radius = u / scale, v / scale, radius / scale
    position = (np.arctan2(-v, -u) / np.pi + 1.0) / 2.0 * (len(WHEEL) - 1)
    k0 = np.floor(position).astype(np.intp)
    k1 = (k0 + 1) % len(WHEEL)
    f = (position - k0)[..., None]
    colour = ((1 - f) * WHEEL[k0] + f * WHEEL[k1]) / 255.0
    inside = (radius <= 1)[..., None]
    colour = np.where(inside, 1 - radius[..., None] * (1 - colour), colour * 0.75)
    rgb = np.floor(255.0 * colour).astype(np.uint8)
    rgb[~known] = 0
    return np.ascontiguousarray(rgb[..., ::-1])


class FlowColorizer:
    """The colour wheel of a device flow buffer, drawn on the device."""

    def __init__(self, runtime: ClRuntime):
        """Build the kernels and upload the wheel (KernelBuildError while a node starts)."""
        self.runtime = runtime
        self.buffers = runtime.buffers()
        program = runtime.program(KERNELS, {'WHEEL_COLOURS': len(WHEEL)})
        self._max_magnitude = program.kernel('max_magnitude')
        self._colorwheel = program.kernel('colorwheel')
        self._groups = {kernel: kernel.fit((PIXEL_GROUP,))
                        for kernel in (self._max_magnitude, self._colorwheel)}
        self._wheel = runtime.constant(WHEEL.astype(np.float32))

    def draw(self, flow: cl.Buffer, height: int, width: int, max_flow: float,
             out: np.ndarray | None = None) -> np.ndarray:
        """
        Draw the HxW float2 (u, v) ``flow`` as flow_to_color does; return the HxWx3 bgr8 picture.

        ``flow`` is float32 u, v interleaved (NaN = unknown), as the estimator's methods leave
        it; ``max_flow`` <= 0 (or NaN) scales by the frame's largest finite magnitude. The
        picture is downloaded into ``out`` when given (writable C-contiguous uint8, H*W*3
        elements), else into a new array.
        """
        count = height * width
        check_device_input(flow, count * 8, 'flow')
        top = self.buffers.get('top', 4)
        if not max_flow > 0:
            max_flow = 0.0
            self.runtime.fill(top, np.uint32(0), 'draw')
            self._max_magnitude((reduction_items(count),), (flow, np.int32(count), top), 'draw',
                                self._groups[self._max_magnitude])
        picture = self.buffers.get('picture', count * 3)
        self._colorwheel((count,), (flow, np.int32(count), np.float32(max_flow), top,
                                    self._wheel, picture), 'draw', self._groups[self._colorwheel])
        return download_bgr8(self.runtime, picture, height, width, out)
