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
darkened (x 0.75); unknown (NaN) pixels are black. Host-side NumPy: it runs only when someone
subscribes to flow/color, on the flow already downloaded for the flow topic.
"""
from __future__ import annotations

import numpy as np

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


def flow_to_color(flow: np.ndarray, max_flow: float = 0.0) -> np.ndarray:
    """
    Draw HxWx2 ``flow`` as an HxWx3 bgr8 picture.

    ``max_flow`` <= 0 scales by the largest finite magnitude in the frame.
    """
    flow = np.asarray(flow, np.float64)
    known = np.isfinite(flow).all(axis=2)
    u = np.where(known, flow[..., 0], 0.0)
    v = np.where(known, flow[..., 1], 0.0)
    radius = np.hypot(u, v)
    if max_flow <= 0:
        max_flow = float(radius.max()) if known.any() else 0.0
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
