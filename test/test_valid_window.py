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
DisparityImage.valid_window, as disparity_node fills it, on disparity maps drawn by hand.

Each map's box of valid pixels is written down beside it, not computed.
"""
from __future__ import annotations

import numpy as np
from oracles.stereo import valid_window
import pytest


def drawn(rows: str, invalid: float = -1.0) -> np.ndarray:
    """
    Return a float32 disparity map from rows of numbers.

    ``.`` is an invalid pixel (``invalid``, what the node writes: min_disparity - 1).
    """
    return np.array([[invalid if v == '.' else float(v) for v in row.split()]
                     for row in rows.strip().splitlines()], np.float32)


# (map, min_disparity, (x_offset, y_offset, width, height))
CASES = {
    'nothing valid': ("""
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .""", 0.0, (0, 0, 0, 0)),
    'one pixel': ("""
        . . . . . . . .
        . . . . . 7 . .
        . . . . . . . .""", 0.0, (5, 1, 1, 1)),
    'two islands span the invalid pixels between them': ("""
        . . . . . . . .
        . 2 . . . . . .
        . . . . . . . .
        . . . . . . 9 .
        . . . . . . . .""", 0.0, (1, 1, 6, 3)),
    'no match left of the search range, a hole, an unmatched row': ("""
        . . . 5 5 5 5 5 5 5
        . . . 5 5 . 5 5 5 5
        . . . 5 5 5 5 5 5 5
        . . . . . . . . . .""", 0.0, (3, 0, 7, 3)),
    'everything valid': ("""
        1 1 1
        1 1 1""", 0.0, (0, 0, 3, 2)),
    'min_disparity itself is valid, a little less is not': ("""
        3.99 .    4 .
        .    3.99 . 3""", 4.0, (2, 0, 1, 1)),
    'negative min_disparity': ("""
        -4 -3.5 -4
        -4 -4   -3
        -4 -4   -4""", -3.0, (2, 1, 1, 1)),
    'zero disparity (at infinity) is valid when min_disparity is 0': ("""
        . . .
        . 0 .""", 0.0, (1, 1, 1, 1)),
    'NaN is invalid': ("""
        nan 1   nan
        nan nan 2""", 0.0, (1, 0, 2, 2)),
}


@pytest.mark.parametrize('rows, min_disparity, box', CASES.values(), ids=CASES.keys())
def test_valid_window_is_the_box_of_the_valid_pixels(rows, min_disparity, box):
    window = valid_window(drawn(rows, min_disparity - 1.0), min_disparity)
    assert window == box
    assert all(type(v) is int for v in window)  # RegionOfInterest takes Python ints
