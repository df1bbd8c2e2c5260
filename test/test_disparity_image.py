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

"""DisparityImageMaker against its NumPy reference: the published pixels and valid window."""
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.stereo.disparity_image import DisparityImageMaker
import numpy as np
from oracles.stereo import disparity_image
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels


@pytest.fixture(scope='module')
def maker() -> DisparityImageMaker:
    return DisparityImageMaker(ClRuntime('auto'))


def made(maker: DisparityImageMaker, disparity: np.ndarray, scale: float, min_disparity: float):
    runtime = maker.runtime
    buffer = cl.Buffer(runtime.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=np.ascontiguousarray(disparity, np.float32))
    got = maker.make(buffer, *disparity.shape, scale, min_disparity)
    return got.pixels.copy(), got.valid_window


def random_map(height: int, width: int, seed: int, invalid_share: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    disparity = rng.uniform(0.0, 60.0, (height, width)).astype(np.float32)
    disparity[rng.random((height, width)) < invalid_share] = -1.0  # the matcher's invalid
    return disparity


@pytest.mark.parametrize('height, width', [(23, 37), (131, 200), (1, 1), (480, 641)])
@pytest.mark.parametrize('scale, min_disparity', [(1.0, 0.0), (0.5, 2.5), (1.0, 17.0),
                                                  (1.0, -4.0)])
def test_pixels_and_window_equal_the_reference(maker, height, width, scale, min_disparity):
    disparity = random_map(height, width, seed=height + width, invalid_share=0.3)
    pixels, window = made(maker, disparity, scale, min_disparity)
    expected_pixels, expected_window = disparity_image(disparity, scale, min_disparity)
    np.testing.assert_array_equal(pixels, expected_pixels)
    assert window == expected_window


@pytest.mark.parametrize('valid', [[], [(5, 7)], [(0, 0)], [(22, 36)], [(3, 30), (19, 2)]])
def test_window_of_sparse_valid_pixels(maker, valid):
    disparity = np.full((23, 37), -1.0, np.float32)
    for y, x in valid:
        disparity[y, x] = 10.0
    pixels, window = made(maker, disparity, 1.0, 0.0)
    assert window == disparity_image(disparity, 1.0, 0.0)[1]
    assert (window == (0, 0, 0, 0)) == (not valid)
    assert np.count_nonzero(pixels >= 0.0) == len(valid)


def test_nan_is_invalid(maker):
    disparity = np.full((8, 9), 5.0, np.float32)
    disparity[2, 3] = np.nan
    pixels, window = made(maker, disparity, 1.0, 1.0)
    assert pixels[2, 3] == 0.0 and window == (0, 0, 9, 8)
