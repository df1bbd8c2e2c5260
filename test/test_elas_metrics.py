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

"""elas.metrics: D1 and bad-N outliers at their boundaries, and the one validity rule."""
from cl_vision_nodes.elas.metrics import (bad_pixel_errors, d1_errors, DisparityErrors,
                                          valid_disparity)
import numpy as np
import pytest

NAN, INF = np.nan, np.inf


def test_d1_needs_both_more_than_3_px_and_more_than_5_percent():
    truth = np.array([[10.0, 10.0, 100.0, 100.0, 40.0]], np.float32)
    # 3.0 px is not more than 3; 3.5 > 3 and > 0.5; 4 > 3 but < 5; 5.5 > 3 and > 5; 2.5 < 3.
    estimate = np.array([[13.0, 13.5, 104.0, 105.5, 37.5]], np.float32)
    assert d1_errors(estimate, truth) == DisparityErrors(all=2 / 5, est=2 / 5, density=1.0,
                                                         scored=5)


def test_bad_pixels_count_errors_above_the_threshold_only():
    truth = np.array([[10.0, 10.0, 10.0, 100.0]], np.float32)
    estimate = np.array([[12.0, 12.5, 7.5, 101.0]], np.float32)  # 2 px is not bad, 2.5 is
    assert bad_pixel_errors(estimate, truth, 2.0) == DisparityErrors(0.5, 0.5, 1.0, 4)


def test_unknown_truth_is_not_scored_and_invalid_estimates_are_errors_in_all_only():
    truth = np.array([[NAN, 10.0, 10.0, 10.0, 10.0, 20.0]], np.float32)
    estimate = np.array([[-1.0, -1.0, INF, NAN, 10.0, 30.0]], np.float32)
    errors = bad_pixel_errors(estimate, truth, 2.0)
    # scored: the 5 known pixels; valid: 10 and 30 (one outlier); invalid: -1, inf, NaN.
    assert errors == DisparityErrors(all=4 / 5, est=1 / 2, density=2 / 5, scored=5)


def test_validity_follows_the_disparity_image_min_disparity():
    estimate = np.array([-10.0, -1.0, 0.0, 3.9, 4.0, NAN, INF, -INF], np.float32)
    assert valid_disparity(estimate).tolist() == [False, False, True, True, True, False, False,
                                                  False]
    assert valid_disparity(estimate, 4.0).tolist() == [False] * 4 + [True] + [False] * 3
    truth = np.full((1, 8), 4.0, np.float32)
    assert d1_errors(estimate[None], truth, min_disparity=4.0).density == 1 / 8


def test_no_known_pixel_or_no_estimate_gives_nan_not_zero():
    nothing = d1_errors(np.zeros((2, 3), np.float32), np.full((2, 3), NAN, np.float32))
    assert np.isnan(nothing.all) and np.isnan(nothing.est) and nothing.scored == 0
    empty = d1_errors(np.full((2, 3), -1.0, np.float32), np.ones((2, 3), np.float32))
    assert (empty.all, empty.density) == (1.0, 0.0) and np.isnan(empty.est)


def test_maps_of_different_shapes_are_refused():
    with pytest.raises(ValueError, match='HxW'):
        d1_errors(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
