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

"""Synthetic scenes: determinism, any size, textured everywhere, ground truth exact by warping."""

from cl_vision_nodes.dataio.synthetic import (flow_pair, flow_sequence, FlowSample, Motion,
                                              stereo_pair, StereoSample, texture)
import cv2
import numpy as np
import pytest

MOTIONS = ['translation', 'rotation', 'zoom', 'piecewise']


def grid(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    return np.meshgrid(np.arange(shape[1], dtype=np.float32),
                       np.arange(shape[0], dtype=np.float32))


def warp_error(target: np.ndarray, flow: np.ndarray, reference: np.ndarray, valid: np.ndarray):
    """|target(p + flow(p)) - reference(p)| on valid pixels (bicubic sampling of target)."""
    x, y = grid(reference.shape)
    warped = cv2.remap(
        target.astype(np.float32),
        x + flow[..., 0],
        y + flow[..., 1],
        cv2.INTER_CUBIC,
        borderMode=cv2.BORDER_REPLICATE,
    )
    return np.abs(warped - reference.astype(np.float32))[valid]


def assert_small(error: np.ndarray) -> None:
    """
    Check that the errors are interpolation-sized: well under a grey level.

    The tail is pixels whose bicubic stencil crosses a layer boundary. A 0.3 px error in the ground
    truth gives a mean near 3.
    """
    assert error.mean() < 1.0 and np.median(error) < 0.7 and np.percentile(error, 90) < 2.0


def local_gradient(image: np.ndarray) -> np.ndarray:
    """Mean gradient magnitude (grey levels per pixel) over 7x7 neighbourhoods."""
    image = image.astype(np.float32)
    gx = cv2.Sobel(image, cv2.CV_32F, 1, 0, ksize=3) / 8
    gy = cv2.Sobel(image, cv2.CV_32F, 0, 1, ksize=3) / 8
    return cv2.blur(np.hypot(gx, gy), (7, 7))


def assert_samples_equal(a, b) -> None:
    for name, value in vars(a).items():
        np.testing.assert_array_equal(value, getattr(b, name), err_msg=name)


# --- texture -----------------------------------------------------------------------------------


def test_texture_deterministic_and_in_range() -> None:
    image = texture(37, 53, seed=4)
    assert image.shape == (37, 53) and image.dtype == np.float32
    assert image.min() >= 0 and image.max() <= 255 + 1e-3
    np.testing.assert_array_equal(image, texture(37, 53, seed=4))
    assert not np.array_equal(image, texture(37, 53, seed=5))


@pytest.mark.parametrize('shape', [(37, 53), (120, 90)])
def test_texture_has_no_flat_areas(shape: tuple[int, int]) -> None:
    image = texture(*shape, seed=1)
    assert local_gradient(image).min() > 3.0
    assert image.std() > 25


@pytest.mark.parametrize('shape', [(1, 1), (2, 3)])
def test_texture_tiny_sizes(shape: tuple[int, int]) -> None:
    assert texture(*shape, seed=0).shape == shape


# --- stereo ------------------------------------------------------------------------------------


@pytest.mark.parametrize('shape', [(1, 1), (5, 4), (37, 53), (48, 64)])
def test_stereo_shapes_and_types(shape: tuple[int, int]) -> None:
    sample = stereo_pair(*shape, seed=2, max_disparity=8)
    assert isinstance(sample, StereoSample)
    for image in (sample.left, sample.right):
        assert image.shape == shape and image.dtype == np.uint8
    assert sample.disparity.shape == shape and sample.disparity.dtype == np.float32
    assert sample.valid.shape == shape and sample.valid.dtype == bool
    assert (sample.disparity > 0).all() and (sample.disparity <= 8 + 1e-4).all()


def test_stereo_deterministic() -> None:
    assert_samples_equal(stereo_pair(37, 53, seed=7), stereo_pair(37, 53, seed=7))
    assert not np.array_equal(stereo_pair(37, 53, seed=7).left, stereo_pair(37, 53, seed=8).left)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_stereo_ground_truth_is_exact(seed: int) -> None:
    sample = stereo_pair(96, 128, seed=seed, max_disparity=20)
    flow = np.stack([-sample.disparity, np.zeros_like(sample.disparity)], axis=-1)
    assert_small(warp_error(sample.right, flow, sample.left, sample.valid))  # right(x-d) ~ left(x)
    assert local_gradient(sample.left).min() > 2.0


def test_stereo_occlusions() -> None:
    sample = stereo_pair(96, 128, seed=3, max_disparity=20)
    x, _ = grid(sample.disparity.shape)
    assert not sample.valid[x - sample.disparity < 0].any()  # leaves the right view
    assert 0.8 < sample.valid.mean() < 0.99  # objects occlude some background
    # a pixel hidden in the right view is hidden by a nearer one to its right on the same row
    occluded = ~sample.valid & (x - sample.disparity >= 0)
    assert occluded.sum() > 50
    for row, col in zip(*np.nonzero(occluded)):
        assert sample.disparity[row, col + 1:col + 21].max() > sample.disparity[row, col]


def test_stereo_planes() -> None:
    flat = stereo_pair(48, 64, seed=5, n_objects=3, slanted=False)
    assert len(np.unique(flat.disparity)) <= 4  # background + 3 fronto-parallel objects
    slanted = stereo_pair(48, 64, seed=5, n_objects=3)
    assert len(np.unique(slanted.disparity)) > 100
    assert not np.allclose(slanted.disparity, np.round(slanted.disparity))  # sub-pixel


# --- flow --------------------------------------------------------------------------------------


@pytest.mark.parametrize('motion', MOTIONS)
@pytest.mark.parametrize('shape', [(1, 1), (37, 53)])
def test_flow_shapes_and_determinism(motion: str, shape: tuple[int, int]) -> None:
    sample = flow_pair(*shape, motion=motion, seed=3)
    assert isinstance(sample, FlowSample)
    assert sample.frame0.shape == sample.frame1.shape == shape
    assert sample.frame0.dtype == np.uint8
    assert sample.flow.shape == shape + (2,) and sample.flow.dtype == np.float32
    assert sample.valid.dtype == bool and np.isfinite(sample.flow).all()
    assert_samples_equal(sample, flow_pair(*shape, motion=motion, seed=3))


@pytest.mark.parametrize('motion', MOTIONS)
def test_flow_ground_truth_is_exact(motion: str) -> None:
    sample = flow_pair(96, 128, motion=motion, seed=0)
    assert_small(warp_error(sample.frame1, sample.flow, sample.frame0, sample.valid))
    assert sample.valid.mean() > 0.85
    assert local_gradient(sample.frame0).min() > 2.0


def test_integer_translation_is_pixel_exact() -> None:
    sample = flow_pair(37, 53, motion=Motion('translation', shift=(2.0, -3.0)), seed=1)
    np.testing.assert_array_equal(sample.flow[..., 0], 2.0)
    np.testing.assert_array_equal(sample.flow[..., 1], -3.0)
    np.testing.assert_array_equal(sample.frame1[:-3, 2:], sample.frame0[3:, :-2])
    expected_valid = np.zeros((37, 53), bool)
    expected_valid[3:, :-2] = True
    np.testing.assert_array_equal(sample.valid, expected_valid)


def test_rotation_and_zoom_about_the_centre() -> None:
    shape = (31, 41)
    x, y = grid(shape)
    cx, cy = (shape[1] - 1) / 2, (shape[0] - 1) / 2
    rotation = flow_pair(*shape, motion=Motion('rotation', angle_deg=10), seed=0).flow
    np.testing.assert_allclose(rotation[15, 20], 0, atol=1e-5)
    radius0 = np.hypot(x - cx, y - cy)
    radius1 = np.hypot(x + rotation[..., 0] - cx, y + rotation[..., 1] - cy)
    np.testing.assert_allclose(radius1, radius0, atol=1e-4)
    # counter-clockwise as displayed (y down): the point right of the centre moves up
    assert rotation[15, 40, 1] < 0

    zoom = flow_pair(*shape, motion=Motion('zoom', zoom=1.1), seed=0).flow
    np.testing.assert_allclose(zoom[..., 0], 0.1 * (x - cx), atol=1e-4)
    np.testing.assert_allclose(zoom[..., 1], 0.1 * (y - cy), atol=1e-4)


def test_piecewise_motion_has_objects_and_occlusions() -> None:
    sample = flow_pair(64, 80, motion=Motion('piecewise', shift=(1.0, 0.5), n_objects=2), seed=6)
    motions = np.unique(sample.flow.reshape(-1, 2), axis=0)
    assert len(motions) == 3  # background + two objects
    assert [1.0, 0.5] in motions.tolist()
    x, y = grid(sample.valid.shape)
    inside = (x + sample.flow[..., 0] <= 79) & (y + sample.flow[..., 1] <= 63)
    inside &= (x + sample.flow[..., 0] >= 0) & (y + sample.flow[..., 1] >= 0)
    assert (~sample.valid & inside).any()  # occluded although the match is in the image


def test_flow_sequence() -> None:
    sequence = flow_sequence(4, 48, 64, motion='rotation', seed=2)
    assert len(sequence.frames) == 4 and len(sequence.flows) == len(sequence.valid) == 3
    for t, (flow, valid) in enumerate(zip(sequence.flows, sequence.valid)):
        assert_small(warp_error(sequence.frames[t + 1], flow, sequence.frames[t], valid))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match='at least 2 frames'):
        flow_sequence(1, 8, 8, motion='translation')
    with pytest.raises(ValueError, match='unknown motion'):
        flow_pair(8, 8, motion='spin')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='max_disparity'):
        stereo_pair(8, 8, max_disparity=0)
