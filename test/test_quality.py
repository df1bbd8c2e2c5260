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
evaluation.quality: the no-ground-truth measures on generated scenes whose answer is known.

Exact flows and disparities (dataio.synthetic) must score as consistent, wrong ones and a right
image replaced by noise must not; the SURF and ELAS answers come from the library on PoCL.
"""
from dataclasses import fields
import math

from cl_vision_nodes.dataio.synthetic import flow_sequence, Motion, stereo_pair, texture
from cl_vision_nodes.elas.matcher import ElasMatcher, INVALID_DISPARITY
from cl_vision_nodes.evaluation import quality
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.surf.evaluation import apply_homography
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.surf.keypoints import Keypoints
import numpy as np
import pytest


def noise(shape: tuple[int, int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)


def known_flow(sequence, k: int = 0) -> np.ndarray:
    return np.where(sequence.valid[k][..., None], sequence.flows[k], np.nan)


def rotation_flows(height: int, width: int, degrees: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact forward and backward flows of a rotation about the image centre (any pixel)."""
    x, y = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0

    def rotate(angle: float) -> np.ndarray:
        c, s = math.cos(angle), math.sin(angle)
        return np.stack([c * (x - cx) - s * (y - cy) + cx - x,
                         s * (x - cx) + c * (y - cy) + cy - y], axis=-1)
    return rotate(math.radians(degrees)), rotate(-math.radians(degrees))


# --- flow --------------------------------------------------------------------------------------


def test_photometric_error_is_zero_for_the_exact_integer_shift():
    sequence = flow_sequence(2, 48, 64, motion=Motion('translation', shift=(2.0, -1.0)), seed=1)
    score = quality.flow_photometric_error(*sequence.frames, known_flow(sequence))
    assert score.error == 0.0
    assert score.unwarped > 10.0
    assert score.coverage == pytest.approx((62 / 64) * (47 / 48))  # targets inside frame 1


@pytest.mark.parametrize('motion', ['translation', 'rotation', 'zoom'])
def test_photometric_error_tells_the_exact_flow_from_wrong_ones(motion):
    sequence = flow_sequence(2, 96, 128, motion=motion, seed=2)
    exact = known_flow(sequence)
    right = quality.flow_photometric_error(*sequence.frames, exact)
    assert right.error < 0.2 * right.unwarped  # sub-pixel sampling: about 1 to 2 grey levels
    for wrong in (np.zeros_like(exact), exact + [3.0, 0.0], exact * 2.0):
        score = quality.flow_photometric_error(*sequence.frames, wrong)
        assert score.error > 4 * right.error, wrong.mean()
    unwarped = quality.flow_photometric_error(*sequence.frames, np.zeros_like(exact))
    assert unwarped.error == unwarped.unwarped and unwarped.coverage == 1.0


def test_photometric_error_scores_only_answered_pixels():
    sequence = flow_sequence(2, 48, 64, motion='translation', seed=3)
    flow = known_flow(sequence)
    flow[:24] = np.nan
    full = quality.flow_photometric_error(*sequence.frames, known_flow(sequence))
    half = quality.flow_photometric_error(*sequence.frames, flow)
    assert half.coverage == pytest.approx(full.coverage / 2, abs=0.02)
    empty = quality.flow_photometric_error(*sequence.frames, np.full_like(flow, np.nan))
    assert math.isnan(empty.error) and empty.coverage == 0.0


def test_forward_backward_error_is_zero_for_a_pure_translation():
    forward = np.broadcast_to(np.float32([2.5, -1.25]), (48, 64, 2))
    score = quality.forward_backward(forward, -forward)
    assert score.error == 0.0
    assert score.coverage == score.consistent == pytest.approx((61 / 64) * (46 / 48))
    # A backward flow that does not undo the motion: every checked pixel off by 2 px.
    wrong = quality.forward_backward(forward, -forward + np.float32([0.0, 2.0]))
    assert wrong.error == pytest.approx(2.0) and wrong.consistent == 0.0


def test_forward_backward_error_is_near_zero_for_a_rotation():
    forward, backward = rotation_flows(96, 128, 3.0)
    score = quality.forward_backward(forward, backward)
    assert score.error < 1e-3  # bilinear samples of a smooth field
    assert score.consistent == score.coverage > 0.9
    twice = quality.forward_backward(forward, backward * 2.0)
    assert twice.error > 1.0 and twice.consistent < 0.6


def test_forward_backward_leaves_out_pixels_without_a_backward_answer():
    forward = np.broadcast_to(np.float32([1.0, 0.0]), (32, 32, 2))
    backward = -forward.copy()
    backward[:, 16:] = np.nan
    score = quality.forward_backward(forward, backward)
    assert score.error == 0.0
    assert score.coverage == pytest.approx(15 / 32)  # x + 1 lands on known backward flow
    assert score.consistent == pytest.approx(15 / 32)  # unanswered counts as not consistent


# --- disparity ---------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def pair():
    return stereo_pair(96, 128, seed=4, max_disparity=16.0)


def truth(pair) -> np.ndarray:
    return np.where(pair.valid, pair.disparity, np.nan)


def test_left_right_photometric_error_rises_when_the_right_image_is_noise(pair):
    exact = quality.disparity_photometric_error(pair.left, pair.right, truth(pair))
    assert exact.error < 1.5 and exact.coverage > 0.8
    noisy = quality.disparity_photometric_error(pair.left, noise(pair.right.shape, 0),
                                                truth(pair))
    assert noisy.error > 20 * exact.error and noisy.coverage == exact.coverage
    off = quality.disparity_photometric_error(pair.left, pair.right, truth(pair) + 3.0)
    assert off.error > 5 * exact.error


def test_left_right_consistency_of_elas_drops_when_the_right_image_is_noise(runtime, pair):
    matcher = ElasMatcher(runtime, {'disp_max': 32})
    left, right = matcher.compute_both(gray_to_raw(pair.left), gray_to_raw(pair.right))
    score = quality.left_right_consistency(left, right)
    assert score.consistent > 0.9 and score.error < 0.5
    assert quality.disparity_density(left) > 0.5
    photometric = quality.disparity_photometric_error(pair.left, pair.right, left)
    assert photometric.error < 4.0
    left, right = matcher.compute_both(gray_to_raw(pair.left),
                                       gray_to_raw(noise(pair.right.shape, 1)))
    assert quality.left_right_consistency(left, right).consistent < 0.2
    assert quality.disparity_density(left) < 0.2


def test_left_right_consistency_of_maps_drawn_by_hand():
    left = np.array([[5.0, 5.0, 5.0, 2.0, INVALID_DISPARITY, 3.0]], np.float32)
    right = np.array([[1.0, 3.0, 9.0, 2.0, 2.0, INVALID_DISPARITY]], np.float32)
    # x = 0, 1, 2 match outside the right map (x_R = -5, -4, -3); x = 3 matches x_R = 1 (2 vs 3:
    # within 1 px); x = 4 is invalid; x = 5 matches x_R = 2 (3 vs 9: inconsistent).
    score = quality.left_right_consistency(left, right)
    assert score.coverage == pytest.approx(2 / 6)
    assert score.error == pytest.approx((1.0 + 6.0) / 2)
    assert score.consistent == pytest.approx(1 / 5)
    assert quality.left_right_consistency(left, right, tolerance=0.5).consistent == 0.0


def test_density_counts_valid_disparities():
    disparity = np.array([[1.0, np.nan, INVALID_DISPARITY, 0.0]], np.float32)
    assert quality.disparity_density(disparity) == 0.5
    assert quality.disparity_density(disparity, min_disparity=1.0) == 0.25


def test_temporal_stability_is_zero_for_identical_maps(pair):
    d = truth(pair)
    still = np.zeros(d.shape + (2,), np.float32)
    score = quality.temporal_stability(d, d.copy(), still)
    assert score.change == 0.0 and score.coverage == pytest.approx(np.isfinite(d).mean())
    jitter = np.random.default_rng(2).uniform(-1.0, 1.0, d.shape)
    shaken = quality.temporal_stability(d, d + jitter, still)
    assert shaken.change == pytest.approx(0.5, abs=0.02)  # mean |U(-1, 1)|


def test_temporal_stability_scores_only_where_the_flow_says_static(pair):
    d = truth(pair)
    flow = np.zeros(d.shape + (2,), np.float32)
    flow[:, 64:] = [0.6, 0.0]  # moving: not scored, whatever the maps do there
    flow[:8] = np.nan  # no flow: not scored
    changed = d.copy()
    changed[:, 64:] += 10.0
    score = quality.temporal_stability(d, changed, flow)
    assert score.change == 0.0
    assert score.coverage == pytest.approx(np.isfinite(d[8:, :64]).sum() / d.size)
    moving = quality.temporal_stability(d, d, np.full_like(flow, 2.0))
    assert math.isnan(moving.change) and moving.coverage == 0.0


# --- SURF --------------------------------------------------------------------------------------


@pytest.fixture(scope='module')
def extractor(runtime):
    return SurfExtractor(runtime)


@pytest.fixture(scope='module')
def translated(extractor):
    sequence = flow_sequence(2, 240, 320, motion='translation', seed=3)
    return (extractor.detect_and_describe(sequence.frames[0]),
            extractor.detect_and_describe(sequence.frames[1]), known_flow(sequence))


@pytest.mark.parametrize('model', ['fundamental', 'homography'])
def test_match_rate_is_high_for_a_translated_texture_and_low_for_noise(
        extractor, translated, model):
    kp0, kp1, _ = translated
    matching = quality.geometric_matches(kp0, kp1, model)
    assert len(kp0) > 300 and matching.n1 == len(kp0) and matching.n2 == len(kp1)
    assert matching.match_rate > 0.5 and matching.inlier_ratio > 0.9
    assert matching.model is not None and matching.model.shape == (3, 3)
    if model == 'homography':  # the fitted homography moves the image by (1.5, -0.75)
        corners = np.array([[0.0, 0.0], [319.0, 0.0], [0.0, 239.0], [319.0, 239.0]])
        mapped, _ = apply_homography(matching.model, corners)
        np.testing.assert_allclose(mapped - corners, [[1.5, -0.75]] * 4, atol=0.15)
    a = extractor.detect_and_describe(noise((240, 320), 5))
    b = extractor.detect_and_describe(noise((240, 320), 6))
    assert len(a) > 300 and quality.geometric_matches(a, b, model).match_rate < 0.05


def test_ratio_matches_of_a_set_with_itself_are_the_identity(translated):
    kp0, _, _ = translated
    i, j = quality.ratio_matches(kp0, kp0)
    assert len(i) > 0.9 * len(kp0)
    np.testing.assert_array_equal(i, j)


def test_too_few_matches_fit_no_model(translated):
    kp0, kp1, _ = translated
    first_five = Keypoints(*(getattr(kp1, f.name)[:5] for f in fields(Keypoints)))
    few = quality.geometric_matches(kp0, first_five)
    assert few.model is None and few.inliers == 0 and few.match_rate == 0.0
    with pytest.raises(ValueError, match='unknown model'):
        quality.geometric_matches(kp0, kp1, 'affine')


def test_repeatability_under_the_true_flow_is_high_and_under_a_wrong_one_low(translated):
    kp0, kp1, flow = translated
    exact = quality.flow_repeatability(kp0, kp1, flow)
    assert exact.rate > 0.75
    assert exact.n1 <= len(kp0) and exact.n2 <= len(kp1)
    assert quality.flow_repeatability(kp0, kp1, flow + [4.0, 0.0]).rate < 0.1
    assert quality.flow_repeatability(kp0, kp1, np.full_like(flow, np.nan)).rate == 0.0


def test_repeatability_of_a_frame_with_itself_is_one(extractor):
    image = np.clip(texture(120, 160, seed=7), 0, 255).astype(np.uint8)
    keypoints = extractor.detect_and_describe(image)
    still = np.zeros((120, 160, 2), np.float32)
    score = quality.flow_repeatability(keypoints, keypoints, still)
    assert score.rate == 1.0 and score.n1 == score.n2 == len(keypoints) > 20
