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
Synthetic stereo pairs and flow sequences with exact ground truth, deterministic from a seed.

Used by tests, the demo and benchmarks where real data (../shared/data) is absent or where a
known answer at any image size is needed.

Scene model. A scene is a stack of layers, each a textured planar patch defined in the
*reference view* (the left image for stereo, frame 0 for flow):

- a texture T_k(x, y) in reference coordinates (a ``texture`` image, Lanczos-interpolated),
- a footprint: where the layer exists in the reference view (the background is everywhere),
- a depth plane a + b*x + c*y in reference coordinates: per pixel, the largest depth is in front,
- an affine motion A_k mapping a reference point to its position in view 1; view t sees it at
  A_k^t(p).

Rendering is backward mapping: pixel q of view t shows the front-most layer k among those whose
footprint contains A_k^-t(q), with intensity T_k(A_k^-t(q)). The reference view samples textures
at integer positions (exact texels); the other views sample them at sub-pixel positions.

What is exact, and the conventions:

- ``StereoSample.disparity``: for every LEFT pixel (occluded ones included) the disparity of the
  front-most plane, float32 pixels, ``x_R = x_L - d``, ``d > 0``. Larger disparity = nearer, so
  occlusions follow from z-ordering by disparity. Planes are fronto-parallel or slanted, so d is
  sub-pixel in general.
- ``FlowSample.flow``: for every pixel p of frame t, ``flow(p) = A_k^(t+1)(A_k^-t(p)) - p``,
  HxWx2 float32 ``(u, v)`` in pixels from frame t to frame t+1.
- ``valid``: p is visible in both views: its match lies inside [0, W-1] x [0, H-1] and the same
  layer is front-most there. Occluded, disoccluded and out-of-view pixels keep their exact
  ground truth (never NaN); mask them with ``valid``.
- Images are uint8. For valid pixels ``view_t+1(p + flow(p)) == view_t(p)`` (stereo:
  ``right(y, x - d) == left(y, x)``) up to the interpolation of a texture smoothed at
  ``sigma >= 1`` px (cv2.remap Lanczos-4, 1/32 px coordinate steps) and rounding to uint8: about
  half a grey level, more only where an interpolation stencil crosses a layer boundary. Integer
  translations are rendered without interpolation, hence match exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args, Literal

import cv2
import numpy as np

MotionKind = Literal['translation', 'rotation', 'zoom', 'piecewise']
Footprint = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Maps reference coordinates (x, y) to a bool mask: True where the layer exists."""

_TEXTURE_MARGIN = 4  # texels beyond the sampled area: Lanczos-4 never reads a mirrored border
_MAX_SLANT = 0.25  # |d(disparity)/dx| of slanted planes; keeps the right view well sampled


def texture(height: int, width: int, *, seed: int = 0, finest_sigma: float = 1.0) -> np.ndarray:
    """
    Float32 texture in 0..255 with structure at every scale and location, for matching tests.

    Sum of band-pass noise octaves (white noise smoothed at sigma = finest_sigma * 2**k, each of
    unit variance) plus random ellipses and rectangles for edges. Everything is smoothed at
    least at ``finest_sigma`` so that sub-pixel sampling stays accurate, yet the finest
    octave keeps gradients strong everywhere: no flat areas.
    """
    rng = np.random.default_rng(seed)
    shape = (height, width)
    image = np.zeros(shape, np.float32)
    sigma = finest_sigma
    while True:
        image += _unit_std(cv2.GaussianBlur(rng.standard_normal(shape, np.float32), (0, 0), sigma))
        sigma *= 2.0
        if sigma > max(height, width) / 4:
            break
    image += cv2.GaussianBlur(_random_shapes(rng, height, width), (0, 0), finest_sigma)
    low, high = float(image.min()), float(image.max())
    return (image - low) * np.float32(255.0 / max(high - low, 1e-6))


def _unit_std(image: np.ndarray) -> np.ndarray:
    """Scale to unit standard deviation so every noise octave contributes the same energy."""
    return image / max(float(image.std()), 1e-6)


def _random_shapes(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """Piecewise-constant canvas of random filled ellipses and rectangles (the texture's edges)."""
    canvas = np.zeros((height, width), np.float32)
    for _ in range(4 + height * width // 2000):
        cx, cy = rng.uniform(0, width), rng.uniform(0, height)
        rx, ry = rng.uniform(1, 2 + width / 8), rng.uniform(1, 2 + height / 8)
        value = float(rng.uniform(-2.0, 2.0))
        if rng.random() < 0.5:
            centre, axes = (round(cx), round(cy)), (round(rx), round(ry))
            cv2.ellipse(canvas, centre, axes, float(rng.uniform(0, 180)), 0, 360, value, -1)
        else:
            corner0, corner1 = (round(cx - rx), round(cy - ry)), (round(cx + rx), round(cy + ry))
            cv2.rectangle(canvas, corner0, corner1, value, -1)
    return canvas


# --- samples -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StereoSample:
    """A rectified pair with exact disparity per left pixel (``x_R = x_L - d``)."""

    left: np.ndarray  # HxW uint8
    right: np.ndarray  # HxW uint8
    disparity: np.ndarray  # HxW float32, pixels, > 0 everywhere
    valid: np.ndarray  # HxW bool: left pixel visible in the right view


@dataclass(frozen=True)
class FlowSample:
    """Two frames and the exact flow from frame0 to frame1."""

    frame0: np.ndarray  # HxW uint8
    frame1: np.ndarray  # HxW uint8
    flow: np.ndarray  # HxWx2 float32 (u, v), pixels
    valid: np.ndarray  # HxW bool: frame0 pixel visible in frame1


@dataclass(frozen=True)
class FlowSequence:
    """``n`` frames and the ``n - 1`` exact flows between consecutive frames."""

    frames: list[np.ndarray]  # HxW uint8 each
    flows: list[np.ndarray]  # flows[t]: HxWx2 float32 from frames[t] to frames[t + 1]
    valid: list[np.ndarray]  # valid[t]: HxW bool, frames[t] pixel visible in frames[t + 1]


@dataclass(frozen=True)
class Motion:
    """
    Frame-to-frame motion of a flow scene.

    ``translation``: the whole image moves by ``shift`` (dx, dy) px. ``rotation``: by
    ``angle_deg`` about the image centre, counter-clockwise as displayed (the sense of
    cv2.getRotationMatrix2D). ``zoom``: scaled by ``zoom`` about the image centre.
    ``piecewise``: the background moves by ``shift`` and ``n_objects`` ellipses/rectangles in
    front of it move by their own random translations of up to ``max_object_shift`` px per axis.
    """

    kind: MotionKind = 'translation'
    shift: tuple[float, float] = (1.5, -0.75)
    angle_deg: float = 2.0
    zoom: float = 1.03
    n_objects: int = 2
    max_object_shift: float = 3.0


# --- scene model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layer:
    motion: np.ndarray  # 3x3 affine: reference point -> its position in view 1
    depth: tuple[float, float, float]  # (a, b, c): depth a + b*x + c*y; larger = nearer
    footprint: Footprint | None = None  # None: everywhere (background)


@dataclass(frozen=True)
class _Scene:
    layers: tuple[_Layer, ...]
    textures: tuple[np.ndarray, ...]  # one per layer, texel (i, j) at reference (ox + j, oy + i)
    origin: tuple[int, int]  # (ox, oy)
    height: int
    width: int


def _view_matrix(layer: _Layer, view: int) -> np.ndarray:
    """Affine map from reference coordinates to the coordinates of ``view``."""
    return np.linalg.matrix_power(layer.motion, view)


def _apply(matrix: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Apply a 3x3 affine matrix to coordinate arrays."""
    return (
        matrix[0, 0] * x + matrix[0, 1] * y + matrix[0, 2],
        matrix[1, 0] * x + matrix[1, 1] * y + matrix[1, 2],
    )


def _select(index: np.ndarray, per_layer: list[np.ndarray]) -> np.ndarray:
    """Per pixel, the value of the layer named by ``index``."""
    return np.take_along_axis(np.stack(per_layer), index[None], axis=0)[0]


def _grid(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-centre coordinates (x, y) of an image, float64."""
    return np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))


def _make_scene(
    layers: tuple[_Layer, ...], height: int, width: int, n_views: int, rng: np.random.Generator
) -> _Scene:
    """Give each layer a texture covering every reference point any of the views samples."""
    corners_x = np.array([-1.0, width, -1.0, width])
    corners_y = np.array([-1.0, -1.0, height, height])
    xs, ys = [], []
    for layer in layers:
        for view in range(n_views):
            x, y = _apply(np.linalg.inv(_view_matrix(layer, view)), corners_x, corners_y)
            xs.append(x)
            ys.append(y)
    ox = int(np.floor(np.min(xs))) - _TEXTURE_MARGIN
    oy = int(np.floor(np.min(ys))) - _TEXTURE_MARGIN
    tex_width = int(np.ceil(np.max(xs))) + _TEXTURE_MARGIN + 1 - ox
    tex_height = int(np.ceil(np.max(ys))) + _TEXTURE_MARGIN + 1 - oy
    textures = tuple(
        texture(tex_height, tex_width, seed=int(rng.integers(2**32))) for _ in layers
    )
    return _Scene(layers, textures, (ox, oy), height, width)


def _frontmost(
    scene: _Scene, x: np.ndarray, y: np.ndarray, view: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Front-most layer at view coordinates (x, y) and the reference coordinates it shows there."""
    ref_x, ref_y, depths = [], [], []
    for layer in scene.layers:
        rx, ry = _apply(np.linalg.inv(_view_matrix(layer, view)), x, y)
        a, b, c = layer.depth
        covered = np.ones(rx.shape, bool) if layer.footprint is None else layer.footprint(rx, ry)
        depths.append(np.where(covered, a + b * rx + c * ry, -np.inf))
        ref_x.append(rx)
        ref_y.append(ry)
    index = np.argmax(np.stack(depths), axis=0)
    return index, _select(index, ref_x), _select(index, ref_y)


def _render(scene: _Scene, view: int) -> np.ndarray:
    """
    Render ``view`` by backward mapping into the layers' textures.

    Lanczos-4 rather than bicubic: it cuts the interpolation error of the ground truth, and it
    is exact at integer positions, so the reference view shows the texels themselves.
    """
    x, y = _grid(scene.height, scene.width)
    index, rx, ry = _frontmost(scene, x, y, view)
    ox, oy = scene.origin
    map_x, map_y = (rx - ox).astype(np.float32), (ry - oy).astype(np.float32)
    samples = [
        cv2.remap(tex, map_x, map_y, cv2.INTER_LANCZOS4, borderMode=cv2.BORDER_REFLECT_101)
        for tex in scene.textures
    ]
    return np.clip(np.rint(_select(index, samples)), 0, 255).astype(np.uint8)


def _correspondence(scene: _Scene, view: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact flow from ``view`` to ``view + 1`` at the pixels of ``view``, and its valid mask."""
    x, y = _grid(scene.height, scene.width)
    index, rx, ry = _frontmost(scene, x, y, view)
    targets = [_apply(_view_matrix(layer, view + 1), rx, ry) for layer in scene.layers]
    tx, ty = _select(index, [t[0] for t in targets]), _select(index, [t[1] for t in targets])
    index_next, _, _ = _frontmost(scene, tx, ty, view + 1)
    inside = (tx >= 0) & (tx <= scene.width - 1) & (ty >= 0) & (ty <= scene.height - 1)
    flow = np.stack([tx - x, ty - y], axis=-1).astype(np.float32)
    return flow, inside & (index_next == index)


# --- shapes and planes -------------------------------------------------------------------------

_Box = tuple[float, float, float, float]  # centre x, centre y, half width, half height


def _random_box(rng: np.random.Generator, height: int, width: int) -> _Box:
    """Draw an object's bounding box, mostly inside the image, 20..50 % of its size."""
    return (
        rng.uniform(0.15, 0.85) * (width - 1),
        rng.uniform(0.15, 0.85) * (height - 1),
        rng.uniform(0.1, 0.25) * width,
        rng.uniform(0.1, 0.25) * height,
    )


def _random_footprint(rng: np.random.Generator, box: _Box) -> Footprint:
    """Draw an ellipse inscribed in ``box`` or the box itself, at random."""
    cx, cy, rx, ry = box
    if rng.random() < 0.5:
        return lambda x, y: ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1.0
    return lambda x, y: (np.abs(x - cx) <= rx) & (np.abs(y - cy) <= ry)


def _random_plane(
    rng: np.random.Generator, low: float, high: float, box: _Box, slanted: bool
) -> tuple[float, float, float]:
    """Disparity plane (a, b, c), d = a + b*x + c*y, staying within [low, high] over ``box``."""
    cx, cy, rx, ry = box
    d0 = rng.uniform(low, high)
    spread = min(d0 - low, high - d0) if slanted else 0.0
    share = rng.uniform(0.0, 1.0)
    gx = rng.choice([-1.0, 1.0]) * min(spread * share / max(rx, 1.0), _MAX_SLANT)
    gy = rng.choice([-1.0, 1.0]) * spread * (1.0 - share) / max(ry, 1.0)
    return (float(d0 - gx * cx - gy * cy), float(gx), float(gy))


def _stereo_motion(plane: tuple[float, float, float]) -> np.ndarray:
    """Left -> right map of a plane's points: x_R = x - (a + b*x + c*y), y_R = y."""
    a, b, c = plane
    return np.array([[1.0 - b, -c, -a], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def translation(dx: float, dy: float) -> np.ndarray:
    """3x3 homography of a shift by (dx, dy) px (also the ground truth of make-bag's sequences)."""
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy], [0.0, 0.0, 1.0]])


def _background_motion(motion: Motion, height: int, width: int) -> np.ndarray:
    """3x3 frame-to-frame affine map of the background."""
    if motion.kind in ('translation', 'piecewise'):
        return translation(*motion.shift)
    centre = ((width - 1) / 2.0, (height - 1) / 2.0)
    if motion.kind == 'rotation':
        matrix = cv2.getRotationMatrix2D(centre, motion.angle_deg, 1.0)
    elif motion.kind == 'zoom':
        matrix = cv2.getRotationMatrix2D(centre, 0.0, motion.zoom)
    else:
        raise ValueError(f'unknown motion {motion.kind!r}; expected one of {get_args(MotionKind)}')
    return np.vstack([matrix, [0.0, 0.0, 1.0]])


# --- public generators -------------------------------------------------------------------------


def stereo_pair(
    height: int,
    width: int,
    *,
    seed: int = 0,
    max_disparity: float = 16.0,
    n_objects: int = 3,
    slanted: bool = True,
) -> StereoSample:
    """
    Render a rectified pair: a background plane and ``n_objects`` planar objects in front of it.

    Background disparities lie in [0.1, 0.35] * max_disparity, objects in [0.4, 1] *
    max_disparity (over their bounding box), so d <= max_disparity for every left pixel. With
    ``slanted`` the background and every second object are slanted planes, the other objects
    fronto-parallel; without it all planes are fronto-parallel (still at sub-pixel disparities).
    """
    if max_disparity <= 0:
        raise ValueError(f'max_disparity must be positive, got {max_disparity}')
    rng = np.random.default_rng(seed)
    image_box = ((width - 1) / 2.0, (height - 1) / 2.0, (width - 1) / 2.0, (height - 1) / 2.0)
    background = _random_plane(rng, 0.1 * max_disparity, 0.35 * max_disparity, image_box, slanted)
    layers = [_Layer(_stereo_motion(background), background)]
    for k in range(n_objects):
        box = _random_box(rng, height, width)
        plane = _random_plane(rng, 0.4 * max_disparity, max_disparity, box, slanted and k % 2 == 1)
        layers.append(_Layer(_stereo_motion(plane), plane, _random_footprint(rng, box)))
    scene = _make_scene(tuple(layers), height, width, 2, rng)
    flow, valid = _correspondence(scene, 0)
    return StereoSample(_render(scene, 0), _render(scene, 1), -flow[..., 0], valid)


def flow_sequence(
    n_frames: int,
    height: int,
    width: int,
    *,
    motion: Motion | MotionKind = 'translation',
    seed: int = 0,
) -> FlowSequence:
    """
    Render ``n_frames`` frames of a textured scene under ``motion``, with the exact flow.

    ``motion`` is a kind or a ``Motion``; the flow is the one between consecutive frames.
    """
    if n_frames < 2:
        raise ValueError(f'a flow sequence needs at least 2 frames, got {n_frames}')
    motion = Motion(motion) if isinstance(motion, str) else motion
    rng = np.random.default_rng(seed)
    layers = [_Layer(_background_motion(motion, height, width), (0.0, 0.0, 0.0))]
    if motion.kind == 'piecewise':
        for k in range(motion.n_objects):
            box = _random_box(rng, height, width)
            dx, dy = rng.uniform(-motion.max_object_shift, motion.max_object_shift, 2)
            footprint = _random_footprint(rng, box)
            layers.append(_Layer(translation(dx, dy), (k + 1.0, 0.0, 0.0), footprint))
    scene = _make_scene(tuple(layers), height, width, n_frames, rng)
    correspondences = [_correspondence(scene, view) for view in range(n_frames - 1)]
    return FlowSequence(
        frames=[_render(scene, view) for view in range(n_frames)],
        flows=[flow for flow, _ in correspondences],
        valid=[valid for _, valid in correspondences],
    )


def flow_pair(
    height: int, width: int, *, motion: Motion | MotionKind = 'translation', seed: int = 0
) -> FlowSample:
    """Two frames under ``motion`` and the exact flow from frame0 to frame1."""
    sequence = flow_sequence(2, height, width, motion=motion, seed=seed)
    return FlowSample(sequence.frames[0], sequence.frames[1], sequence.flows[0], sequence.valid[0])
