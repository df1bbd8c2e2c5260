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
Flow kernels (kernels/flow/*.cl) against their NumPy references, plus the estimator's plumbing.

Sizes are small and odd (never multiples of a work-group). Tolerances: float kernels are
compared with the float64 references to 1e-4 relative of the data's scale (float32 rounding
through a few dozen operations); block matching is integer arithmetic and must match exactly
(its sub-pixel offsets to 1e-5 px); medians select values and match to float32 rounding.
Kernels are launched with the programs and work-groups the host modules build for the device:
run these tests also under POCL_MAX_WORK_GROUP_SIZE=64 (the smallest groups we support).
"""
import dataclasses

from cl_vision_nodes.capabilities.flow import FlowFrames
from cl_vision_nodes.capabilities.stages import StageTimes
from cl_vision_nodes.errors import ImageFormatError, ParameterError
from cl_vision_nodes.flow import (block_matching, coarse_to_fine, flow_errors, FLOW_SCHEMA,
                                  flow_to_color, FlowEstimator)
from cl_vision_nodes.flow import horn_schunck as hs
from cl_vision_nodes.flow import lucas_kanade as lk
from cl_vision_nodes.flow import pyramid
from cl_vision_nodes.flow import reference as ref
from cl_vision_nodes.flow.horn_schunck import sor_slots, tile_offset
from cl_vision_nodes.flow.lucas_kanade import LkTiling, local_bytes, window_taps
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.pyramid import level_shapes
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl import runtime as runtime_module
from cl_vision_nodes.opencl.limits import DeviceLimits
import cv2
from deviceutil import download, empty, upload
import numpy as np
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

i32, f32 = np.int32, np.float32

SIZES = [(29, 37), (37, 29), (8, 13), (3, 2)]


def smooth_image(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Textured 0..255 image, smooth enough for derivatives to mean something."""
    noise = rng.uniform(0, 255, (h + 8, w + 8)).astype(np.float32)
    return cv2.GaussianBlur(noise, (0, 0), 1.2)[4:4 + h, 4:4 + w] * 2.0 - 60.0


def textured(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """uint8 blurred noise stretched over the 0..255 range."""
    big = cv2.GaussianBlur(rng.uniform(0, 255, (h, w)).astype(np.float32), (0, 0), 1.5)
    return np.clip((big - big.mean()) * 4 + 128, 0, 255).astype(np.uint8)


def close(got: np.ndarray, want: np.ndarray, scale: float = 255.0, rel: float = 1e-4) -> None:
    np.testing.assert_allclose(got, want, rtol=rel, atol=rel * scale)


# --- pyramid, gradients, prolongation ----------------------------------------------------------


def pyr_down(runtime, kernel: str, img: np.ndarray, local=None) -> np.ndarray:
    """One pyramid step by ``kernel`` (pyr_down_rows: a work-item per 8 x ROW_RUN pixels)."""
    h, w = img.shape
    dh, dw = (h + 1) // 2, (w + 1) // 2
    dst = empty(runtime, (dh, dw))
    items = pyramid.row_items(dw, dh) if kernel == 'pyr_down_rows' else (dw, dh)
    pyramid.program(runtime).kernel(kernel)(
        items, (upload(runtime, img), i32(w), i32(h), dst, i32(dw), i32(dh)),
        'pyramid', local=local)
    return download(runtime, dst, (dh, dw))


@pytest.mark.parametrize('kernel', ['pyr_down', 'pyr_down_rows'])
@pytest.mark.parametrize('h, w', SIZES + [(1, 5), (21, 70)])
def test_pyr_down_matches_reference_and_opencv(runtime, h, w, kernel):
    img = smooth_image(np.random.default_rng(1), h, w)
    got = pyr_down(runtime, kernel, img)
    close(got, ref.pyr_down(img))
    if min(h, w) > 2:  # OpenCV's own border rule differs on 1- and 2-pixel sides
        close(got, cv2.pyrDown(img), rel=1e-5 * 10)


@pytest.mark.parametrize('local', [None, (1, 1), (3, 2), (64, 1)])
@pytest.mark.parametrize('h, w', SIZES + [(21, 70), (40, 161), (18, 48)])
def test_pyr_down_formulations_are_equal_bit_for_bit(runtime, h, w, local):
    # Rows of 8 whose every lane is inside and whose last is at the border, widths past and at
    # multiples of 8, groups that cover more or fewer work-items than there are.
    img = smooth_image(np.random.default_rng(h * w), h, w)
    want = pyr_down(runtime, 'pyr_down', img)
    got = pyr_down(runtime, 'pyr_down_rows', img, local)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize('kernel', ['pyr_down_mono8', 'pyr_down_mono8_rows'])
@pytest.mark.parametrize('local', [None, (3, 2), (64, 1)])
@pytest.mark.parametrize('h, w', SIZES + [(1, 5), (21, 70), (40, 161), (18, 48), (37, 17)])
def test_pyr_down_mono8_is_pyr_down_of_the_decoded_frame(runtime, h, w, local, kernel):
    """Level 1 from a mono8 frame's padded rows: the step from its floats, bit for bit."""
    img = textured(np.random.default_rng(h * 5 + w), h, w)
    step = w + 5  # padding bytes of 255 show in the level if a row reads past its width
    rows = np.full((h, step), 255, np.uint8)
    rows[:, :w] = img
    dh, dw = (h + 1) // 2, (w + 1) // 2
    dst = empty(runtime, (dh, dw))
    items = pyramid.row_items(dw, dh) if kernel == 'pyr_down_mono8_rows' else (dw, dh)
    pyramid.program(runtime).kernel(kernel)(
        items, (upload(runtime, rows, None), i32(step), i32(w), i32(h), dst, i32(dw), i32(dh)),
        'pyramid', local=local)
    want = pyr_down(runtime, 'pyr_down', img.astype(np.float32))
    np.testing.assert_array_equal(download(runtime, dst, (dh, dw)).view(np.uint32),
                                  want.view(np.uint32))


def area_program(runtime, group: tuple[int, int]):
    """Return the pyramid kernels built for an area kernels' work-group (a skip if not allowed)."""
    if not runtime.limits.fits(group):
        pytest.skip(f'the device allows no {group} work-group here')
    return runtime.program(pyramid.KERNELS, {'PYR_RUN': pyramid.ROW_RUN, 'PYR_GW': group[0],
                                             'PYR_GH': group[1]})


@pytest.mark.parametrize('group', [(16, 16), (8, 8), (3, 2), (1, 1)])
@pytest.mark.parametrize('h, w', SIZES + [(1, 5), (2, 9), (21, 70), (40, 161), (37, 17), (66, 9)])
def test_pyr_down2_mono8_is_two_steps_of_the_decoded_frame(runtime, h, w, group):
    """
    Level 2 from a mono8 frame's padded rows in one launch: the two steps' level, bit for bit.

    Work-groups of 256, 64, 6 and 1 items, levels that are no multiple of them, sides of 1.
    """
    built = area_program(runtime, group)
    img = textured(np.random.default_rng(h * 7 + w), h, w)
    step = w + 5  # padding bytes of 255 show in the level if a row reads past its width
    rows = np.full((h, step), 255, np.uint8)
    rows[:, :w] = img
    h2, w2 = ((h + 1) // 2 + 1) // 2, ((w + 1) // 2 + 1) // 2
    dst = empty(runtime, (h2, w2))
    built.kernel('pyr_down2_mono8')(
        (w2, h2), (upload(runtime, rows, None), i32(step), i32(w), i32(h), dst, i32(w2),
                   i32(h2)), 'pyramid', local=group)
    want = pyr_down(runtime, 'pyr_down', pyr_down(runtime, 'pyr_down', img.astype(np.float32)))
    np.testing.assert_array_equal(download(runtime, dst, (h2, w2)).view(np.uint32),
                                  want.view(np.uint32))


@pytest.mark.parametrize('group', [(16, 16), (8, 8), (3, 2), (1, 1)])
@pytest.mark.parametrize('h, w', SIZES + [(1, 5), (2, 9), (21, 70), (40, 161), (37, 17), (66, 9)])
def test_pyr_down2_mono8_gradient_also_keeps_level_1_and_its_gradient(runtime, h, w, group):
    """
    Levels 1 and 2 and level 1's gradient from the bytes: pyr_down_mono8 + pyr_down_gradient's.

    Bit for bit, work-groups of 256, 64, 6 and 1 items, sides of 1 and 2, padded rows.
    """
    built = area_program(runtime, group)
    img = textured(np.random.default_rng(h * 3 + w), h, w)
    step = w + 3
    rows = np.full((h, step), 255, np.uint8)
    rows[:, :w] = img
    mh, mw = (h + 1) // 2, (w + 1) // 2
    dh, dw = (mh + 1) // 2, (mw + 1) // 2
    shapes = ((mh, mw), (mh, mw, 2), (dh, dw))
    got = [empty(runtime, shape) for shape in shapes]
    src = upload(runtime, rows, None)
    built.kernel('pyr_down2_mono8_gradient')(
        (dw, dh), (src, i32(step), i32(w), i32(h), got[0], got[1], got[2], i32(dw), i32(dh)),
        'pyramid', local=group)
    want = [empty(runtime, shape) for shape in shapes]
    built.kernel('pyr_down_mono8')(
        (mw, mh), (src, i32(step), i32(w), i32(h), want[0], i32(mw), i32(mh)), 'pyramid')
    built.kernel('pyr_down_gradient')(
        (dw, dh), (want[0], i32(mw), i32(mh), want[2], i32(dw), i32(dh), want[1]), 'pyramid')
    for a, b, shape in zip(got, want, shapes):
        np.testing.assert_array_equal(download(runtime, a, shape).view(np.uint32),
                                      download(runtime, b, shape).view(np.uint32))


def test_level_shapes_halve_like_pyrdown_and_stop_at_8_pixels():
    assert level_shapes(480, 640) == [(480, 640), (240, 320), (120, 160), (60, 80), (30, 40),
                                      (15, 20), (8, 10)]
    assert level_shapes(5, 300) == [(5, 300)]


def gradient(runtime, kernel: str, img: np.ndarray, local=None) -> np.ndarray:
    """Return the level's gradients by ``kernel`` (gradient_rows: 8 pixels of a row an item)."""
    h, w = img.shape
    grad = empty(runtime, (h, w, 2))
    items = pyramid.row_items(w, h, 1) if kernel == 'gradient_rows' else (w, h)
    pyramid.program(runtime).kernel(kernel)(
        items, (upload(runtime, img), i32(w), i32(h), grad), 'd', local=local)
    return download(runtime, grad, (h, w, 2))


@pytest.mark.parametrize('kernel', ['gradient', 'gradient_rows'])
@pytest.mark.parametrize('h, w', SIZES[:-1] + [(3, 4), (21, 70)])  # odd extension: 3 pixels
def test_gradient_matches_reference(runtime, h, w, kernel):
    img = smooth_image(np.random.default_rng(2), h, w)
    close(gradient(runtime, kernel, img), ref.gradient(img))


@pytest.mark.parametrize('local', [None, (1, 1), (3, 2), (64, 1)])
@pytest.mark.parametrize('h, w', SIZES[:-1] + [(3, 4), (21, 70), (40, 161), (18, 48), (9, 10)])
def test_gradient_formulations_are_equal_bit_for_bit(runtime, h, w, local):
    img = smooth_image(np.random.default_rng(h + w), h, w)
    want = gradient(runtime, 'gradient', img)
    got = gradient(runtime, 'gradient_rows', img, local)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize('kernel', ['pyr_down_gradient', 'pyr_down_gradient_rows'])
@pytest.mark.parametrize('local', [None, (3, 2), (64, 1)])
@pytest.mark.parametrize('h, w', SIZES[:-1] + [(3, 4), (21, 70), (40, 161), (9, 10), (1, 5),
                                               (18, 48), (37, 17)])
def test_pyr_down_gradient_is_pyr_down_and_the_source_gradient(runtime, h, w, local, kernel):
    """The fused launches, bit for bit; odd sides: the last coarse pixel covers one column."""
    img = smooth_image(np.random.default_rng(h * 3 + w), h, w)
    dh, dw = (h + 1) // 2, (w + 1) // 2
    dst, grad = empty(runtime, (dh, dw)), empty(runtime, (h, w, 2))
    items = pyramid.row_items(dw, dh) if kernel == 'pyr_down_gradient_rows' else (dw, dh)
    pyramid.program(runtime).kernel(kernel)(
        items, (upload(runtime, img), i32(w), i32(h), dst, i32(dw), i32(dh), grad),
        'pyramid', local=local)
    np.testing.assert_array_equal(download(runtime, dst, (dh, dw)),
                                  pyr_down(runtime, 'pyr_down', img))
    np.testing.assert_array_equal(download(runtime, grad, (h, w, 2)),
                                  gradient(runtime, 'gradient', img))


@pytest.mark.parametrize('group', [(16, 16), (8, 8), (3, 2), (1, 1)])
@pytest.mark.parametrize('h, w', SIZES[:-1] + [(3, 4), (21, 70), (9, 10), (1, 5), (18, 48),
                                               (37, 17), (7, 11), (66, 9)])
def test_pyr_down_gradients_also_make_the_coarse_levels_gradient(runtime, h, w, group):
    """
    The coarsest level's launch on GPUs: its stencil's pixels from local memory, bit for bit.

    Work-groups of 256, 64, 6 and 1 items, levels no multiple of them, sides of 1 and 2.
    """
    img = smooth_image(np.random.default_rng(h * 7 + w), h, w)
    dh, dw = (h + 1) // 2, (w + 1) // 2
    dst, grad, own = (empty(runtime, shape) for shape in ((dh, dw), (h, w, 2), (dh, dw, 2)))
    area_program(runtime, group).kernel('pyr_down_gradients')(
        (dw, dh), (upload(runtime, img), i32(w), i32(h), dst, i32(dw), i32(dh), grad, own),
        'pyramid', local=group)
    coarse = pyr_down(runtime, 'pyr_down', img)
    np.testing.assert_array_equal(download(runtime, dst, (dh, dw)), coarse)
    np.testing.assert_array_equal(download(runtime, grad, (h, w, 2)),
                                  gradient(runtime, 'gradient', img))
    np.testing.assert_array_equal(download(runtime, own, (dh, dw, 2)).view(np.uint32),
                                  gradient(runtime, 'gradient', coarse).view(np.uint32))


def test_gradient_is_exact_on_a_ramp_up_to_the_border(runtime):
    """Odd extension: a linear image has its true derivative at every pixel, borders included."""
    h, w = 11, 17
    y, x = np.mgrid[:h, :w].astype(np.float32)
    grad = empty(runtime, (h, w, 2))
    pyramid.program(runtime).kernel('gradient')(
        (w, h), (upload(runtime, 3.0 * x - 2.0 * y + 7.0), i32(w), i32(h), grad), 'd')
    got = download(runtime, grad, (h, w, 2))
    np.testing.assert_allclose(got[..., 0], 3.0, atol=1e-4)
    np.testing.assert_allclose(got[..., 1], -2.0, atol=1e-4)


@pytest.mark.parametrize('kernel', ['flow_upsample', 'flow_upsample_by2'])
@pytest.mark.parametrize('h, w', [(29, 37), (30, 38), (5, 3)])
def test_flow_upsample_matches_reference(runtime, h, w, kernel):
    ch, cw = (h + 1) // 2, (w + 1) // 2
    coarse = np.random.default_rng(3).normal(0, 2, (ch, cw, 2)).astype(np.float32)
    fine = empty(runtime, (h, w, 2))
    coarse_to_fine.program(runtime).kernel(kernel)(
        *coarse_to_fine.upsample_launch(upload(runtime, coarse), (ch, cw), fine, (h, w), 2), 'u')
    close(download(runtime, fine, (h, w, 2)), ref.flow_upsample(coarse, (h, w)), scale=4.0)


@pytest.mark.parametrize('factor', [4, 8])
@pytest.mark.parametrize('h, w', [(61, 75), (64, 48), (9, 13)])
def test_flow_upsample_by_more_levels_is_the_levels_steps_at_once(runtime, h, w, factor):
    """From a pyramid level straight to level 0: the steps of 2 composed, any group size."""
    shapes = [(h, w)]
    while len(shapes) < factor.bit_length():
        shapes.append(((shapes[-1][0] + 1) // 2, (shapes[-1][1] + 1) // 2))
    coarse = np.random.default_rng(5).normal(0, 2, (*shapes[-1], 2)).astype(np.float32)
    stepped = coarse.astype(np.float64)
    for shape in shapes[-2::-1]:
        stepped = ref.flow_upsample(stepped, shape)
    want = ref.flow_upsample(coarse, (h, w), factor)
    np.testing.assert_allclose(want, stepped, atol=1e-9)
    for kernel in (coarse_to_fine.program(runtime).kernel('flow_upsample'),
                   coarse_to_fine.upsample_kernel(runtime, factor)):
        for local in (None, (8, 8)):
            fine = upload(runtime, np.full((h, w, 2), np.nan, np.float32))
            items, args = coarse_to_fine.upsample_launch(upload(runtime, coarse), shapes[-1],
                                                         fine, (h, w), factor)
            kernel(items, args, 'u', local)
            close(download(runtime, fine, (h, w, 2)), want, scale=2.0 * factor)


@pytest.mark.parametrize('factor', coarse_to_fine.VECTOR_FACTORS)
@pytest.mark.parametrize('h, w', [(61, 75), (64, 48), (9, 13), (1, 1)])
@pytest.mark.parametrize('local', [None, (8, 8), (1, 1)])
def test_flow_upsample_row_vectors_are_the_generic_kernel_bit_for_bit(runtime, h, w, factor,
                                                                      local):
    """Blocks cut by the right and bottom borders, groups of 64 and of one work-item."""
    ch, cw = -(-h // factor), -(-w // factor)
    coarse = upload(runtime, np.random.default_rng(h * w).normal(0, 2, (ch, cw, 2)).astype(
        np.float32))
    flows = []
    for kernel in (coarse_to_fine.program(runtime).kernel('flow_upsample'),
                   coarse_to_fine.upsample_kernel(runtime, factor)):
        fine = upload(runtime, np.full((h, w, 2), np.nan, np.float32))
        kernel(*coarse_to_fine.upsample_launch(coarse, (ch, cw), fine, (h, w), factor), 'u',
               local)
        flows.append(download(runtime, fine, (h, w, 2)))
    assert not np.isnan(flows[1]).any()
    np.testing.assert_array_equal(flows[1].view(np.uint32), flows[0].view(np.uint32))


# --- Lucas-Kanade -------------------------------------------------------------------------------


def limits(max_group: int, local_mem: int) -> DeviceLimits:
    return DeviceLimits(max_group=max_group, max_item_sizes=(max_group,) * 3, local_mem=local_mem,
                        fp64=False, image_support=True, compute_units=8, is_gpu=True,
                        host_memory=False)


DEVICES = {'NVIDIA': limits(1024, 48 * 1024), 'PoCL': limits(4096, 1 << 20),
           'PoCL at 64': limits(64, 1 << 20), 'Mali': limits(1024, 32 * 1024)}


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('radius', range(1, 16))
def test_lk_tiles_fit_local_memory_and_cover_the_level(radius, device):
    limits = DEVICES[device]
    budget = lk.local_budget(limits)
    if local_bytes(radius, min(lk.TILE_HEIGHTS)) > budget:
        with pytest.raises(ParameterError, match='local memory'):
            LkTiling.of(limits, radius)
        return
    tiling = LkTiling.of(limits, radius)
    height = tiling.tile_h
    assert height % tiling.group_h == 0 and local_bytes(radius, height) <= budget
    assert limits.fits(tiling.group) and tiling.group[0] == lk.TILE_W
    if limits.local_mem >= lk.LOCAL_CAP:  # the same tiles, so the same results
        assert height == LkTiling.of(DEVICES['NVIDIA'], radius).tile_h
    for shape in [(480, 640), (29, 37), (1, 1)]:
        for level in (0, 1):
            offset = tiling.offset(level)
            gx, gy = tiling.items(shape, offset)
            assert gx % tiling.group[0] == 0 and gy % tiling.group[1] == 0
            tiles_x, tiles_y = gx // tiling.group[0], gy // tiling.group[1]
            # the tiles cover the level and each holds image pixels (lk_level relies on it)
            assert 0 <= offset < height
            assert tiles_x * lk.TILE_W - offset >= shape[1] > (tiles_x - 1) * lk.TILE_W - offset
            assert tiles_y * height - offset >= shape[0] > (tiles_y - 1) * height - offset


def test_work_groups_fit_a_device_of_64_work_items():
    small = DEVICES['PoCL at 64']
    assert LkTiling.of(small, 7).group == (32, 2)
    assert hs.sor_group(small) == (16, 4)
    assert block_matching.group_size(small) == 64
    assert LkTiling.of(DEVICES['NVIDIA'], 7).group == (32, 8) and hs.sor_group(
        DEVICES['NVIDIA']) == (16, 16)


def lk_level(runtime, i0, i1, coarse, window, iterations, min_eig, final, offset,
             tiling: LkTiling | None = None):
    h, w = i0.shape
    tiling = tiling or LkTiling.of(runtime.limits, window // 2)
    taps = window_taps(window, window / 4)
    out = empty(runtime, (h, w, 2))
    ch, cw = coarse.shape[:2] if coarse is not None else (0, 0)
    coarse_buf = upload(runtime, coarse if coarse is not None else np.zeros(2))
    lk.program(runtime, tiling).kernel('lk_level')(
        tiling.items((h, w), offset),
        (upload(runtime, i0), upload(runtime, i1), i32(w), i32(h), coarse_buf, i32(cw), i32(ch),
         out, upload(runtime, taps), i32(iterations), i32(offset), f32(min_eig), i32(final)),
        'lk', local=tiling.group)
    got = download(runtime, out, (h, w, 2))
    want = ref.lk_level(i0, i1, None if coarse is None else coarse.astype(np.float64),
                        taps.astype(np.float64), iterations, min_eig, final,
                        (lk.TILE_W, tiling.tile_h), offset)
    return got, want


def threshold_between(values: np.ndarray) -> float:
    """
    Pick a threshold near the median, in the widest gap between neighbouring values there.

    So float32 and float64 agree on which side every value lies.
    """
    s = np.sort(values.ravel())
    lo, hi = len(s) // 3, max(len(s) * 2 // 3, len(s) // 3 + 1)
    i = lo + int(np.argmax(s[lo + 1:hi + 1] - s[lo:hi]))
    return float(0.5 * (s[i] + s[i + 1]))


@pytest.mark.parametrize('h, w, window, offset, with_coarse, iterations', [
    (29, 37, 5, 0, False, 3),
    (37, 29, 15, 16, True, 2),
    (45, 70, 15, 8, True, 3),  # tiles in both directions
    (40, 33, 19, 8, True, 2),  # 16-row tiles
    (20, 18, 31, 4, True, 2),  # 8-row tiles, the largest window
    (3, 4, 5, 16, True, 2),  # the gradient's odd extension needs 3 pixels
    (13, 8, 3, 0, False, 0),  # no step: the start flow (and the tensor's NaN mask)
])
@pytest.mark.parametrize('final', [False, True])
def test_lk_level_matches_reference(runtime, h, w, window, offset, with_coarse, iterations,
                                    final):
    rng = np.random.default_rng(5)
    i0, i1 = smooth_image(rng, h, w), smooth_image(rng, h, w)
    coarse = rng.normal(0, 0.8, ((h + 1) // 2, (w + 1) // 2, 2)).astype(np.float32)
    if with_coarse:
        coarse[0, 0] = (-5.0, 0.0)  # warps outside frame 1: no residual
    tensor = ref.lk_tensor(ref.gradient(i0), window_taps(window, window / 4).astype(np.float64))
    min_eig = threshold_between(tensor[..., 3])  # about half the pixels become NaN when final
    got, want = lk_level(runtime, i0, i1, coarse if with_coarse else None, window, iterations,
                         min_eig, final, offset)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).any() == final
    if np.isfinite(want).any():
        close(got, want, scale=float(np.nanmax(np.abs(want))), rel=1e-3)


def test_lk_level_tiles_only_approximate_near_their_edges(runtime):
    """
    Against exact dense LK (one tile covering the image), tiles differ only near their edges.

    A pixel more than (steps - 1) window radii from every edge between tiles matches to float
    rounding; the rest only differs a little (the halo's terms lag by the steps the tile made).
    """
    rng = np.random.default_rng(15)
    h, w = 45, 70
    i0 = smooth_image(rng, h, w)
    i1 = np.roll(i0, (1, 1), (0, 1))
    coarse = np.full(((h + 1) // 2, (w + 1) // 2, 2), 0.4)  # 0.2 px off
    got, _ = lk_level(runtime, i0, i1, coarse, 9, 3, 0.0, False, 0)
    exact = ref.lk_level(i0, i1, coarse.astype(np.float64),
                         window_taps(9, 2.25).astype(np.float64), 3, 0.0, False, (128, 128), 0)
    reach = 2 * 4  # (steps - 1) * radius
    far = (slice(0, 32 - reach), slice(0, 32 - reach))  # tile (0, 0): edges x = 32, y = 32
    close(got[far], exact[far], scale=2.0)
    assert np.abs(got - exact).mean() < 0.01


def test_lk_level_result_does_not_depend_on_the_group_height(runtime):
    """A device allowing 64 work-items per group runs 32 x 2 groups on the same 32-row tiles."""
    rng = np.random.default_rng(16)
    i0, i1 = smooth_image(rng, 45, 70), smooth_image(rng, 45, 70)
    coarse = rng.normal(0, 0.8, (23, 35, 2)).astype(np.float32)
    tiling = LkTiling.of(runtime.limits, 7)
    got, _ = lk_level(runtime, i0, i1, coarse, 15, 3, 0.0, False, 16, tiling)
    small, _ = lk_level(runtime, i0, i1, coarse, 15, 3, 0.0, False, 16,
                        dataclasses.replace(tiling, group_h=2))
    np.testing.assert_array_equal(small, got)


# --- Horn-Schunck -------------------------------------------------------------------------------


def hs_kernel(runtime, name: str, group: tuple[int, int] | None = None):
    """
    Return a kernel of the hs program as HornSchunck builds it.

    Or for hs_sor work-groups of ``group``.
    """
    return hs.program(runtime, group or hs.sor_group(runtime.limits)).kernel(name)


def int_buffer(runtime, values: list[int]) -> cl.Buffer:
    return cl.Buffer(runtime.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.array(values, np.int32))


@pytest.mark.parametrize('h, w', SIZES)
def test_hs_warp_matches_reference_and_resets_the_solver(runtime, h, w):
    rng = np.random.default_rng(6)
    i0, i1 = smooth_image(rng, h, w), smooth_image(rng, h, w)
    g0, g1 = ref.gradient(i0).astype(np.float32), ref.gradient(i1).astype(np.float32)
    flow = rng.normal(0, 2.0, (h, w, 2)).astype(np.float32)  # some pixels leave the frame
    terms, flags = empty(runtime, (h, w, 4)), int_buffer(runtime, [5, 5, 5])
    hs_kernel(runtime, 'hs_warp')(
        (w, h), (upload(runtime, i0), upload(runtime, g0), upload(runtime, i1),
                 upload(runtime, g1), upload(runtime, flow), i32(w), i32(h), terms, flags), 'w')
    want = ref.hs_warp(i0, g0, i1, g1, flow.astype(np.float64))
    got = download(runtime, terms, (h, w, 4))
    np.testing.assert_array_equal(got[..., 3], want[..., 3])
    close(got, want, scale=float(np.abs(want).max()))
    slots = np.empty(3, np.int32)
    cl.enqueue_copy(runtime.queue, slots, flags)
    assert slots.tolist() == [0, 0, 1]


def hs_problem(rng: np.random.Generator, h: int, w: int):
    terms = np.concatenate([rng.normal(0, 20, (h, w, 3)), (rng.random((h, w, 1)) > 0.1)],
                           axis=-1).astype(np.float32)
    return (terms, rng.normal(0, 1, (h, w, 2)).astype(np.float32),
            rng.normal(0, 0.3, (h, w, 2)).astype(np.float32))


SOLVER = {'alpha2': 36.0, 'omega': 1.7, 'inv_eps_d2': 0.25, 'inv_eps_s2': 100.0}


def run_sor(runtime, terms, flow, dflow, launches: list[int], tol: float,
            fresh: bool = False, group: tuple[int, int] | None = None) -> np.ndarray:
    """
    Launch hs_sor as horn_schunck does.

    Ping-pong increments, alternating tilings, the convergence slots as hs_warp leaves them;
    ``fresh``: the first launch ignores ``dflow``; ``group``: work-groups other than the device's
    own.
    """
    h, w = flow.shape[:2]
    group = group or hs.sor_group(runtime.limits)
    sor = hs_kernel(runtime, 'hs_sor', group)
    buffers = [upload(runtime, dflow), empty(runtime, (h, w, 2))]
    flags = int_buffer(runtime, [0, 0, 1])
    fixed = (upload(runtime, terms), upload(runtime, flow))
    for index, sweeps in enumerate(launches):
        offset = tile_offset(index)
        sor(hs.sor_items((h, w), offset, group),
            (*fixed, buffers[index % 2], buffers[1 - index % 2], flags, i32(w), i32(h),
             i32(fresh and index == 0), i32(offset), i32(sweeps), *sor_slots(index),
             *(f32(v) for v in SOLVER.values()), f32(tol)), 'hs', local=group)
    return download(runtime, buffers[len(launches) % 2], (h, w, 2))


@pytest.mark.parametrize('h, w', SIZES + [(40, 33)])
@pytest.mark.parametrize('offset, sweeps', [(0, 1), (8, 3)])
def test_hs_sor_launch_matches_reference(runtime, h, w, offset, sweeps):
    terms, flow, dflow = hs_problem(np.random.default_rng(7), h, w)
    launches = [1, sweeps] if offset else [sweeps]  # the second launch uses offset 8
    got = run_sor(runtime, terms, flow, dflow, launches, tol=0.0)
    want = dflow.astype(np.float64)
    for index, count in enumerate(launches):
        want = ref.hs_sor(terms.astype(np.float64), flow.astype(np.float64), want,
                          tile_offset(index), count, **SOLVER, tile=hs.TILE)
    close(got, want, scale=float(np.abs(want).max()), rel=1e-4)


def test_hs_sor_result_does_not_depend_on_the_group_height(runtime):
    """A device allowing 64 work-items per group runs 16 x 4 groups on the same 16 x 16 tiles."""
    terms, flow, dflow = hs_problem(np.random.default_rng(17), 40, 33)
    np.testing.assert_array_equal(
        run_sor(runtime, terms, flow, dflow, [3, 3], tol=0.0, group=(hs.TILE, 4)),
        run_sor(runtime, terms, flow, dflow, [3, 3], tol=0.0))


def test_hs_sor_fresh_launch_starts_from_zero(runtime):
    terms, flow, dflow = hs_problem(np.random.default_rng(14), 29, 37)
    got = run_sor(runtime, terms, flow, dflow, [2], tol=0.0, fresh=True)
    np.testing.assert_array_equal(
        got, run_sor(runtime, terms, flow, np.zeros_like(dflow), [2], tol=0.0))


def test_hs_sor_stops_on_the_device_once_converged(runtime):
    """
    Launch k reads the change flag of launch k-1, so a converged field stays as it is.

    After a launch that moved no pixel by more than tol, later launches leave the field alone; with
    tol 0 they keep updating.
    """
    terms, flow, dflow = hs_problem(np.random.default_rng(8), 29, 37)
    one = run_sor(runtime, terms, flow, dflow, [2], tol=1e9)
    three = run_sor(runtime, terms, flow, dflow, [2, 2, 2], tol=1e9)
    np.testing.assert_array_equal(three, one)
    moving = run_sor(runtime, terms, flow, dflow, [2, 2, 2], tol=0.0)
    assert np.abs(moving - one).max() > 1e-3


@pytest.mark.parametrize('h, w', SIZES)
@pytest.mark.parametrize('median', [False, True])
def test_hs_update_matches_reference(runtime, h, w, median):
    rng = np.random.default_rng(9)
    flow = rng.normal(0, 2, (h, w, 2)).astype(np.float32)
    dflow = rng.normal(0, 1, (h, w, 2)).astype(np.float32)
    dflow[0, :3] = 1e4  # outliers the median must remove
    out = empty(runtime, (h, w, 2))
    hs_kernel(runtime, 'hs_update')(
        (w, h), (upload(runtime, flow), upload(runtime, dflow), i32(w), i32(h), i32(median), out),
        'm')
    want = ref.hs_update(flow, dflow.astype(np.float32), median)
    np.testing.assert_allclose(download(runtime, out, (h, w, 2)), want, rtol=1e-6, atol=1e-6)


# --- block matching -----------------------------------------------------------------------------


def bm(runtime, i0, i1, block, radius, subpixel):
    h, w = i0.shape
    out = empty(runtime, (h, w, 2))
    local = block_matching.group_size(runtime.limits)
    block_matching.program(runtime, block, radius).kernel('bm_search')(
        (-(-w // block) * local, -(-h // block)),
        (upload(runtime, i0), upload(runtime, i1), i32(w), i32(h), i32(subpixel), out), 'bm',
        local=(local, 1))
    return download(runtime, out, (h, w, 2))


@pytest.mark.parametrize('h, w, block, radius', [(29, 37, 8, 3), (37, 29, 5, 4), (13, 9, 4, 2)])
def test_bm_search_matches_reference_exactly(runtime, h, w, block, radius):
    rng = np.random.default_rng(10)
    i0 = rng.uniform(0, 255, (h, w)).astype(np.float32)
    i1 = np.roll(i0, (1, -2), (0, 1)) + rng.normal(0, 4, (h, w)).astype(np.float32)
    np.testing.assert_array_equal(bm(runtime, i0, i1, block, radius, False),
                                  ref.bm_search(i0, i1, block, radius, False))
    np.testing.assert_allclose(bm(runtime, i0, i1, block, radius, True),
                               ref.bm_search(i0, i1, block, radius, True), atol=1e-5)


def test_bm_ties_go_to_the_smallest_motion(runtime):
    flat = np.full((21, 19), 77.0)
    assert not bm(runtime, flat, flat, 8, 3, True).any()
    stripes = np.tile((np.arange(19) % 2 * 200.0).astype(np.float32), (21, 1))  # period 2 in x
    got = bm(runtime, stripes, stripes, 8, 3, False)
    assert not got.any(), 'equal SAD at dx = -2, 0, 2: the zero vector must win'


def test_bm_finds_an_integer_shift_including_border_blocks(runtime):
    big = textured(np.random.default_rng(11), 60, 60).astype(np.float32)
    # content moves by (-1, -2): every block, partial and corner ones included, keeps at least
    # half of its pixels matched inside frame 1
    i0, i1 = big[10:39, 10:47], big[12:41, 11:48]
    got = bm(runtime, i0, i1, 8, 4, False)
    np.testing.assert_array_equal(got[..., 0], -1.0)
    np.testing.assert_array_equal(got[..., 1], -2.0)


# --- estimator plumbing, metrics, colour wheel --------------------------------------------------


def frames(h=37, w=53, shift=2):
    big = textured(np.random.default_rng(12), h + 8, w + 8)
    return big[4:4 + h, 4:4 + w], big[4:4 + h, 4 - shift:4 - shift + w]


def estimator_buffers(est: FlowEstimator) -> dict[str, cl.Buffer]:
    """Every device buffer an estimator owns, by role: its own and its image decoder's."""
    return {**est.buffers.handles(),
            **{f'images/{role}': buf for role, buf in est.images.buffers.handles().items()}}


def assert_same_buffers(est: FlowEstimator, before: dict[str, cl.Buffer]) -> None:
    now = estimator_buffers(est)
    assert now.keys() == before.keys()
    assert all(now[role] is buf for role, buf in before.items())


@pytest.mark.parametrize('method', ['lk', 'hs', 'bm'])
def test_streaming_matches_one_shot_and_reuses_buffers(runtime, method):
    a, b = frames()
    est = FlowEstimator(runtime, {'method': method})
    assert est.push(array_to_raw(a, 'mono8')) is None
    first = est.push(array_to_raw(b, 'mono8'))
    est.push(array_to_raw(a, 'mono8'))  # both pyramid slots have now served as 'previous'
    buffers = estimator_buffers(est)
    est.push(array_to_raw(b, 'mono8'))
    again = est.push(array_to_raw(a, 'mono8'))
    assert first.shape == (37, 53, 2) and first.dtype == np.float32
    assert_same_buffers(est, buffers)
    np.testing.assert_array_equal(est.estimate(a, b), first)
    assert np.nanmedian(again[..., 0]) < -1.0 < 1.0 < np.nanmedian(first[..., 0])


@pytest.mark.parametrize('method', ['lk', 'hs', 'bm', 'dis'])
@pytest.mark.parametrize('host_memory', [True, False])
def test_a_flows_array_is_kept_while_the_next_frame_is_computed_and_read(method, host_memory):
    """
    A node serializes a frame's flow on its publishing thread while the next frame runs.

    Where the device computes in host memory, consecutive frames' kernels write flow buffers of
    their own pyramid slot, mapped until the frame after next; elsewhere their reads fill pinned
    arrays of their own (a GPU's path, taken here on PoCL too).
    """
    runtime = runtime_module.ClRuntime('auto')
    runtime.limits = dataclasses.replace(runtime.limits, host_memory=host_memory)
    values = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), {'method': method})
    flows = FlowFrames(runtime, values, StageTimes())
    a, b = frames()
    grays = [flows.estimator.images.decode(array_to_raw(f, 'mono8'), f'frame_{i}')
             for i, f in enumerate((a, b))]
    answers = [flows.start(grays[k % 2], k + 1, ('mono8', a.shape[1], a.shape[0]))()
               for k in range(2)]
    for k in range(2, 6):
        kept = answers[-1].flow.copy()
        answers.append(flows.start(grays[k % 2], k + 1, ('mono8', a.shape[1], a.shape[0]))())
        np.testing.assert_array_equal(answers[-2].flow, kept)
        assert not np.array_equal(answers[-1].flow, kept)  # opposite motions
    if host_memory:  # the previous frame's flow is still mapped (unmapping it would fail if not)
        answers[-2].flow.base.release(runtime.queue)


@pytest.mark.parametrize('params', [{'method': 'dis', **DIS_PRESETS['ultrafast']},
                                    {'method': 'dis', 'dis_finest_level': 0}, {'method': 'lk'}])
def test_a_mono8_frame_gives_the_flow_of_its_decoded_floats(runtime, params):
    """Level 1 made from a mono8 frame's bytes (or level 0 decoded into the pyramid)."""
    a, b = frames(97, 131, 3)
    flows = [FlowEstimator(runtime, params).estimate(a.astype(dtype), b.astype(dtype))
             for dtype in (np.uint8, np.float32)]  # mono8 and 32FC1 messages
    np.testing.assert_array_equal(flows[0].view(np.uint32), flows[1].view(np.uint32))


@pytest.mark.parametrize('before, after', [('bm', 'hs'), ('lk', 'dis')])
def test_a_method_that_reads_more_levels_gets_them_for_the_previous_frame(runtime, before,
                                                                          after):
    """
    The previous frame's pyramid, built for the method before, is extended at the change.

    (From dis to a method reading level 0, which dis did not keep, the stream restarts:
    test_flow_formulations.)
    """
    a, b = frames()
    est = FlowEstimator(runtime, {'method': before, 'pyramid_levels': 1})
    est.push(array_to_raw(a, 'mono8'))
    est.configure({'method': after, 'pyramid_levels': 4})
    changed = est.push(array_to_raw(b, 'mono8'))
    fresh = FlowEstimator(runtime, {'method': after, 'pyramid_levels': 4})
    np.testing.assert_array_equal(changed, fresh.estimate(a, b))


def test_bm_stream_of_1000_frames_keeps_caches_and_buffers_constant(runtime):
    """
    Issue 10: a bm stream grew the program cache by one entry a frame.

    Kernels were cached by the identity of a defines dict that bm built every frame. Programs are
    now built when the estimator is made or configured, and a stream allocates nothing after its
    first frames.
    """
    rng = np.random.default_rng(18)
    raws = [array_to_raw(textured(rng, 40, 48), 'mono8') for _ in range(2)]
    est = FlowEstimator(runtime, {'method': 'bm'})
    for raw in raws * 2:
        est.push(raw)
    caches, buffers = runtime.cache_sizes(), estimator_buffers(est)
    for index in range(1000):
        est.push(raws[index % 2], copy=False)
    assert runtime.cache_sizes() == caches
    assert_same_buffers(est, buffers)


def test_a_new_build_define_builds_only_its_program_once(runtime, monkeypatch):
    """
    A new build define builds only its program, once, in configure().

    block_size and search_radius rebuild bm alone, window_size lk alone; switching back finds the
    programs in the runtime's cache.
    """
    est = FlowEstimator(runtime, {'method': 'bm'})
    built = []

    def build(context, entry, files, defines):
        built.append(files)
        return real_build(context, entry, files, defines)
    real_build = runtime_module.build
    monkeypatch.setattr(runtime_module, 'build', build)
    est.configure({'block_size': 6, 'search_radius': 5})  # sizes no other test builds
    est.configure({'window_size': 11})
    est.configure({'block_size': 8, 'search_radius': 7, 'window_size': 15})
    assert built == [block_matching.KERNELS, lk.KERNELS]
    a, b = frames()
    est.estimate(a, b)
    assert len(built) == 2


def test_two_estimators_on_one_runtime_keep_their_own_streams(runtime):
    a, b = frames()
    first = FlowEstimator(runtime, {'method': 'bm'})
    second = FlowEstimator(runtime, {'method': 'bm'})
    first.push(array_to_raw(a, 'mono8'))
    second.push(array_to_raw(b, 'mono8'))
    forward, backward = first.push(array_to_raw(b, 'mono8')), second.push(array_to_raw(a, 'mono8'))
    np.testing.assert_array_equal(forward, first.estimate(a, b))
    np.testing.assert_array_equal(backward, first.estimate(b, a))


def test_parameters_apply_to_the_next_frame_and_bad_ones_are_rejected(runtime):
    a, b = frames()
    est = FlowEstimator(runtime, {'method': 'lk'})
    est.push(array_to_raw(a, 'mono8'))
    est.configure({'method': 'bm', 'block_size': 4, 'subpixel': False})
    flow = est.push(array_to_raw(b, 'mono8'))
    assert set(np.unique(flow)) <= set(range(-7, 8)), 'integer block vectors: bm was used'
    with pytest.raises(ParameterError, match='odd'):
        est.configure({'window_size': 8})
    with pytest.raises(ParameterError, match='method'):
        est.configure({'method': 'farneback'})
    assert est.settings.method == 'bm' and est.settings.window_size == 15


def test_a_size_change_restarts_the_stream(runtime):
    a, b = frames()
    est = FlowEstimator(runtime, {'method': 'lk'})
    est.push(array_to_raw(a, 'mono8'))
    assert est.push(array_to_raw(b[:30, :40].copy(), 'mono8')) is None
    assert est.push(array_to_raw(a[:30, :40].copy(), 'mono8')).shape == (30, 40, 2)
    est.reset()
    assert est.push(array_to_raw(a, 'mono8')) is None
    with pytest.raises(ImageFormatError, match='differ'):
        est.estimate(a, b[:30])


@pytest.mark.parametrize('method', ['lk', 'hs', 'bm'])
def test_tiny_and_transposed_frames(runtime, method):
    """Frames smaller than every stencil, window and tile; sizes with equal pixel counts."""
    est = FlowEstimator(runtime, {'method': method})
    rng = np.random.default_rng(13)
    for shape in [(1, 1), (2, 3), (3, 2), (9, 7), (7, 9)]:
        a = rng.integers(0, 256, shape).astype(np.uint8)
        flow = est.estimate(a, np.roll(a, 1, axis=1))
        assert flow.shape == (*shape, 2)
        if method != 'lk':
            assert np.isfinite(flow).all()


def test_float_and_mono8_inputs_agree(runtime):
    a, b = frames()
    est = FlowEstimator(runtime, {'method': 'hs', 'pyramid_levels': 2, 'warps': 1})
    np.testing.assert_array_equal(est.estimate(a, b),
                                  est.estimate(a.astype(np.float32), b.astype(np.float32)))


def test_schema_defaults_validate_and_every_numeric_parameter_has_a_range():
    FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), {})
    for spec in FLOW_SCHEMA:
        if spec.type in (int, float):
            assert spec.min is not None and spec.max is not None, spec.name


def test_metrics_score_only_known_finite_pixels():
    truth = np.zeros((2, 3, 2))
    truth[0, 0] = np.nan
    estimate = np.zeros_like(truth)
    estimate[1, 0] = (3.0, 4.0)
    estimate[1, 1] = np.nan
    errors = flow_errors(estimate, truth)
    assert errors.scored == 4 and errors.density == pytest.approx(0.8)
    assert errors.epe == pytest.approx(5.0 / 4)
    expected_angle = np.degrees(np.arccos(1.0 / np.sqrt(26.0)))
    assert errors.aae == pytest.approx(expected_angle / 4)


def test_color_wheel_follows_middlebury():
    flow = np.array([[[1, 0], [0, 1], [-1, 0], [0, 0], [np.nan, 0], [2, 0]]])
    got = flow_to_color(flow, max_flow=1.0)
    assert got.dtype == np.uint8 and got.shape == (1, 6, 3)
    assert got[0, 0].tolist() == [0, 0, 255]  # right: red (BGR)
    assert got[0, 3].tolist() == [255, 255, 255]  # no motion: white
    assert got[0, 4].tolist() == [0, 0, 0]  # unknown: black
    assert got[0, 5].tolist() == [0, 0, 191]  # beyond max_flow: darkened
    auto = flow_to_color(flow)  # scaled by the largest magnitude (2)
    assert auto[0, 5].tolist() == [0, 0, 255]
