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
The picture surf_node draws keypoints on: the frame as the device decoded it.

It is downloaded once (not the host reference decoder, which exists to check the device one).
"""
from __future__ import annotations

from cl_vision_nodes.imaging.encodings import array_to_raw, to_gray_reference
from cl_vision_nodes.surf.draw import draw_keypoints
from cl_vision_nodes.surf.extractor import SurfExtractor
import numpy as np
import pytest

RNG = np.random.default_rng(5)


@pytest.fixture(scope='module')
def extractor(runtime) -> SurfExtractor:
    return SurfExtractor(runtime)


def test_frame_gray_needs_a_frame(runtime) -> None:
    with pytest.raises(RuntimeError, match='before the first detect_and_describe'):
        SurfExtractor(runtime).frame_gray()


@pytest.mark.parametrize('encoding, shape, dtype', [
    ('bgr8', (37, 45, 3), np.uint8), ('mono16', (37, 45), np.uint16),
    ('32FC1', (29, 33), np.float32)])
def test_frame_gray_is_the_decoded_frame(extractor: SurfExtractor, encoding: str,
                                         shape: tuple[int, ...], dtype: type) -> None:
    pixels = (RNG.uniform(0, 255, shape) if dtype is np.float32
              else RNG.integers(0, np.iinfo(dtype).max, shape, endpoint=True)).astype(dtype)
    raw = array_to_raw(pixels, encoding)
    keypoints = extractor.detect_and_describe(raw)
    gray = extractor.frame_gray()
    assert gray.dtype == np.float32
    np.testing.assert_array_equal(gray, to_gray_reference(raw))
    assert draw_keypoints(gray, keypoints).shape == (*shape[:2], 3)
