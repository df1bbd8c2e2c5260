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
Middlebury 2014 Motorcycle rendered into a short stereo sequence with exact flow and disparity.

Real imagery with real depth and no download: scikit-image ships the pair with its ground-truth
disparity (``skimage.data.stereo_motorcycle()``, 741x500, the benchmark's images downscaled by 4;
unknown disparity is ``inf`` there, not NaN as its docstring says). The calibration is the one
that docstring gives for that size: f = 994.978 px, principal point (311.193, 254.877), doffs =
31.086 px, baseline 193.001 mm, so a left pixel (x, y) with disparity d lies at depth
Z = f * B / (d + doffs).

The scene. Every left source pixel becomes a 3-D point in the frame of the source left camera
(the world); between pixels the surface is the bilinear interpolation of 1/Z (exact for planes).
Where the source has no disparity it is filled along its row with the farther of its nearest
known neighbours (what stereo occlusions hide is background), so that every rendered pixel shows
something; such points never enter the truth. The right source image is the real right view; its
surface is the left one seen from the right camera (rendered as below, at full size), the
background beside it where the left camera does not see.

The rig. A virtual rectified pair of focal ``scale * f`` and baseline B with the principal point
at the image centre; its view covers ``SOURCE_VIEW`` source pixels around the source principal
point (``scale`` = the output size over that). Between frames it drives ``forward_m`` along its
heading and turns right by ``yaw_deg`` about a vertical axis ``pivot_m`` behind the left camera,
as a camera on the front of a car turns about the rear axle through a bend: the turn moves the
camera sideways too, so near and far points move differently (parallax) besides the rotation's
shift of the whole view. The right camera sits at B along the left camera's x axis, so the
disparity of a point at depth Z is ``scale * f * B / Z`` and ``x_R = x_L - d``. Left views are
rendered from the left source, right views from the right source: the pair shows the real
left/right differences (exposure, specularities) that a matcher meets.

Rendering a view. The source points are splatted with a z-buffer (each point on the 2x2 pixels
around it, nearest depth wins) for each pixel's first depth; pixels nothing lands on
(disocclusions) take the depth of the farther of their nearest row neighbours and show that
neighbour's intensity, as depth-image renderers do. Then each splatted pixel's source position s is
iterated until the surface point at s projects onto the pixel itself (``CONVERGED_PX``). The
pixel shows the source image at s (bilinear, after an anti-alias blur for ``scale``), and its
truth is computed from that 3-D point: images and truth come from one geometry.

Truth, NaN where unknown. A pixel is known where it was splatted, its iteration converged and the
four source taps around s have measured depth. The flow of a known pixel of frame k is the motion
of its 3-D point into frame k + 1, kept where the point is visible there: inside the image, all
four pixels around it known, and its depth within ``VISIBLE_DEPTH`` (relative) of the depth that
frame k + 1 shows there (otherwise it is occluded). The disparity is the same correspondence into
the right view of the same frame. Warping frame k + 1 by the flow reproduces frame k to about
1.3 grey levels at 320x240 (bilinear resampling); the right view by the disparity reproduces the
left to about 4 (the real pair's own differences). Consecutive frames differ by the motion and
resampling only, without a camera's noise or exposure changes, which makes flow easier than in
real video.
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.flow.reference import bilinear
from cl_vision_nodes.imaging.encodings import array_to_raw, to_gray_reference
import numpy as np

SOURCE_FOCAL_PX = 994.978
SOURCE_PRINCIPAL = (311.193, 254.877)  # (cx, cy) of the left view
SOURCE_DOFFS_PX = 31.086  # principal point x of the right view minus that of the left
BASELINE_M = 0.193001
SOURCE_VIEW = (400.0, 533.0)  # (height, width) in source pixels the virtual camera covers
FORWARD_M = 0.025
YAW_DEG = 0.2
PIVOT_M = 3.0
MAX_FRAMES = 20  # the view turns by 3.8 degrees, 66 of the 164 source px right of it
CONVERGED_PX = 0.01
VISIBLE_DEPTH = 0.01
_ITERATIONS = 6


@dataclass(frozen=True)
class StereoFrame:
    """One time step: a rectified pair and its exact truth (NaN = unknown)."""

    left: np.ndarray  # HxW uint8
    right: np.ndarray  # HxW uint8
    disparity: np.ndarray  # HxW float32 px, x_R = x_L - d; NaN: unknown or occluded in right
    flow: np.ndarray | None  # HxWx2 float32 (u, v) from the previous left frame, on its grid


@dataclass(frozen=True)
class Sequence:
    """The frames and the rig that saw them."""

    frames: list[StereoFrame]
    focal_px: float
    baseline_m: float


@dataclass(frozen=True)
class _Camera:
    """A pinhole camera: pose in the world (the source left camera's frame) and intrinsics."""

    rotation: np.ndarray  # 3x3 camera -> world
    centre: np.ndarray  # 3, world
    focal: float
    principal: tuple[float, float]  # (cx, cy)
    height: int
    width: int

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """Pixel-centre coordinates (x, y), float64."""
        return np.meshgrid(np.arange(self.width, dtype=np.float64),
                           np.arange(self.height, dtype=np.float64))

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pixel coordinates (x, y) and depth of world points."""
        local = (points - self.centre) @ self.rotation
        z = local[..., 2]
        return (self.focal * local[..., 0] / z + self.principal[0],
                self.focal * local[..., 1] / z + self.principal[1], z)

    def backproject(self, x: np.ndarray, y: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """World points at ``depth`` along the rays of pixels (x, y)."""
        local = np.stack([(x - self.principal[0]) * depth / self.focal,
                          (y - self.principal[1]) * depth / self.focal, depth], axis=-1)
        return local @ self.rotation.T + self.centre


def _rig_camera(rotation: np.ndarray, centre: np.ndarray, focal: float, height: int,
                width: int) -> _Camera:
    """Make a camera of the virtual rig: principal point at the image centre."""
    return _Camera(rotation, centre, focal, ((width - 1) / 2.0, (height - 1) / 2.0), height,
                   width)


@dataclass(frozen=True)
class _Source:
    """A source image and its surface: what the views are rendered from."""

    camera: _Camera
    gray: np.ndarray  # HxW float64, anti-alias blurred for the views' scale
    inverse_depth: np.ndarray  # HxW float64, 1/Z (affine over planes); unknowns filled
    known: np.ndarray  # HxW bool: measured depth

    def surface(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """World points of the surface at source positions (x, y), bilinearly interpolated."""
        return self.camera.backproject(x, y, 1.0 / bilinear(self.inverse_depth, x, y))


@dataclass(frozen=True)
class _View:
    image: np.ndarray  # HxW float64
    depth: np.ndarray  # HxW float64, along the optical axis
    points: np.ndarray  # HxWx3 world point each pixel shows
    known: np.ndarray  # HxW bool


def load_sources(scale: float) -> tuple[_Source, _Source]:
    """
    Read scikit-image's Motorcycle pair as the left and right sources.

    The right source's surface is the left one seen from the right camera (``_render`` at full
    size); where the left view does not see it, the background beside it.
    """
    try:
        from skimage.data import stereo_motorcycle
    except ImportError:
        raise DataFormatError('the motorcycle sequence needs scikit-image '
                              '(pip install scikit-image)') from None
    images = stereo_motorcycle()
    disparity = images[2]
    height, width = disparity.shape
    sigma = max(0.5, 0.5 / scale)
    gray = [_blur(to_gray_reference(array_to_raw(np.ascontiguousarray(image), 'rgb8'))
                  .astype(np.float64), sigma) for image in images[:2]]
    known = np.isfinite(disparity)
    inverse_depth = (np.where(known, disparity, np.nan).astype(np.float64)
                     + SOURCE_DOFFS_PX) / (SOURCE_FOCAL_PX * BASELINE_M)
    cx, cy = SOURCE_PRINCIPAL
    left_camera = _Camera(np.eye(3), np.zeros(3), SOURCE_FOCAL_PX, (cx, cy), height, width)
    right_camera = _Camera(np.eye(3), np.array([BASELINE_M, 0.0, 0.0]), SOURCE_FOCAL_PX,
                           (cx + SOURCE_DOFFS_PX, cy), height, width)
    left = _Source(left_camera, gray[0], _fill(inverse_depth, np.minimum), known)
    seen = _render(left, right_camera)
    return left, _Source(right_camera, gray[1], 1.0 / seen.depth, seen.known)


def _nearest_farther(values: np.ndarray, farther: np.ufunc) -> np.ndarray:
    """
    Per pixel, the column whose value fills it: its own where finite, else a row neighbour.

    The neighbour is the farther (``farther`` of the two values) of the nearest finite pixels to
    the left and right; one side if only one exists; the pixel itself if its row has none.
    """
    height, width = values.shape
    columns = np.broadcast_to(np.arange(width), values.shape)
    known = np.isfinite(values)
    left = np.maximum.accumulate(np.where(known, columns, -1), axis=1)
    right = np.minimum.accumulate(np.where(known, columns, width)[:, ::-1], axis=1)[:, ::-1]
    left = np.where(left >= 0, left, right)
    right = np.where(right < width, right, left)
    left, right = np.clip(left, 0, width - 1), np.clip(right, 0, width - 1)
    rows = np.arange(height)[:, None]
    pick_left = farther(values[rows, left], values[rows, right]) == values[rows, left]
    return np.where(known, columns, np.where(pick_left, left, right))


def _fill(values: np.ndarray, farther: np.ufunc) -> np.ndarray:
    """Fill NaNs by ``_nearest_farther``; rows with nothing known take the farthest value."""
    rows = np.arange(values.shape[0])[:, None]
    filled = values[rows, _nearest_farther(values, farther)]
    return np.where(np.isnan(filled), farther.reduce(values[np.isfinite(values)]), filled)


def _blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur, reflected borders."""
    radius = int(np.ceil(3 * sigma))
    taps = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    taps /= taps.sum()
    padded = np.pad(image, radius, mode='reflect')
    height, width = image.shape
    rows = sum(t * padded[:, k:k + width] for k, t in enumerate(taps))
    return sum(t * rows[k:k + height] for k, t in enumerate(taps))


def _splat(source: _Source, camera: _Camera) -> np.ndarray:
    """
    Nearest depth of the source points landing on each pixel of ``camera``; NaN where none.

    Each point covers the 2x2 pixels around it, so that a surface stretched up to twice its
    source sampling leaves no cracks.
    """
    x, y, z = camera.project(source.surface(*source.camera.grid()).reshape(-1, 3))
    depth = np.full(camera.height * camera.width, np.inf)
    for column in (np.floor(x), np.floor(x) + 1):
        for row in (np.floor(y), np.floor(y) + 1):
            lands = ((z > 0) & (column >= 0) & (column <= camera.width - 1) & (row >= 0)
                     & (row <= camera.height - 1))
            np.minimum.at(depth, (row[lands] * camera.width + column[lands]).astype(np.int64),
                          z[lands])
    return np.where(np.isfinite(depth), depth, np.nan).reshape(camera.height, camera.width)


def _render(source: _Source, camera: _Camera) -> _View:
    """Render one view (module docstring: splat, fill, fixed-point refinement, sample)."""
    splat = _splat(source, camera)
    splatted = np.isfinite(splat)
    fill_columns = _nearest_farther(splat, np.maximum)
    rows = np.arange(camera.height)[:, None]
    depth = np.where(splatted, splat, splat[rows, fill_columns])
    x, y = camera.grid()
    for _ in range(_ITERATIONS):
        sx, sy = source.camera.project(camera.backproject(x, y, depth))[:2]
        points = source.surface(sx, sy)
        px, py, z = camera.project(points)
        depth = np.where(splatted, z, depth)  # disocclusions stay at the background's depth
    converged = np.hypot(px - x, py - y) < CONVERGED_PX
    inside = ((sx >= 0) & (sx <= source.camera.width - 1) & (sy >= 0)
              & (sy <= source.camera.height - 1))
    measured = bilinear(source.known.astype(np.float64), sx, sy) > 1.0 - 1e-9
    # Disocclusions show the background beside them, stretched, as depth-image renderers do.
    image = bilinear(source.gray, sx, sy)[rows, np.where(splatted, x.astype(int), fill_columns)]
    points = np.where(splatted[..., None], points, camera.backproject(x, y, depth))
    return _View(image, depth, points, splatted & converged & inside & measured)


def _correspondence(seen: _View, other: _View, camera: _Camera) -> np.ndarray:
    """
    Where ``other`` (seen by ``camera``) shows the 3-D point of every pixel of ``seen``.

    HxWx2 float64 positions, NaN where ``seen`` is unknown or the point is not visible in
    ``other`` (module docstring).
    """
    qx, qy, z = camera.project(seen.points)
    inside = (qx >= 0) & (qx <= camera.width - 1) & (qy >= 0) & (qy <= camera.height - 1)
    taps_known = bilinear(other.known.astype(np.float64), qx, qy) > 1.0 - 1e-9
    depth_there = bilinear(other.depth, qx, qy)
    visible = seen.known & inside & taps_known & (np.abs(depth_there - z) <= VISIBLE_DEPTH * z)
    return np.where(visible[..., None], np.stack([qx, qy], axis=-1), np.nan)


def _yaw(degrees: float) -> np.ndarray:
    """Camera -> world rotation of a camera turned right by ``degrees`` (about +y, down)."""
    a = np.radians(degrees)
    return np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])


def _uint8(image: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(image), 0, 255).astype(np.uint8)


def sequence(n_frames: int, height: int = 240, width: int = 320, *, forward_m: float = FORWARD_M,
             yaw_deg: float = YAW_DEG, pivot_m: float = PIVOT_M) -> Sequence:
    """
    Render ``n_frames`` stereo frames of the drive through the Motorcycle scene (module docstring).

    The virtual focal length is the one that makes the view cover ``SOURCE_VIEW``; images are
    at most that size (no upsampling), at least 16x16.
    """
    if not 2 <= n_frames <= MAX_FRAMES:
        raise DataFormatError(f'the motorcycle sequence has 2..{MAX_FRAMES} frames, '
                              f'got {n_frames}')
    scale = max(height / SOURCE_VIEW[0], width / SOURCE_VIEW[1])
    if min(height, width) < 16 or scale > 1.0:
        raise DataFormatError(f'the motorcycle sequence is 16x16 to {SOURCE_VIEW[0]:.0f}x'
                              f'{SOURCE_VIEW[1]:.0f} pixels, got {height}x{width}')
    left_source, right_source = load_sources(scale)
    focal = scale * SOURCE_FOCAL_PX
    frames: list[StereoFrame] = []
    centre = np.zeros(3)
    previous: _View | None = None
    for k in range(n_frames):
        rotation = _yaw(k * yaw_deg)
        left_camera = _rig_camera(rotation, centre, focal, height, width)
        right_camera = _rig_camera(rotation, centre + rotation[:, 0] * BASELINE_M, focal, height,
                                   width)
        left, right = _render(left_source, left_camera), _render(right_source, right_camera)
        x, y = left_camera.grid()
        disparity = x - _correspondence(left, right, right_camera)[..., 0]
        flow = None
        if previous is not None:
            flow = (_correspondence(previous, left, left_camera)
                    - np.stack([x, y], axis=-1)).astype(np.float32)
        frames.append(StereoFrame(_uint8(left.image), _uint8(right.image),
                                  disparity.astype(np.float32), flow))
        previous = left
        pivot = centre + rotation[:, 2] * (forward_m - pivot_m)
        centre = pivot + _yaw((k + 1) * yaw_deg)[:, 2] * pivot_m
    return Sequence(frames, focal, BASELINE_M)
