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
The plane scene of the raw-stereo tests (test_rectify_node.py, test_disparity_node.py).

A textured fronto-parallel plane at a known depth, seen by a stereo pair whose raw images are
distorted (plumb_bob) and rotated away from the rectified frame (R of +-1 degree), as a real pair's
are before rectification. Its rectified views are known exactly, and the disparity of the plane is
a whole 16 px, which ELAS recovers exactly where the images are rectified right.
"""
from __future__ import annotations

import functools
from typing import Callable

from cl_vision_nodes.camera.calibration import CameraCalibration
from cl_vision_nodes.dataio.synthetic import texture
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_array
import cv2
import numpy as np
from rosutil import numpy_to_image, publish_each, publish_until_answered
from sensor_msgs.msg import CameraInfo, PointCloud2

W, H = 160, 120
F, CX, CY = 165.0, 80.0, 60.0  # the rectified cameras (both P)
BASELINE, DEPTH = 0.16, 1.65  # disparity F * BASELINE / DEPTH = 16 px
DISPARITY = F * BASELINE / DEPTH
K = [150.0, 0.0, 81.3, 0.0, 149.0, 59.4, 0.0, 0.0, 1.0]  # both raw cameras
DISTORTION = {'left': [-0.12, 0.03, 0.0008, -0.0005, 0.0],
              'right': [-0.1, 0.02, -0.0006, 0.0004, 0.0]}
MARGIN = 40  # texels around the rectified view: the raw views see beyond it
COLOUR_RED = 200  # colour views: blue = texture, green = 255 - texture, red constant


def rotation_y(degrees: float) -> np.ndarray:
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


ROTATION = {'left': rotation_y(1.0), 'right': rotation_y(-1.0)}


def projection(side: str) -> list[float]:
    tx = -F * BASELINE if side == 'right' else 0.0
    return [F, 0.0, CX, tx, 0.0, F, CY, 0.0, 0.0, 0.0, 1.0, 0.0]


def calibration(side: str) -> CameraCalibration:
    return CameraCalibration.from_fields(W, H, 'plumb_bob', DISTORTION[side], K,
                                         ROTATION[side].ravel().tolist(), projection(side))


def camera_info(side: str, frame_id: str, sec: int) -> CameraInfo:
    msg = CameraInfo(width=W, height=H, distortion_model='plumb_bob')
    msg.d = DISTORTION[side]
    msg.k = K
    msg.r = ROTATION[side].ravel().tolist()
    msg.p = projection(side)
    msg.header.frame_id = frame_id
    msg.header.stamp.sec = sec
    return msg


@functools.cache
def plane_texture() -> np.ndarray:
    return texture(H + 2 * MARGIN, W + 2 * MARGIN + 32, seed=5, finest_sigma=1.5)


def rectified_truth(side: str) -> np.ndarray:
    """
    Return the exact rectified view (float32).

    left(u, v) = T(u, v), right(u, v) = T(u + d, v).
    """
    u, v = np.meshgrid(np.arange(W, dtype=np.float32), np.arange(H, dtype=np.float32))
    shift = DISPARITY if side == 'right' else 0.0
    return cv2.remap(plane_texture(), u + np.float32(shift + MARGIN), v + np.float32(MARGIN),
                     cv2.INTER_LANCZOS4)


def undistort_points(points: np.ndarray, k: np.ndarray, d: np.ndarray, r: np.ndarray,
                     p: np.ndarray) -> np.ndarray:
    """
    Return cv2.undistortPoints iterated to convergence (100 steps or 1e-12).

    OpenCV 4 (4.5.4, 4.6) calls it undistortPointsIter; OpenCV 5 has only undistortPoints, with a
    criteria argument. The two give the same points (5e-14 px apart); the default 5 steps are up to
    4e-5 px off here.
    """
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    if hasattr(cv2, 'undistortPointsIter'):
        return cv2.undistortPointsIter(points, k, d, r, p, criteria)
    return cv2.undistortPoints(points, k, d, R=r, P=p, criteria=criteria)


@functools.cache
def raw_view(side: str, colour: bool = False) -> np.ndarray:
    """
    Return the raw (distorted, unrectified) image.

    Each raw pixel shows the plane point that its rectified position (cv2.undistortPoints with the
    camera's K, D, R, P) sees.
    """
    x, y = np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64))
    points = np.stack([x.ravel(), y.ravel()], axis=-1)[:, None, :]
    rect = undistort_points(points, np.reshape(K, (3, 3)), np.array(DISTORTION[side]),
                            ROTATION[side], np.reshape(projection(side), (3, 4))[:, :3])[:, 0]
    shift = DISPARITY if side == 'right' else 0.0
    map_x = (rect[:, 0].reshape(H, W) + shift + MARGIN).astype(np.float32)
    map_y = (rect[:, 1].reshape(H, W) + MARGIN).astype(np.float32)
    gray = np.clip(np.rint(cv2.remap(plane_texture(), map_x, map_y, cv2.INTER_LANCZOS4)), 0,
                   255).astype(np.uint8)
    if not colour:
        return gray
    return np.dstack([gray, 255 - gray, np.full_like(gray, COLOUR_RED)])  # bgr8


def raw_pair_msgs(tag: str, sec: int, colour: bool = False) -> list:
    """
    Return the left and right image_raw and camera_info of one stamp.

    The left messages are in frame ``tag``, the right ones in ``tag/right``.
    """
    encoding = 'bgr8' if colour else 'mono8'
    msgs = [numpy_to_image(raw_view(side, colour), encoding) for side in ('left', 'right')]
    for msg, frame in zip(msgs, (tag, f'{tag}/right')):
        msg.header.frame_id = frame
        msg.header.stamp.sec = sec
    return msgs + [camera_info('left', tag, sec), camera_info('right', f'{tag}/right', sec)]


def tagged(tag: str):
    return lambda msgs: next((m for m in msgs if m.header.frame_id == tag), None)


def ask_all(pubs: list, msgs_of, collectors: dict, tag: str, tries: int = 4,
            log: Callable[[], str] = str) -> dict:
    """
    Publish ``msgs_of(sec)`` until every collector holds a message of frame ``tag``.

    Best effort: again, at most ``tries`` times. Returns those messages, by name; raises
    AssertionError followed by ``log()`` where one never came.
    """
    return publish_until_answered(lambda: publish_each(pubs, msgs_of(Clock.tick())), collectors,
                                  tag, tries=tries, log=log)


class Clock:
    sec = 5000

    @classmethod
    def tick(cls) -> int:
        cls.sec += 1
        return cls.sec


def assert_plane_depth(depth: np.ndarray, min_share: float = 0.5) -> None:
    """Most pixels have a depth, and all of those are the plane's within 1 %."""
    finite = np.isfinite(depth)
    assert finite.mean() > min_share, finite.mean()
    relative = np.abs(depth[finite] - DEPTH) / DEPTH
    assert relative.max() < 0.01, np.sort(relative)[-10:]


def assert_cloud_of_the_plane(msg: PointCloud2, depth: np.ndarray) -> np.ndarray:
    """
    Check an organised cloud of the depth image's shape against the left rectified camera.

    Its points reproject through that camera: z = depth, x = (u - cx) z / f, y = (v - cy) z / f.
    Returns the points.
    """
    assert (msg.height, msg.width) == depth.shape and not msg.is_dense
    points = cloud_to_array(msg).reshape(depth.shape)
    finite = np.isfinite(depth)
    assert np.array_equal(np.isfinite(points['z']), finite)
    np.testing.assert_allclose(points['z'][finite], depth[finite], rtol=1e-6)
    rows, cols = depth.shape
    scale = W / cols  # 2 for a subsampled map: pixel (i, j) is input pixel (2i, 2j)
    u, v = np.meshgrid(np.arange(cols) * scale, np.arange(rows) * scale)
    z = points['z'][finite]
    np.testing.assert_allclose(points['x'][finite], (u[finite] - CX) * z / F, atol=1e-5)
    np.testing.assert_allclose(points['y'][finite], (v[finite] - CY) * z / F, atol=1e-5)
    return points
