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
CPU formulations of flow kernels (issue 19: hs, lk, bm) against the GPU ones on one device.

Each CPU kernel is launched as the host module launches it and compared with its GPU twin (the
same tiles, sweeps and arithmetic: equal to float rounding; medians select values, so exactly)
and with the NumPy reference of test_flow_kernels. Sizes are odd and not multiples of the tile
or of a work-group. Also the kernel profile of ``cl-vision bench flow --kernels``: launches per
frame as the host code enqueues them. Run also under POCL_MAX_WORK_GROUP_SIZE=64
(test_small_devices reruns every ``kernels`` test).
"""
import math
import os

from cl_vision_nodes.benchmarks import flow_speed
from cl_vision_nodes.flow import block_matching, FlowEstimator
from cl_vision_nodes.flow import dense_inverse_search as dis
from cl_vision_nodes.flow import horn_schunck as hs
from cl_vision_nodes.flow import lucas_kanade as lk
from cl_vision_nodes.flow import reference as ref
from cl_vision_nodes.flow.horn_schunck import sor_slots, tile_offset
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.pyramid import level_shapes
from cl_vision_nodes.imaging.encodings import gray_to_raw
from cl_vision_nodes.opencl.profiling import StageProfiler
from cl_vision_nodes.opencl.runtime import ClRuntime
from cliutil import cl_vision
import cv2
from deviceutil import download, upload
import numpy as np
import pyopencl as cl
import pytest

pytestmark = pytest.mark.kernels

i32, f32 = np.int32, np.float32
DEVICE = os.environ.get('CL_VISION_TEST_DEVICE', 'auto')  # the runtime fixture's device

SIZES = [(23, 37), (131, 97), (3, 2), (16, 16), (17, 1)]
SOLVER = {'alpha2': 36.0, 'omega': 1.7, 'inv_eps_d2': 0.25, 'inv_eps_s2': 100.0}


def hs_problem(rng: np.random.Generator, h: int, w: int):
    """Return data terms (10 % of pixels without one), flow and increment, as test_flow_kernels."""
    terms = np.concatenate([rng.normal(0, 20, (h, w, 3)), (rng.random((h, w, 1)) > 0.1)],
                           axis=-1).astype(np.float32)
    return (terms, rng.normal(0, 1, (h, w, 2)).astype(np.float32),
            rng.normal(0, 0.3, (h, w, 2)).astype(np.float32))


def run_sor(runtime, formulation: str, terms, flow, dflow, launches: list[int], tol: float,
            fresh: bool = False) -> np.ndarray:
    """Launch the formulation's SOR kernel as HornSchunck does (ping-pong, tilings, slots)."""
    h, w = flow.shape[:2]
    solver = hs.HornSchunck(runtime, runtime.buffers(), formulation)
    buffers = [upload(runtime, dflow), upload(runtime, np.zeros_like(dflow))]
    flags = upload(runtime, np.array([0, 0, 1]), np.int32)
    fixed = (upload(runtime, terms), upload(runtime, flow))
    for index, sweeps in enumerate(launches):
        offset = tile_offset(index)
        solver._sweeps((h, w), offset, (
            *fixed, buffers[index % 2], buffers[1 - index % 2], flags, i32(w), i32(h),
            i32(fresh and index == 0), i32(offset), i32(sweeps), *sor_slots(index),
            *(f32(v) for v in SOLVER.values()), f32(tol)))
    return download(runtime, buffers[len(launches) % 2], (h, w, 2))


def assert_same_field(got: np.ndarray, want: np.ndarray) -> None:
    """Equal to float32 rounding through a few dozen sweeps."""
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize('h, w', SIZES)
@pytest.mark.parametrize('fresh', [False, True])
def test_hs_sor_cpu_gives_the_gpu_result(runtime, h, w, fresh):
    terms, flow, dflow = hs_problem(np.random.default_rng(21), h, w)
    launches = [3, 8, 8, 5]  # both tilings, a short last launch as iterations % 8 gives
    assert_same_field(run_sor(runtime, 'cpu', terms, flow, dflow, launches, 0.0, fresh),
                      run_sor(runtime, 'gpu', terms, flow, dflow, launches, 0.0, fresh))


@pytest.mark.parametrize('h, w', [(23, 37), (40, 33), (3, 2)])
def test_hs_sor_cpu_matches_reference(runtime, h, w):
    terms, flow, dflow = hs_problem(np.random.default_rng(22), h, w)
    launches = [2, 3]
    got = run_sor(runtime, 'cpu', terms, flow, dflow, launches, 0.0)
    want = dflow.astype(np.float64)
    for index, count in enumerate(launches):
        want = ref.hs_sor(terms.astype(np.float64), flow.astype(np.float64), want,
                          tile_offset(index), count, **SOLVER, tile=hs.TILE)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


def test_hs_sor_cpu_stops_on_the_device_once_converged(runtime):
    terms, flow, dflow = hs_problem(np.random.default_rng(23), 29, 37)
    one = run_sor(runtime, 'cpu', terms, flow, dflow, [2], tol=1e9)
    np.testing.assert_array_equal(run_sor(runtime, 'cpu', terms, flow, dflow, [2, 2, 2], 1e9),
                                  one)
    moving = run_sor(runtime, 'cpu', terms, flow, dflow, [2, 2, 2], tol=0.0)
    assert np.abs(moving - one).max() > 1e-3
    # the tolerance test (|change| > tol in u or v) decides as the GPU kernel's fmax(fabs)
    for tol in (1e-3, 3e-2):
        assert_same_field(run_sor(runtime, 'cpu', terms, flow, dflow, [1, 1, 1, 1, 1], tol),
                          run_sor(runtime, 'gpu', terms, flow, dflow, [1, 1, 1, 1, 1], tol))


@pytest.mark.parametrize('h, w', SIZES + [(9, 8), (5, 11), (1, 1)])
@pytest.mark.parametrize('median', [False, True])
def test_hs_update_cpu_is_the_gpu_kernel_exactly(runtime, h, w, median):
    rng = np.random.default_rng(24)
    flow = rng.normal(0, 2, (h, w, 2)).astype(np.float32)
    dflow = rng.normal(0, 1, (h, w, 2)).astype(np.float32)
    dflow[0, :3] = 1e4  # outliers the median removes
    results = []
    for formulation in ('gpu', 'cpu'):
        solver = hs.HornSchunck(runtime, runtime.buffers(), formulation)
        out = upload(runtime, np.zeros_like(flow))
        solver._median((h, w), (upload(runtime, flow), upload(runtime, dflow), i32(w), i32(h),
                                i32(median), out))
        results.append(download(runtime, out, (h, w, 2)))
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_allclose(results[1], ref.hs_update(flow, dflow, median), rtol=1e-6,
                               atol=1e-5)


@pytest.mark.parametrize('h, w', SIZES)
def test_hs_warp_cpu_is_the_gpu_kernel_and_resets_the_solver(runtime, h, w):
    rng = np.random.default_rng(27)
    i0, i1 = rng.uniform(0, 255, (h, w)), rng.uniform(0, 255, (h, w))
    g0, g1 = ref.gradient(i0), ref.gradient(i1)
    flow = rng.normal(0, 2.0, (h, w, 2))  # some pixels leave the frame
    inputs = [upload(runtime, a.astype(np.float32)) for a in (i0, g0, i1, g1, flow)]
    results = []
    for formulation in ('gpu', 'cpu'):
        solver = hs.HornSchunck(runtime, runtime.buffers(), formulation)
        terms = upload(runtime, np.zeros((h, w, 4), np.float32))
        flags = upload(runtime, np.array([5, 5, 5]), np.int32)
        solver._linearise((h, w), (*inputs, i32(w), i32(h), terms, flags))
        results.append(download(runtime, terms, (h, w, 4)))
        slots = np.empty(3, np.int32)
        cl.enqueue_copy(runtime.queue, slots, flags)
        assert slots.tolist() == [0, 0, 1]
    np.testing.assert_array_equal(results[1], results[0])
    want = ref.hs_warp(*(a.astype(np.float32) for a in (i0, g0, i1, g1)), flow.astype(np.float32))
    np.testing.assert_allclose(results[1], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def textured(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    big = cv2.GaussianBlur(rng.uniform(0, 255, (h, w)).astype(np.float32), (0, 0), 1.5)
    return np.clip((big - big.mean()) * 4 + 128, 0, 255).astype(np.uint8)


@pytest.mark.parametrize('h, w', [(131, 97), (23, 37)])
def test_hs_estimators_of_both_formulations_agree(runtime, h, w):
    frame0 = textured(np.random.default_rng(25), h + 4, w + 4)
    frame1 = frame0[1:h + 1, 3:w + 3]  # content moves by (u, v) = (-1, 1) px
    frame0 = frame0[2:h + 2, 2:w + 2]
    params = {'method': 'hs', 'pyramid_levels': 3}
    flows = [FlowEstimator(runtime, params, formulation).estimate(frame0, frame1)
             for formulation in ('gpu', 'cpu')]
    np.testing.assert_allclose(flows[1], flows[0], atol=1e-4)
    middle = flows[1][h // 4:-h // 4, w // 4:-w // 4]
    assert np.abs(middle.mean(axis=(0, 1)) - (-1, 1)).max() < 0.1


def test_the_device_formulation_is_the_estimators_default(runtime):
    estimator = FlowEstimator(runtime, {'method': 'hs'})
    assert estimator.formulation == runtime.limits.formulation
    assert estimator._methods['hs'].formulation == estimator.formulation


# --- Lucas-Kanade ------------------------------------------------------------------------------


def smooth_image(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    noise = rng.uniform(0, 255, (h + 8, w + 8)).astype(np.float32)
    return cv2.GaussianBlur(noise, (0, 0), 1.2)[4:4 + h, 4:4 + w] * 2.0 - 60.0


def lk_level(runtime, formulation: str, i0, i1, coarse, window: int, iterations: int,
             min_eig: float, final: bool, offset: int) -> np.ndarray:
    """Launch the formulation's lk kernel for one level as LucasKanade does."""
    h, w = i0.shape
    tiling = lk.LkTiling.of(runtime.limits, window // 2)
    ch, cw = coarse.shape[:2] if coarse is not None else (0, 0)
    args = (upload(runtime, i0), upload(runtime, i1), i32(w), i32(h),
            upload(runtime, coarse if coarse is not None else np.zeros(2, np.float32)), i32(cw),
            i32(ch), upload(runtime, np.zeros((h, w, 2), np.float32)),
            upload(runtime, lk.window_taps(window, window / 4)), i32(iterations), i32(offset),
            f32(min_eig), i32(final))
    built = lk.program(runtime, tiling, formulation)
    if formulation == 'gpu':
        built.kernel('lk_level')(tiling.items((h, w), offset), args, 'lk', local=tiling.group)
    else:
        built.kernel('lk_level_cpu')(tiling.tiles((h, w), offset), args, 'lk', local=(1, 1))
    return download(runtime, args[7], (h, w, 2))


@pytest.mark.parametrize('h, w, window, offset, with_coarse, iterations', [
    (23, 37, 15, 0, True, 3),
    (131, 97, 15, 16, True, 2),  # tiles in both directions
    (40, 33, 19, 8, True, 2),  # 16-row tiles
    (20, 18, 31, 4, False, 2),  # 8-row tiles, the largest window
    (3, 4, 5, 16, True, 2),
    (13, 8, 3, 0, False, 0),  # no step: the start flow
])
def test_lk_level_cpu_gives_the_gpu_result(runtime, h, w, window, offset, with_coarse,
                                           iterations):
    rng = np.random.default_rng(28)
    i0, i1 = smooth_image(rng, h, w), smooth_image(rng, h, w)
    coarse = (rng.normal(0, 1, ((h + 1) // 2, (w + 1) // 2, 2)).astype(np.float32)
              if with_coarse else None)
    for final in (False, True):
        args = (i0, i1, coarse, window, iterations, 50.0, final, offset)
        got, want = lk_level(runtime, 'cpu', *args), lk_level(runtime, 'gpu', *args)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert_same_field(np.nan_to_num(got), np.nan_to_num(want))
        if not final:
            taps = lk.window_taps(window, window / 4).astype(np.float64)
            tiling = lk.LkTiling.of(runtime.limits, window // 2)
            reference = ref.lk_level(i0, i1, None if coarse is None else coarse.astype(np.float64),
                                     taps, iterations, 50.0, False, (lk.TILE_W, tiling.tile_h),
                                     offset)
            np.testing.assert_allclose(got, reference, rtol=1e-3, atol=1e-3)


# --- block matching ----------------------------------------------------------------------------


def bm(runtime, formulation: str, i0, i1, block: int, radius: int, subpixel: bool):
    """Run the formulation's bm kernel as BlockMatcher does."""
    h, w = i0.shape
    settings = FlowEstimator(runtime, {'method': 'bm', 'block_size': block,
                                       'search_radius': radius}).settings
    matcher = block_matching.BlockMatcher(runtime, runtime.buffers(), settings, formulation)
    out = upload(runtime, np.zeros((h, w, 2), np.float32))
    matcher.search(upload(runtime, i0), upload(runtime, i1), (h, w), subpixel, out)
    return download(runtime, out, (h, w, 2))


@pytest.mark.parametrize('h, w, block, radius', [(23, 37, 8, 7), (131, 97, 5, 3), (3, 2, 8, 2),
                                                 (40, 33, 13, 4), (9, 35, 32, 32)])
def test_bm_search_cpu_is_the_gpu_kernel_and_the_reference_exactly(runtime, h, w, block, radius):
    rng = np.random.default_rng(26)
    i0 = rng.uniform(0, 255, (h, w)).astype(np.float32)
    i1 = np.roll(i0, (1, -2), (0, 1)) + rng.normal(0, 4, (h, w)).astype(np.float32)
    for subpixel in (False, True):
        got = bm(runtime, 'cpu', i0, i1, block, radius, subpixel)
        np.testing.assert_array_equal(got, bm(runtime, 'gpu', i0, i1, block, radius, subpixel))
        np.testing.assert_allclose(got, ref.bm_search(i0, i1, block, radius, subpixel),
                                   atol=1e-5)


def test_bm_search_cpu_runs_a_grid_of_73_x_49_blocks(runtime):
    """At RubberWhale's size PoCL, given no group, ran all 3577 blocks as one and crashed."""
    rng = np.random.default_rng(29)
    i0 = rng.uniform(0, 255, (388, 584)).astype(np.float32)
    i1 = np.roll(i0, (2, 1), (0, 1))
    got = bm(runtime, 'cpu', i0, i1, 8, 7, True)
    np.testing.assert_array_equal(got, bm(runtime, 'gpu', i0, i1, 8, 7, True))


def test_bm_search_cpu_ties_go_to_the_smallest_motion(runtime):
    stripes = np.tile((np.arange(19) % 2 * 200.0).astype(np.float32), (21, 1))  # period 2 in x
    assert not bm(runtime, 'cpu', stripes, stripes, 8, 3, False).any()


# --- the kernel profile -------------------------------------------------------------------------


def test_profiler_counts_launches_per_kernel_name():
    runtime = ClRuntime(DEVICE, profile=True)
    profiler = StageProfiler(enabled=True)
    event = cl.enqueue_marker(runtime.queue)
    for stage, kernel in [('a', 'k1'), ('a', 'k1'), ('b', 'k2'), ('copy', None)]:
        profiler.record(stage, event, kernel)
    times = profiler.collect_kernels()
    assert {name: t.launches for name, t in times.items()} == {'k1': 2, 'k2': 1, '[copy]': 1}
    assert profiler.collect_kernels() == {} and profiler.collect() == {}


@pytest.mark.parametrize('formulation', ['gpu', 'cpu'])
def test_kernel_profile_counts_the_launches_the_host_enqueues(formulation):
    width, height = 61, 45
    settings = {'pyramid_levels': 3, 'warps': 2, 'iterations': 20}
    times = flow_speed.kernel_times(DEVICE, 'hs', (width, height), 2, formulation, settings)
    levels = min(3, len(level_shapes(height, width)))
    steps = levels * settings['warps']
    suffix = '' if formulation == 'gpu' else '_cpu'
    sor, update = 'hs_sor' + suffix, 'hs_update' + suffix
    launches = {name: t.launches for name, t in times.items()}
    assert launches[sor] == steps * math.ceil(settings['iterations'] / hs.SWEEPS_PER_LAUNCH)
    assert launches['hs_warp' + suffix] == launches[update] == steps
    assert launches['flow_upsample_by2'] == levels - 1
    assert all(t.ms >= 0 for t in times.values())
    lk_times = flow_speed.kernel_times(DEVICE, 'lk', (width, height), 1, formulation,
                                       {'pyramid_levels': 3})
    assert lk_times['lk_level' + suffix].launches == 3
    bm = flow_speed.kernel_times(DEVICE, 'bm', (width, height), 1, formulation)
    assert bm['bm_search' + suffix].launches == 1


@pytest.mark.parametrize('method, params, depth', [
    ('dis', {}, 5),  # 640x480, patch 8: coarsest level 4 (OpenCV's rule), of 7 the frame has
    ('dis', {'dis_patch_size': 16}, 4),
    ('lk', {'pyramid_levels': 3}, 3),
    ('hs', {'pyramid_levels': 9}, 7),
    ('bm', {}, 1),
])
def test_the_pyramid_has_the_levels_its_method_reads(method, params, depth):
    times = flow_speed.kernel_times(DEVICE, method, (640, 480), 1, 'cpu',
                                    {'method': method, **params})
    made = ('pyr_down', 'pyr_down_rows', 'pyr_down_gradient_rows', 'pyr_down_mono8_rows')
    built = sum(times[name].launches for name in made if name in times)
    assert built == depth - 1
    assert len(level_shapes(480, 640)) == 7


@pytest.mark.parametrize('formulation', ['cpu', 'gpu'])
@pytest.mark.parametrize('method, params, copied', [
    ('dis', {}, False),  # finest level 1: level 1 made from the frame's bytes
    ('dis', {'dis_finest_level': 0}, True),
    ('lk', {}, True),
])
def test_level_0_is_copied_only_for_a_method_that_reads_it(method, params, copied, formulation):
    """The mono8 frames of the benchmark: level 0 decoded into the pyramid, or never decoded."""
    times = flow_speed.kernel_times(DEVICE, method, (97, 65), 1, formulation,
                                    {'method': method, **params})
    launches = {name: time.launches for name, time in times.items()}
    assert launches.get('decode_mono8', 0) == copied
    # with level 2 and level 1's gradient in the launch on GPUs (pyr_down2_mono8_gradient)
    from_bytes = ('pyr_down_mono8', 'pyr_down2_mono8_gradient')
    assert sum(launches.get(name, 0) for name in from_bytes) == (not copied)
    assert '[pyramid]' not in times


@pytest.mark.parametrize('preset, fused', [('ultrafast', 2), ('medium', 3)])
def test_a_gpu_dis_frame_fuses_its_launches(preset, fused):
    """
    Levels 2-4 (1-4) read: each gradient comes with the next level, the coarsest's with itself.

    A level's two search passes are one launch where the device allows its work-group; so are
    a refined level's densification, terms and fixed-point iterations. Unrefined levels are then
    never densified but at the finest, straight to full resolution.
    """
    times = flow_speed.kernel_times(DEVICE, 'dis', (640, 480), 1, 'gpu', DIS_PRESETS[preset])
    launches = {name: time.launches for name, time in times.items()}
    # level 2 from the frame's bytes, with level 1 and its gradient where read (medium)
    assert launches.get('pyr_down2_mono8_gradient', 0) == fused - 2
    assert launches.get('pyr_down2_mono8', 0) == 3 - fused
    assert launches['pyr_down_gradient'] == 1  # level 3, level 2's gradient
    assert launches['pyr_down_gradients'] == 1  # and the coarsest level's own gradient
    assert {'pyr_down', 'pyr_down_mono8', 'gradient'}.isdisjoint(launches)
    if DIS_PRESETS[preset]['dis_refine_iterations']:
        assert times['dis_vr_solve_level'].launches == fused + 1  # one a level
        assert 'dis_densify' not in times and 'dis_vr_terms' not in times
    assert 'dis_vr_solve_rows' not in times
    runtime = ClRuntime(DEVICE)
    group = dis.solve_group(runtime.limits, 'gpu')
    both = dis.program(runtime, 8, group).kernel('dis_search_both')
    if not dis.both_fit(runtime.limits, both, 8):
        assert times['dis_search_group'].launches == 2 * (fused + 1)
        return
    assert 'dis_search_group' not in times
    if DIS_PRESETS[preset]['dis_refine_iterations']:
        assert times['dis_search_both'].launches == fused + 1
        return
    # unrefined: the levels pass on patch flows, the finest is densified to full resolution
    assert launches['dis_search_both'] == 1 and launches['dis_search_both_patches'] == fused
    assert launches['dis_densify_upsample_by4'] == 1
    assert 'dis_densify' not in times and 'flow_upsample_by4' not in times


def test_a_gpu_change_to_a_preset_reading_level_1_restarts_the_stream_for_one_frame(runtime):
    """Ultrafast's frames on GPUs keep no level 1 (pyr_down2_mono8); medium reads it."""
    rng = np.random.default_rng(8)
    base = cv2.GaussianBlur(rng.integers(0, 256, (170, 210)).astype(np.float32), (5, 5), 1.5)
    a, b, c, d = (gray_to_raw(np.clip(base[k:k + 160, k:k + 200], 0, 255).astype(np.uint8))
                  for k in range(4))
    switching = FlowEstimator(runtime, DIS_PRESETS['ultrafast'], 'gpu')
    assert switching.push(a) is None and switching.push(b) is not None
    switching.configure(DIS_PRESETS['medium'])
    assert switching.push(c) is None
    medium = FlowEstimator(runtime, DIS_PRESETS['medium'], 'gpu')
    medium.push(c)
    np.testing.assert_array_equal(switching.push(d), medium.push(d))


def test_a_change_to_a_method_reading_level_0_restarts_the_stream_for_one_frame(runtime):
    rng = np.random.default_rng(7)
    base = cv2.GaussianBlur(rng.integers(0, 256, (90, 110)).astype(np.float32), (5, 5), 1.5)
    frames = [gray_to_raw(np.clip(base[k:k + 71, k:k + 93], 0, 255).astype(np.uint8))
              for k in range(5)]
    switching = FlowEstimator(runtime, {'method': 'dis'})
    assert switching.push(frames[0]) is None and switching.push(frames[1]) is not None
    switching.configure({'method': 'lk'})  # the previous frame kept no level 0
    assert switching.push(frames[2]) is None
    lk_only = FlowEstimator(runtime, {'method': 'lk'})
    lk_only.push(frames[2])
    np.testing.assert_array_equal(switching.push(frames[3]), lk_only.push(frames[3]))
    switching.configure({'method': 'dis'})  # dis reads what lk's frame kept: no restart
    dis_only = FlowEstimator(runtime, {'method': 'dis'})
    dis_only.push(frames[3])
    np.testing.assert_array_equal(switching.push(frames[4]), dis_only.push(frames[4]))


def test_bench_flow_kernels_prints_a_table_per_method_and_size():
    result = cl_vision('bench', 'flow', '--kernels', 'cpu', '--sizes', '40x30', '--repeats', '1',
                       '--device', DEVICE)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert 'cpu formulation' in out and 'hs 40x30' in out and 'lk 40x30' in out
    assert 'bm 40x30' in out and 'hs_sor_cpu' in out and 'hs_update_cpu' in out
    assert 'hs_warp_cpu' in out and 'lk_level_cpu' in out
    assert 'bm_search_cpu' in out
    assert all(f'dis {preset} 40x30' in out for preset in ('ultrafast', 'fast', 'medium'))


@pytest.mark.parametrize('method', ['dis', 'hs', 'lk', 'bm'])
def test_a_warmed_estimator_starts_a_new_stream_with_the_same_flows(runtime, method):
    """warm() leaves no previous frame and nothing of its frames in the flows after it."""
    rng = np.random.default_rng(5)
    base = cv2.GaussianBlur(rng.integers(0, 256, (70, 90)).astype(np.float32), (5, 5), 1.5)
    frames = [np.clip(base[k:k + 61, k:k + 77], 0, 255).astype(np.uint8) for k in range(3)]
    fresh, warmed = FlowEstimator(runtime, {'method': method}), \
        FlowEstimator(runtime, {'method': method})
    warmed.warm(warmed.images.decode(gray_to_raw(np.full((61, 77), 99, np.uint8))))
    assert not warmed.streaming
    flows = [[estimator.push(gray_to_raw(frame)) for frame in frames]
             for estimator in (fresh, warmed)]
    assert flows[1][0] is None
    for expected, got in zip(flows[0][1:], flows[1][1:]):
        np.testing.assert_array_equal(got, expected)
