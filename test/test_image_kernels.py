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
The device image decoder (kernels/imaging/device_image.cl) against the NumPy reference.

Bit-exact.
"""
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.imaging.encodings import (array_to_raw, encoding_info, ENCODINGS,
                                               gray_to_mono8_reference, raw_to_array,
                                               to_gray_reference)
from imageutil import random_image
import numpy as np
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

SIZES = [(2, 2), (3, 5), (17, 31), (64, 33)]


@pytest.fixture(scope='module')
def images(runtime):
    return DeviceImages(runtime)


@pytest.mark.parametrize('big', [False, True])
def test_non_finite_float_pixels_read_as_zero_and_do_not_spread(images, big):
    """A depth camera's holes (NaN, inf) in a 32FC1 frame: 0 there, every other pixel kept."""
    rng = np.random.default_rng(3)
    pixels = (rng.random((20, 24)) * 255).astype(np.float32)
    pixels[5:9, 6:11] = np.nan
    pixels[0, 0], pixels[19, 23] = np.inf, -np.inf
    raw = array_to_raw(pixels, '32FC1', big)
    got = images.download(images.upload_gray(raw), pixels.shape, np.dtype(np.float32))
    holes = ~np.isfinite(pixels)
    assert np.all(got[holes] == 0) and np.array_equal(got[~holes], pixels[~holes])
    np.testing.assert_array_equal(got, to_gray_reference(raw))


@pytest.mark.parametrize('encoding', [e for e, i in ENCODINGS.items() if i.kind != 'field'])
def test_decode_gray_matches_reference(images, encoding):
    rng = np.random.default_rng(7)
    for height, width in SIZES:
        for big in (False, True):
            for pad in (0, 3):
                raw = random_image(encoding, height, width, rng, big, pad)
                buf = images.upload_gray(raw)
                got = images.download(buf, (height, width), np.dtype(np.float32))
                np.testing.assert_array_equal(got, to_gray_reference(raw),
                                              f'{encoding} {height}x{width} big={big} pad={pad}')


@pytest.mark.parametrize('gain', [0.0, 0.5, 1.0, 2.3])
def test_mono8_output_rounds_and_saturates_like_reference(images, gain):
    rng = np.random.default_rng(8)
    raw = random_image('32FC1', 31, 17, rng)  # floats well outside 0..255 and .5 ties below
    ties = np.frombuffer(raw.data, np.float32).copy()
    ties[:8] = [0.5, 1.5, 2.5, -0.5, 254.5, 255.5, np.nan, 1e9]
    raw = array_to_raw(ties.reshape(31, 17), '32FC1')
    out = images.convert(raw, 'mono8', gain)
    expected = gray_to_mono8_reference(to_gray_reference(raw), gain)
    np.testing.assert_array_equal(raw_to_array(out), expected)


@pytest.mark.parametrize('encoding', list(ENCODINGS))
def test_passthrough_packs_rows_and_fixes_byte_order(images, encoding):
    rng = np.random.default_rng(9)
    for big in (False, True):
        raw = random_image(encoding, 5, 7, rng, big, pad=5)
        out = images.convert(raw, 'passthrough')
        assert out.step == 7 * encoding_info(encoding).bytes_per_pixel and not out.is_bigendian
        np.testing.assert_array_equal(raw_to_array(out), raw_to_array(raw))


def test_field_encoding_is_not_an_intensity_image(images):
    raw = random_image('32FC2', 4, 4, np.random.default_rng(0))
    with pytest.raises(ImageFormatError, match='two-channel'):
        images.upload_gray(raw)


@pytest.mark.parametrize('pad', [0, 3])
def test_a_mono8_frame_keeps_its_bytes_until_a_consumer_decodes_it(images, pad):
    """decode(): bytes of each role kept for its frame, decoded by floats() or into a copy."""
    rng = np.random.default_rng(11 + pad)
    left, right = (random_image('mono8', 17, 31, rng, False, pad) for _ in range(2))
    grays = images.decode(left, 'left'), images.decode(right, 'right')  # the right one after
    for gray, raw in zip(grays, (left, right)):
        assert gray.buffer is None and gray.mono8 is not None and gray.mono8.step == raw.step
        target = images.buffers.get('target', gray.nbytes)
        images.copy(gray, target)
        want = to_gray_reference(raw)
        for buf in (target, images.floats(gray, 'floats')):
            np.testing.assert_array_equal(
                images.download(buf, (17, 31), np.dtype(np.float32)), want)
    bgr = images.decode(random_image('bgr8', 5, 7, rng), 'left')
    assert bgr.mono8 is None and images.floats(bgr) == bgr.buffer


def test_a_consumer_on_a_queue_of_its_own_decodes_a_mono8_frame_there(runtime, images):
    """A node's capability (SURF) asks its own DeviceImages for floats after the node's uploads."""
    other = runtime.sibling()
    consumer = DeviceImages(other)
    rng = np.random.default_rng(12)
    frames = [rng.integers(1, 256, (48, 64), dtype=np.uint8) for _ in range(2)]
    for k in range(40):
        gray = images.decode(array_to_raw(frames[k % 2], 'mono8'), 'other')
        runtime.queue.finish()  # the node waits for its uploads
        got = np.empty((48, 64), np.float32)
        cl.enqueue_copy(other.queue, got, consumer.floats(gray))  # read on its queue at once
        np.testing.assert_array_equal(got, frames[k % 2], f'frame {k}')


def test_buffers_are_reused_across_frames(images):
    rng = np.random.default_rng(10)
    images.convert(random_image('bgr8', 40, 30, rng), 'mono8')
    allocated = images.buffers.allocated_bytes()
    buffers = images.buffers.handles()
    for _ in range(3):
        images.convert(random_image('bgr8', 40, 30, rng), 'mono8')
    assert images.buffers.allocated_bytes() == allocated
    assert all(images.buffers.handles()[k] is v for k, v in buffers.items())
