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
The tune report's strip pictures: real answers (ELAS, flow, SURF on PoCL) drawn on one scale.

Frames: a crop of KITTI 2015 000001 (frames 10 and 11 of the left camera, and the right image of
frame 10) from ../shared/data.
"""
from __future__ import annotations

from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.elas import ElasMatcher
from cl_vision_nodes.elas.colormap import disparity_to_color
from cl_vision_nodes.flow.colorwheel import flow_to_color, largest_motion
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.surf.draw import draw_keypoints
from cl_vision_nodes.surf.extractor import SurfExtractor
from cl_vision_nodes.tuning.pictures import drawn_pair, strip_answers
import numpy as np
import pytest

CROP = (slice(180, 308), slice(300, 620))


@pytest.fixture(scope='module')
def kitti(shared_data) -> dict[str, np.ndarray]:
    folder = shared_data('stereo', 'kitti2015_000001')
    return {name: read_image(folder / f'image_{name}.png')[CROP]
            for name in ('2_000001_10', '2_000001_11', '3_000001_10')}


def test_flow_of_both_values_on_the_larger_motion(runtime, kitti):
    flow = FlowEstimator(runtime).estimate(kitti['2_000001_10'], kitti['2_000001_11'])
    largest = largest_motion(flow)
    assert largest > 1.0 and largest == float(np.hypot(*flow.astype(np.float64).T).max())
    gray = kitti['2_000001_11']
    default, tuned, scale = drawn_pair('flow', flow, flow / 2, gray)
    assert np.array_equal(default, flow_to_color(flow))
    assert np.array_equal(tuned, flow_to_color(flow / 2, largest))
    assert not np.array_equal(tuned, flow_to_color(flow / 2))  # its own scale would differ
    assert scale == f'max {largest:.1f} px'
    missing, drawn, _ = drawn_pair('flow', None, flow, gray)  # no answer: an empty tile
    assert missing is None and np.array_equal(drawn, default)


def test_disparity_of_both_values_on_the_larger_range(runtime, kitti):
    matcher = ElasMatcher(runtime, {'disp_max': 96})
    maps = [matcher.compute_gray(kitti['2_000001_10'], kitti['3_000001_10'])]
    matcher.configure({'ipol_gap_width': 0, 'disp_max': 48})
    maps.append(matcher.compute_gray(kitti['2_000001_10'], kitti['3_000001_10']))
    top = max(float(m.max()) for m in maps)
    default, tuned, scale = drawn_pair('disparity', *maps, kitti['2_000001_10'])
    assert np.array_equal(default, disparity_to_color(maps[0], 0.0, top))
    assert np.array_equal(tuned, disparity_to_color(maps[1], 0.0, top))
    assert scale == f'max {top:.0f} px'
    assert ((tuned.max(axis=2) == 0) == (maps[1] < 0)).mean() > 0.99  # invalid pixels: black


def test_keypoints_of_both_values_with_their_counts(runtime, kitti):
    gray = kitti['2_000001_10']
    extractor = SurfExtractor(runtime)
    few = extractor.detect_and_describe(gray)
    extractor.configure({'hessian_threshold': extractor.values['hessian_threshold'] / 4})
    many = extractor.detect_and_describe(gray)
    assert 0 < len(few) < len(many)
    default, tuned, scale = drawn_pair('surf', few, many, gray)
    assert np.array_equal(default, draw_keypoints(gray, few))
    assert np.array_equal(tuned, draw_keypoints(gray, many))
    assert scale == f'{len(few)} / {len(many)}'


def test_strip_answers_spread_over_the_part():
    grays = [np.full((4, 4), i, np.uint8) for i in range(6)]
    runs = []

    def answers(values):
        runs.append(values)
        return {'disparity': [np.full((4, 4), values['disp_max'] + i, np.float32)
                              for i in range(6)]}
    strip = strip_answers(answers, grays, count=4)
    frames = strip({'disp_max': 10})
    assert runs == [{'disp_max': 10}]  # one run of the node per value set
    assert [index for index, _, _ in frames] == [1, 2, 4, 5]  # the first has no flow
    for index, gray, by_key in frames:
        assert gray is grays[index] and by_key['disparity'][0, 0] == 10 + index
