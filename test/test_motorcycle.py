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
dataio.motorcycle: the demo's drive through the Middlebury Motorcycle scene and its truth.

The truth must explain the images it comes with (frame t+1 sampled along the flow gives frame t,
the right view along the disparity gives the left), agree with scikit-image's own ground truth,
and describe a motion worth estimating (not near zero, with parallax).
"""
from cl_vision_nodes.dataio import motorcycle
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.evaluation import quality
from cl_vision_nodes.flow.reference import bilinear
import numpy as np
import pytest

skdata = pytest.importorskip('skimage.data')

FRAMES = 12  # the demo's sequence


@pytest.fixture(scope='module')
def drive():
    return motorcycle.sequence(FRAMES)


def test_frames_are_stereo_pairs_with_truth(drive):
    assert len(drive.frames) == FRAMES
    assert drive.frames[0].flow is None
    for frame in drive.frames:
        assert frame.left.shape == frame.right.shape == (240, 320)
        assert frame.left.dtype == frame.right.dtype == np.uint8
        assert frame.disparity.dtype == np.float32 and frame.disparity.shape == (240, 320)
        assert 0.5 < np.isfinite(frame.disparity).mean() < 0.7  # a sixth leaves the right view
    for frame in drive.frames[1:]:
        assert frame.flow.dtype == np.float32 and frame.flow.shape == (240, 320, 2)
        assert 0.65 < np.isfinite(frame.flow).all(axis=2).mean() < 0.8
        np.testing.assert_array_equal(np.isnan(frame.flow[..., 0]), np.isnan(frame.flow[..., 1]))
    assert drive.focal_px == pytest.approx(320 / 533 * motorcycle.SOURCE_FOCAL_PX)
    assert drive.baseline_m == motorcycle.BASELINE_M


def test_flow_truth_maps_each_frame_onto_the_next(drive):
    for previous, frame in zip(drive.frames, drive.frames[1:]):
        score = quality.flow_photometric_error(previous.left, frame.left, frame.flow)
        assert score.error < 2.0, score  # measured 1.3 to 1.4 grey levels: bilinear resampling
        assert score.unwarped > 10 * score.error
        assert score.coverage > 0.65
        shifted = quality.flow_photometric_error(previous.left, frame.left, frame.flow + [1, 0])
        assert shifted.error > 3 * score.error


def test_disparity_truth_maps_the_left_view_onto_the_right(drive):
    for frame in drive.frames:
        score = quality.disparity_photometric_error(frame.left, frame.right, frame.disparity)
        assert score.error < 5.0, score  # measured 3.5 to 3.9: the real pair's own differences
        assert score.unwarped > 3 * score.error
        off = quality.disparity_photometric_error(frame.left, frame.right, frame.disparity + 2)
        assert off.error > 2 * score.error


def test_first_disparity_is_scikit_images_ground_truth(drive):
    """Frame 0 is the source camera itself, cropped and scaled: the truth is the source's."""
    _, _, source = skdata.stereo_motorcycle()
    scale = drive.focal_px / motorcycle.SOURCE_FOCAL_PX
    x, y = np.meshgrid(np.arange(320.0), np.arange(240.0))
    cx, cy = motorcycle.SOURCE_PRINCIPAL
    expected = scale * (bilinear(np.where(np.isfinite(source), source, np.nan).astype(float),
                                 (x - 159.5) / scale + cx, (y - 119.5) / scale + cy)
                        + motorcycle.SOURCE_DOFFS_PX)
    truth = drive.frames[0].disparity
    assert not (np.isfinite(truth) & np.isnan(expected)).any()
    known = np.isfinite(truth)
    np.testing.assert_allclose(truth[known], expected[known], atol=1e-4)


def test_the_motion_is_a_turn_forward_with_parallax(drive):
    flow = drive.frames[1].flow
    u, v = flow[..., 0], flow[..., 1]
    assert np.nanmedian(np.hypot(u, v)) > 3.0  # px per frame (4.3 measured): not a still scene
    assert np.nanmedian(u) < -3.0  # turning right: the scene moves left
    assert np.nanmedian(v[-60:]) - np.nanmedian(v[:60]) > 1.0  # forward: spreads from the middle
    # Parallax: nearer points move differently, so no affine field explains the flow (a turn
    # about the camera, or a plane far away, would leave about 0; measured 0.42 px).
    known = np.isfinite(u)
    y, x = np.nonzero(known)
    design = np.stack([np.ones(len(x)), x, y], axis=1)
    residual = [w[known] - design @ np.linalg.lstsq(design, w[known], rcond=None)[0]
                for w in (u, v)]
    assert np.sqrt(np.mean(residual[0] ** 2 + residual[1] ** 2)) > 0.3
    assert all(np.nanmax(f.disparity) < 64 for f in drive.frames)  # the demo's disp_max


@pytest.mark.parametrize('frames, size, words', [
    (1, (240, 320), 'has 2..20 frames'),
    (21, (240, 320), 'has 2..20 frames'),
    (2, (480, 640), 'is 16x16 to 400x533 pixels'),
    (2, (12, 320), 'is 16x16 to 400x533 pixels'),
])
def test_out_of_range_requests_are_refused(frames, size, words):
    with pytest.raises(DataFormatError, match=words):
        motorcycle.sequence(frames, *size)
