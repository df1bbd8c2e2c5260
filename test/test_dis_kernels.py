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
Dense inverse search: each kernel against its NumPy reference, and the method as a whole.

Kernels of kernels/flow/dense_inverse_search.cl against flow/reference.py, both formulations of
the refinement solver against each other, and the method through FlowEstimator.

Sizes are odd and not multiples of the patch stride, the solver tile or a work-group. Tolerances:
densification and the refinement terms to 1e-4 of the data's scale (float32 against float64);
the patch search makes decisions (the best candidate, when the descent stops), so float rounding
can flip one: its flows must agree to 1e-3 px on at least 97 % of the patches. The solver runs
5 sweeps of an iterative method: 1e-3 px. Run also under POCL_MAX_WORK_GROUP_SIZE=64
(test_small_devices), where the GPU formulation's work-group is 16 x 4.
"""
from cl_vision_nodes.dataio.synthetic import flow_pair
from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.flow import coarse_to_fine
from cl_vision_nodes.flow import dense_inverse_search as dis, FlowEstimator
from cl_vision_nodes.flow import reference as ref
from cl_vision_nodes.flow.metrics import flow_errors
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.pyramid import level_shapes
from cl_vision_nodes.flow.schema import FLOW_SCHEMA, FlowSettings, resolve_method
import cv2
from deviceutil import download, empty, upload
import numpy as np
import pytest

pytestmark = pytest.mark.kernels

i32, f32 = np.int32, np.float32


def textured(rng: np.random.Generator, h: int, w: int, flat: bool = False) -> np.ndarray:
    """Blurred noise on 0..255; with ``flat`` a textureless block (singular patch Hessians)."""
    img = cv2.GaussianBlur(rng.uniform(0, 255, (h, w)).astype(np.float32), (0, 0), 1.5)
    img = np.clip((img - img.mean()) * 4 + 128, 0, 255)
    if flat:
        img[2:2 + h // 2, 3:3 + w // 2] = 77.0
    return img.astype(np.float32)


def shifted(img: np.ndarray, dx: float, dy: float) -> np.ndarray:
    """Frame 1 of a translation by (dx, dy): img sampled at x - d (replicated border)."""
    h, w = img.shape
    y, x = np.mgrid[:h, :w].astype(np.float64)
    return ref.bilinear(img.astype(np.float64), x - dx, y - dy).astype(np.float32)


def smooth_flow(rng: np.random.Generator, h: int, w: int, scale: float) -> np.ndarray:
    flow = cv2.GaussianBlur(rng.normal(0, 1, (h, w, 2)).astype(np.float32), (0, 0), 4)
    return flow / np.abs(flow).max() * scale


def program(runtime, patch: int, formulation: str = 'cpu'):
    group = dis.solve_group(runtime.limits, formulation)
    return dis.program(runtime, patch, group), group


CASES = [(29, 37, 8, 3), (37, 29, 8, 4), (23, 41, 4, 3), (41, 33, 12, 5), (19, 17, 16, 16)]


def search(runtime, formulation: str, i0, i1, coarse, sparse, patch: int, stride: int,
           iterations: int, propagate: int) -> np.ndarray:
    """
    Return a search pass's patch flows from the formulation's kernel.

    The first pass starts from ``coarse``, the coarser level's field (None: zero).
    """
    h, w = i0.shape
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    built, _ = program(runtime, patch)
    out = empty(runtime, (hs, ws, 2))
    field = np.zeros((1, 1, 2), np.float32) if coarse is None else coarse
    ch, cw = (0, 0) if coarse is None else coarse.shape[:2]
    args = (upload(runtime, i0), upload(runtime, ref.gradient(i0).astype(np.float32)),
            upload(runtime, i1), i32(w), i32(h), upload(runtime, field), i32(cw), i32(ch),
            upload(runtime, sparse), out, i32(ws), i32(hs), i32(stride), i32(iterations),
            i32(propagate))
    if formulation == 'cpu':
        built.kernel('dis_search')((ws, hs), args, 'test')
    else:
        slots = dis.search_slots(runtime.limits, patch)
        built.kernel('dis_search_group')((patch, -(-ws * hs // slots) * slots), args, 'test',
                                         local=(patch, slots))
    return download(runtime, out, (hs, ws, 2))


def search_inputs(h: int, w: int, patch: int, stride: int, seed: int):
    """Frames of a translation with a textureless block, a smooth coarser field, patch starts."""
    rng = np.random.default_rng(seed)
    i0 = textured(rng, h, w, flat=h > 25)
    i1 = shifted(i0, 1.3, -0.6)
    coarse = smooth_flow(rng, (h + 1) // 2, (w + 1) // 2, 0.75)
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    sparse = (rng.normal(0, 1.0, (hs, ws, 2)) + [1.3, -0.6]).astype(np.float32)
    return i0, i1, coarse, sparse


def start_field(coarse: np.ndarray | None, h: int, w: int) -> np.ndarray:
    """Return the reference's dense start: the coarser field prolonged by 2 (or zero)."""
    return np.zeros((h, w, 2)) if coarse is None else ref.flow_upsample(coarse, (h, w))


@pytest.mark.parametrize('h, w, patch, stride', CASES)
@pytest.mark.parametrize('propagate', [0, 1, 'coarsest'])
@pytest.mark.parametrize('formulation', ['cpu', 'gpu'])
def test_dis_search_matches_reference(runtime, h, w, patch, stride, propagate, formulation):
    i0, i1, coarse, sparse = search_inputs(h, w, patch, stride, h * w + patch + (propagate == 1))
    if propagate == 'coarsest':  # a first pass without a coarser level starts from zero
        coarse, propagate = None, 0
    got = search(runtime, formulation, i0, i1, coarse, sparse, patch, stride, 8, propagate)
    g0 = ref.gradient(i0).astype(np.float32)
    want = ref.dis_search(i0, g0, i1, start_field(coarse, h, w), sparse if propagate else None,
                          patch, stride, 8)
    agree = np.abs(got - want).max(axis=-1) <= 1e-3
    assert agree.mean() >= 0.97, (agree.mean(), np.abs(got - want).max())
    assert np.isfinite(got).all()


@pytest.mark.parametrize('h, w, patch, stride', [*CASES, (53, 61, 8, 3), (9, 70, 8, 2)])
@pytest.mark.parametrize('propagate', [0, 1])
def test_dis_search_formulations_are_equal(runtime, h, w, patch, stride, propagate):
    """
    A work-item per patch row adds the rows' sums in the order one per patch does: the same bits.

    Whatever the grid leaves of the last work-group.
    """
    i0, i1, coarse, sparse = search_inputs(h, w, patch, stride, 7 * h + w)
    sparse[::3, ::2] += 9.0  # starts far off: clamped taps and descents stopped early
    coarse[::4, ::3] += 4.5
    flows = [search(runtime, f, i0, i1, coarse, sparse, patch, stride, 12, propagate)
             for f in ('cpu', 'gpu')]
    np.testing.assert_array_equal(flows[0], flows[1])


def search_both(runtime, kernel_name: str, patch: int, stride: int, level: tuple,
                start: tuple) -> np.ndarray:
    """
    Return the patch flows of a dis_search_both kernel, 12 iterations a pass.

    ``level``: the arguments i0, g0, i1, w, h; ``start``: those of the coarser level.
    """
    w, h = int(level[3]), int(level[4])
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    built, _ = program(runtime, patch)
    kernel = built.kernel(kernel_name)
    if not dis.both_fit(runtime.limits, kernel, patch):  # the estimator takes two launches
        pytest.skip(f'the device allows no {patch} x {dis.SEARCH_BOTH} work-group here')
    out = empty(runtime, (hs, ws, 2))
    blocks = (-(-ws // dis.SEARCH_BLOCK), -(-hs // dis.SEARCH_BLOCK))
    kernel((patch * blocks[0], dis.SEARCH_BOTH * blocks[1]),
           (*level, *start, out, i32(ws), i32(hs), i32(stride), i32(12)), 'test',
           local=(patch, dis.SEARCH_BOTH))
    return download(runtime, out, (hs, ws, 2))


@pytest.mark.parametrize('h, w, patch, stride', [*CASES, (53, 61, 8, 3), (9, 70, 8, 2)])
@pytest.mark.parametrize('coarsest', [False, True])
def test_dis_search_both_is_the_two_passes(runtime, h, w, patch, stride, coarsest):
    """The GPU's one launch a level: the second pass's flows of the two launches, bit for bit."""
    i0, i1, coarse, sparse = search_inputs(h, w, patch, stride, 5 * h + w)
    coarse[::4, ::3] += 4.5  # starts far off: clamped taps and descents stopped early
    if coarsest:
        coarse = None
    first = search(runtime, 'gpu', i0, i1, coarse, sparse, patch, stride, 12, 0)
    want = search(runtime, 'gpu', i0, i1, coarse, first, patch, stride, 12, 1)
    field = np.zeros((1, 1, 2), np.float32) if coarse is None else coarse
    ch, cw = (0, 0) if coarse is None else coarse.shape[:2]
    level = (upload(runtime, i0), upload(runtime, ref.gradient(i0).astype(np.float32)),
             upload(runtime, i1), i32(w), i32(h))
    got = search_both(runtime, 'dis_search_both', patch, stride, level,
                      (upload(runtime, field), i32(cw), i32(ch)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('h, w, patch, stride', [*CASES, (53, 61, 8, 3), (9, 70, 8, 2)])
def test_dis_search_both_patches_is_densify_then_search_both(runtime, h, w, patch, stride):
    """
    An unrefined coarser level's starts densified as read: dis_densify's field, bit for bit.

    Textureless blocks, patch flows larger than a patch, odd sizes.
    """
    i0, i1, _, _ = search_inputs(h, w, patch, stride, 3 * h + w)
    ch, cw = (h + 1) // 2, (w + 1) // 2
    rng = np.random.default_rng(h + 2 * w)
    i0c, i1c = textured(rng, ch, cw, flat=True), textured(rng, ch, cw)
    if min(ch, cw) < patch:
        pytest.skip('the coarser level holds no patch')
    wsc, hsc = dis.grid_count(cw, patch, stride), dis.grid_count(ch, patch, stride)
    sparse_c = rng.normal(0, 1.0, (hsc, wsc, 2)).astype(np.float32)
    sparse_c[::3, ::2] += 9.0  # starts further than a patch: clamped taps
    coarse = densify(runtime, 'gpu', i0c, i1c, sparse_c, patch, stride)
    level = (upload(runtime, i0), upload(runtime, ref.gradient(i0).astype(np.float32)),
             upload(runtime, i1), i32(w), i32(h))
    want = search_both(runtime, 'dis_search_both', patch, stride, level,
                       (upload(runtime, coarse), i32(cw), i32(ch)))
    got = search_both(runtime, 'dis_search_both_patches', patch, stride, level,
                      (upload(runtime, i0c), upload(runtime, i1c), i32(cw), i32(ch),
                       upload(runtime, sparse_c), i32(wsc), i32(hsc)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('factor', [2, 4, 8])
@pytest.mark.parametrize('h, w, patch, stride', [(29, 37, 8, 3), (37, 29, 8, 4), (13, 8, 8, 3),
                                                 (31, 9, 4, 1), (26, 70, 8, 8)])
@pytest.mark.parametrize('group', [(16, 16), (8, 8), (3, 2), (1, 1)])
def test_dis_densify_upsample_is_densify_then_upsample(runtime, h, w, patch, stride, factor,
                                                       group):
    """
    The finest unrefined level straight to full resolution: the two launches' field bit for bit.

    Work-groups of 256, 64, 6 and 1 items, levels that are no multiple of them, a full
    resolution cut short of factor x level (as a pyramid's odd sizes round up).
    """
    if not runtime.limits.fits(group):
        pytest.skip(f'the device allows no {group} work-group here')
    rng = np.random.default_rng(h * w + factor)
    i0, i1 = textured(rng, h, w, flat=h > 25), textured(rng, h, w)
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    sparse = rng.normal(0, 3.0, (hs, ws, 2)).astype(np.float32)
    fh, fw = h * factor - factor // 2, w * factor - 1
    dense = densify(runtime, 'gpu', i0, i1, sparse, patch, stride)
    want = empty(runtime, (fh, fw, 2))
    coarse_to_fine.upsample_kernel(runtime, factor)((w, h), (
        upload(runtime, dense), i32(w), i32(h), want, i32(fw), i32(fh), i32(factor)), 'test')
    built = dis.program(runtime, patch, group)
    got = empty(runtime, (fh, fw, 2))
    built.kernel(f'dis_densify_upsample_by{factor}')(
        (w, h), (upload(runtime, i0), upload(runtime, i1), i32(w), i32(h),
                 upload(runtime, sparse), i32(ws), i32(hs), i32(stride), got, i32(fw), i32(fh)),
        'test', local=group)
    expected = download(runtime, want, (fh, fw, 2))
    np.testing.assert_array_equal(download(runtime, got, (fh, fw, 2)), expected)
    reference = ref.flow_upsample(ref.dis_densify(i0, i1, sparse, patch, stride), (fh, fw),
                                  factor)
    np.testing.assert_allclose(expected, reference, atol=1e-4 * factor * np.abs(sparse).max())


def test_dis_search_finds_a_translation_and_keeps_textureless_patches_at_their_start(runtime):
    rng = np.random.default_rng(3)
    h, w, patch, stride = 48, 56, 8, 4
    i0 = textured(rng, h, w)
    i0[6:34, 6:34] = 90.0  # patches 2 px inside see no gradient: singular Hessian, b = 0
    i1 = shifted(i0, 3.0, 2.0)  # whole pixels: frame 1 is frame 0 moved, not resampled
    g0 = ref.gradient(i0).astype(np.float32)
    coarse = np.full((h // 2, w // 2, 2), [1.0, 1.0], np.float32)  # prolonged: (2, 2)
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    built, _ = program(runtime, patch)
    out = empty(runtime, (hs, ws, 2))
    built.kernel('dis_search')((ws, hs), (
        upload(runtime, i0), upload(runtime, g0), upload(runtime, i1), i32(w), i32(h),
        upload(runtime, coarse), i32(w // 2), i32(h // 2), out, out, i32(ws), i32(hs),
        i32(stride), i32(20), i32(0)), 'test')
    got = download(runtime, out, (hs, ws, 2))
    oys, oxs = ref.dis_origins(h, patch, stride), ref.dis_origins(w, patch, stride)
    inner = ((oys[:, None] >= 8) & (oys[:, None] + patch <= 32)
             & (oxs[None, :] >= 8) & (oxs[None, :] + patch <= 32))
    assert inner.sum() == 25
    np.testing.assert_array_equal(got[inner], 2.0)
    # textured patches whose match in frame 1 is not in the replicated border
    textured_patches = (((oys[:, None] >= 36) | (oxs[None, :] >= 36))
                        & (oys[:, None] + patch <= h - 2) & (oxs[None, :] + patch <= w - 3))
    error = np.linalg.norm(got[textured_patches] - [3.0, 2.0], axis=-1)
    assert error.max() < 1e-3, error


def densify(runtime, formulation: str, i0, i1, sparse, patch: int, stride: int) -> np.ndarray:
    """Return the dense flow of the formulation's kernel, dis_densify_rows on a CPU."""
    (h, w), (hs, ws) = i0.shape, sparse.shape[:2]
    built, _ = program(runtime, patch)
    out = empty(runtime, (h, w, 2))
    args = (upload(runtime, i0), upload(runtime, i1), i32(w), i32(h), upload(runtime, sparse),
            i32(ws), i32(hs), i32(stride), out)
    if formulation == 'cpu':
        built.kernel('dis_densify_rows')((-(-w // dis.LANES), -(-h // dis.DENSIFY_ROWS)), args,
                                         'test', local=(1, 1))
    else:
        built.kernel('dis_densify')((w, h), args, 'test')
    return download(runtime, out, (h, w, 2))


DENSIFY_CASES = [*CASES, (13, 8, 8, 3), (31, 9, 4, 1), (26, 70, 8, 8)]


@pytest.mark.parametrize('h, w, patch, stride', DENSIFY_CASES)
@pytest.mark.parametrize('formulation', ['cpu', 'gpu'])
def test_dis_densify_matches_reference(runtime, h, w, patch, stride, formulation):
    rng = np.random.default_rng(h + w)
    i0, i1 = textured(rng, h, w), textured(rng, h, w)
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    sparse = rng.normal(0, 2.0, (hs, ws, 2)).astype(np.float32)
    got = densify(runtime, formulation, i0, i1, sparse, patch, stride)
    np.testing.assert_allclose(got, ref.dis_densify(i0, i1, sparse, patch, stride),
                               atol=1e-4 * np.abs(sparse).max())


@pytest.mark.parametrize('h, w, patch, stride', DENSIFY_CASES)
@pytest.mark.parametrize('scale', [0.4, 30.0])
def test_dis_densify_formulations_are_equal(runtime, h, w, patch, stride, scale):
    """
    Votes as row vectors take the per-pixel votes in their order: the same bits.

    Small flows keep the samples inside, flows larger than the frame clamp every tap.
    """
    rng = np.random.default_rng(h * w + stride)
    i0, i1 = textured(rng, h, w), textured(rng, h, w)
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    sparse = rng.normal(0, scale, (hs, ws, 2)).astype(np.float32)
    sparse[0, 0] = [0.999999, -1e-7]  # fractions at the edge of [0, 1)
    np.testing.assert_array_equal(densify(runtime, 'cpu', i0, i1, sparse, patch, stride),
                                  densify(runtime, 'gpu', i0, i1, sparse, patch, stride))


def refinement_inputs(runtime, h: int, w: int, seed: int):
    rng = np.random.default_rng(seed)
    i0 = textured(rng, h, w)
    i1 = shifted(i0, 0.7, -0.4) + rng.normal(0, 2, (h, w)).astype(np.float32)
    flow = smooth_flow(rng, h, w, 1.0)
    return i0, i1, flow


@pytest.mark.parametrize('local', [None, (8, 8)])
@pytest.mark.parametrize('h, w', [(29, 37), (37, 29), (5, 3), (40, 33)])
def test_dis_refinement_terms_match_reference(runtime, h, w, local):
    i0, i1, flow = refinement_inputs(runtime, h, w, h * w)
    built, _ = program(runtime, 8)
    averaged = empty(runtime, (h, w, 2))
    terms = empty(runtime, (dis.TERMS, h, w))
    wh = (i32(w), i32(h))
    built.kernel('dis_vr_warp')((w, h), (upload(runtime, i0), upload(runtime, i1),
                                         upload(runtime, flow), *wh, averaged), 'test')
    built.kernel('dis_vr_terms')((w, h), (averaged, *wh, terms), 'test', local)
    np.testing.assert_allclose(download(runtime, terms, (dis.TERMS, h, w)),
                               term_planes(*ref.dis_vr_terms(i0, i1, flow)), atol=255e-4)


def term_planes(t1: np.ndarray, t2: np.ndarray) -> np.ndarray:
    """Return the reference's two float4 images as dis_vr_terms' planes."""
    return np.concatenate([t1, t2], axis=-1).transpose(2, 0, 1)


def solve(runtime, t1, t2, flow, dflow, offset: int, fresh: bool,
          weights=(10.0, 5.0, 2.5)) -> tuple[np.ndarray, np.ndarray]:
    """One fixed-point iteration of dis_vr_solve_rows: (new dflow, flow + new dflow)."""
    h, w = flow.shape[:2]
    built, group = program(runtime, 8, 'cpu')
    tiles = (-(-(w + offset) // dis.TILE), -(-(h + offset) // dis.TILE))
    out, total = empty(runtime, (h, w, 2)), empty(runtime, (h, w, 2))
    args = (upload(runtime, term_planes(t1, t2)), upload(runtime, flow), upload(runtime, dflow),
            out, total, i32(w), i32(h), i32(offset), i32(fresh), i32(1),
            *(f32(v) for v in weights))
    built.kernel('dis_vr_solve_rows')(tiles, args, 'test', local=group)
    return download(runtime, out, (h, w, 2)), download(runtime, total, (h, w, 2))


@pytest.mark.parametrize('h, w', [(29, 37), (40, 33), (3, 5), (17, 16)])
@pytest.mark.parametrize('offset, fresh', [(0, True), (8, False)])
def test_dis_vr_solve_matches_reference(runtime, h, w, offset, fresh):
    i0, i1, flow = refinement_inputs(runtime, h, w, h + w)
    t1, t2 = ref.dis_vr_terms(i0, i1, flow)
    dflow = np.random.default_rng(1).normal(0, 0.2, (h, w, 2)).astype(np.float32)
    got, total = solve(runtime, t1, t2, flow, dflow, offset, fresh)
    want = ref.dis_vr_solve(t1, t2, flow, 0 * dflow if fresh else dflow, offset, dis.TILE,
                            10.0, 5.0, 2.5)
    np.testing.assert_allclose(got, want, atol=1e-3)
    np.testing.assert_allclose(total, flow + got, atol=1e-6)


SOLVE_CASES = [(29, 37, 8, 3), (40, 33, 12, 5), (5, 9, 4, 1), (12, 12, 8, 4), (25, 13, 8, 8)]


@pytest.mark.parametrize('h, w, patch, stride', SOLVE_CASES)
@pytest.mark.parametrize('iterations', [1, 5])
def test_dis_vr_solve_level_densifies_and_solves_as_the_reference(
        runtime, h, w, patch, stride, iterations):
    """
    A level's densification, terms and iterations in one launch, each area alone.

    Odd sizes, cores cut by the edge, the work-groups the device allows (a GPU's, PoCL's at 64,
    a smaller one).
    """
    rng = np.random.default_rng(3 * h + w + patch)
    i0 = textured(rng, h, w)
    i1 = shifted(i0, 0.7, -0.4) + rng.normal(0, 2, (h, w)).astype(np.float32)
    ws, hs = dis.grid_count(w, patch, stride), dis.grid_count(h, patch, stride)
    sparse = (rng.normal(0, 0.3, (hs, ws, 2)) + [0.7, -0.4]).astype(np.float32)
    dense = ref.dis_densify(i0, i1, sparse, patch, stride)
    t1, t2 = ref.dis_vr_terms(i0, i1, dense)
    want = ref.dis_vr_solve_level(t1, t2, dense, iterations, dis.TILE, dis.HALO, 10.0, 5.0, 2.5)
    args = (upload(runtime, i0), upload(runtime, i1), i32(w), i32(h), upload(runtime, sparse),
            i32(ws), i32(hs), i32(stride))
    areas = (-(-w // dis.CORE), -(-h // dis.CORE))
    for group in [g for g in ((16, 16), (16, 4), (8, 8)) if runtime.limits.fits(g)]:
        out = empty(runtime, (h, w, 2))
        dis.program(runtime, patch, group).kernel('dis_vr_solve_level')(
            (areas[0] * group[0], areas[1] * group[1]),
            (*args, out, i32(iterations), f32(10.0), f32(5.0), f32(2.5)), 'test', local=group)
        got = download(runtime, out, (h, w, 2))
        np.testing.assert_allclose(got, want, atol=1e-3)
        assert np.abs(got - dense).max() > 1e-3  # the refinement moved the flow


def test_solve_groups_fit_the_device():
    from cl_vision_nodes.opencl.limits import DeviceLimits
    small = DeviceLimits(max_group=64, max_item_sizes=(64, 64, 64), local_mem=32768, fp64=False,
                         image_support=False, compute_units=1, is_gpu=True,
                         host_memory=False)
    assert dis.solve_group(small, 'gpu') == (16, 4)
    assert dis.solve_group(small, 'cpu') == (1, 1)
    assert small.formulation == 'gpu'


def test_coarsest_level_follows_opencv_and_the_pyramid():
    # OpenCV: min(int(log2(max / (4 * patch)) + 0.5), int(log2(min / patch)))
    assert dis.coarsest_level(level_shapes(480, 640), 8) == 4
    assert dis.coarsest_level(level_shapes(720, 1280), 8) == 5
    assert dis.coarsest_level(level_shapes(37, 29), 8) == 0
    assert dis.coarsest_level(level_shapes(60, 2000), 16) == 1


@pytest.mark.parametrize('h, w', [(61, 83), (97, 131), (480 // 3, 641 // 3)])
@pytest.mark.parametrize('preset', sorted(DIS_PRESETS))
def test_formulations_give_the_same_flow_or_the_same_accuracy(runtime, preset, h, w):
    """
    Search and densification are the same numbers in both; the solvers differ in how tiles meet.

    Unrefined (ultrafast): the same flow. Refined: EPE against the truth within 2 % and 0.01 px.
    """
    sample = flow_pair(h, w, motion='rotation', seed=h)
    flows = {f: FlowEstimator(runtime, DIS_PRESETS[preset], formulation=f).estimate(
        sample.frame0, sample.frame1) for f in ('cpu', 'gpu')}
    assert np.isfinite(flows['cpu']).all() and flows['cpu'].shape == (h, w, 2)
    if DIS_PRESETS[preset]['dis_refine_iterations'] == 0:
        np.testing.assert_allclose(flows['cpu'], flows['gpu'], atol=1e-5)
        return
    epe = {f: flow_errors(flow, sample.flow, sample.valid).epe for f, flow in flows.items()}
    assert abs(epe['cpu'] - epe['gpu']) <= max(0.01, 0.02 * epe['cpu']), epe
    assert np.abs(flows['cpu'] - flows['gpu']).max() > 0  # the two solvers did run


@pytest.mark.parametrize('preset', sorted(DIS_PRESETS))
def test_presets_recover_a_translation_larger_than_a_patch(runtime, preset):
    estimator = FlowEstimator(runtime, DIS_PRESETS[preset])
    sample = flow_pair(240, 320, motion='translation', seed=4)
    img = sample.frame0.astype(np.float32)
    moved = shifted(img, 13.0, -9.0)  # more than the 8-pixel patch
    flow = estimator.estimate(img, moved)
    valid = np.zeros((240, 320), bool)
    valid[20:-20, 20:-20] = True
    errors = flow_errors(flow, np.broadcast_to(np.float32([13.0, -9.0]), flow.shape), valid)
    assert errors.epe < 0.2, errors


@pytest.mark.parametrize('h, w', [(7, 5), (3, 2), (8, 8), (9, 300)])
def test_frames_smaller_than_a_patch_or_barely_larger(runtime, h, w):
    estimator = FlowEstimator(runtime, {'method': 'dis'})
    rng = np.random.default_rng(0)
    flow = estimator.estimate(textured(rng, h, w), textured(rng, h, w))
    assert flow.shape == (h, w, 2) and np.isfinite(flow).all()
    if min(h, w) < 8:
        assert not flow.any()


def test_auto_is_dis_on_cpus_and_hs_on_gpus_and_never_overrides_a_method(runtime):
    estimator = FlowEstimator(runtime)
    expected = 'hs' if runtime.limits.is_gpu else 'dis'
    assert estimator.settings.method == 'auto' and estimator.method == expected
    for method in ('lk', 'hs', 'bm', 'dis'):
        assert resolve_method(method, True) == resolve_method(method, False) == method
    estimator.configure({'method': 'bm'})
    assert estimator.method == 'bm'
    estimator.configure({'method': 'auto'})
    assert estimator.method == expected


@pytest.mark.parametrize('change, words', [
    ({'dis_patch_size': 6}, 'dis_patch_size'),
    ({'dis_patch_size': 20}, 'dis_patch_size'),
    ({'dis_patch_stride': 9}, 'larger than dis_patch_size'),
    ({'dis_iterations': 1}, 'dis_iterations'),
    ({'dis_refine_iterations': -1}, 'dis_refine_iterations'),
    ({'dis_alpha': -1.0}, 'dis_alpha'),
    ({'method': 'farneback'}, 'method'),
])
def test_bad_dis_parameters_are_refused_with_the_reason(runtime, change, words):
    estimator = FlowEstimator(runtime, {'method': 'dis'})
    before = dict(estimator.values)
    with pytest.raises(ParameterError, match=words):
        estimator.configure(change)
    assert estimator.values == before


def test_presets_are_valid_parameter_values():
    for values in DIS_PRESETS.values():
        settings = FlowSettings.from_values(FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(), values))
        assert settings.method == 'dis'
    assert {k: v for k, v in DIS_PRESETS['medium'].items() if k != 'method'} == {
        k: FLOW_SCHEMA.defaults()[k] for k in DIS_PRESETS['medium'] if k != 'method'}


def test_patch_size_change_applies_to_the_next_frame(runtime):
    estimator = FlowEstimator(runtime, {'method': 'dis'})
    sample = flow_pair(64, 80, motion='translation', seed=1)
    first = estimator.estimate(sample.frame0, sample.frame1)
    estimator.configure({'dis_patch_size': 12, 'dis_patch_stride': 4})
    second = estimator.estimate(sample.frame0, sample.frame1)
    assert not np.array_equal(first, second)
    assert flow_errors(second, sample.flow, sample.valid).epe < 0.3


def test_streaming_matches_one_shot_reuses_plans_and_follows_size_changes(runtime):
    """Bound launches are replayed per pyramid slot; a new size or setting builds a new plan."""
    from cl_vision_nodes.imaging.encodings import gray_to_raw
    estimator = FlowEstimator(runtime, {'method': 'dis'})
    once = FlowEstimator(runtime, {'method': 'dis'})
    sequence = [flow_pair(45, 67, motion='rotation', seed=s).frame0 for s in range(4)]
    sequence += [flow_pair(33, 50, motion='zoom', seed=9).frame0,
                 flow_pair(33, 50, motion='zoom', seed=9).frame1]
    estimator.push(gray_to_raw(sequence[0]))
    handles = []
    for previous, frame in zip(sequence, sequence[1:]):
        flow = estimator.push(gray_to_raw(frame))
        if previous.shape != frame.shape:
            assert flow is None
            continue
        np.testing.assert_array_equal(flow, once.estimate(previous, frame))
        if frame.shape == sequence[0].shape:
            handles.append(estimator.buffers.handles())
    assert len(handles) == 3 and handles[1] == handles[2]  # both pyramid slots seen by then
    estimator.configure({'dis_refine_iterations': 0})
    flow = estimator.push(gray_to_raw(sequence[4]))
    once.configure({'dis_refine_iterations': 0})
    np.testing.assert_array_equal(flow, once.estimate(sequence[5], sequence[4]))


@pytest.mark.parametrize('method', ['dis', 'hs', 'lk', 'bm'])
def test_built_in_and_operator_spellings_give_the_same_flow(monkeypatch, method):
    """
    Kernels use operators on CPU devices (CL_VISION_CPU_DEVICE) and built-ins elsewhere.

    Both spellings are built here, the built-in one as a GPU gets it, and must agree exactly:
    this is also the only place a CPU-only CI compiles the GPU spelling.
    """
    from cl_vision_nodes.opencl import programs
    from cl_vision_nodes.opencl.runtime import ClRuntime
    sample = flow_pair(45, 67, motion='rotation', seed=2)
    flows = []
    for prelude in (programs.CPU_DEVICE_PRELUDE, ''):
        monkeypatch.setattr(programs, 'CPU_DEVICE_PRELUDE', prelude)
        try:  # a fresh runtime: nothing cached from the other spelling
            runtime = ClRuntime('cpu')
        except CLVisionError as exc:
            pytest.skip(f'no CPU OpenCL device here: {exc}')
        for formulation in ('cpu', 'gpu'):
            estimator = FlowEstimator(runtime, {'method': method}, formulation=formulation)
            flows.append(estimator.estimate(sample.frame0, sample.frame1))
    np.testing.assert_array_equal(flows[0], flows[2])  # cpu formulation, both spellings
    np.testing.assert_array_equal(flows[1], flows[3])  # gpu formulation, both spellings
