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
ELAS kernels (kernels/elas/*.cl) stage by stage against their NumPy references.

A synthetic pair of odd size (never a multiple of a work-group) runs through the whole device
pipeline once per parameter set; each stage's output is then compared with the reference
applied to that stage's actual device inputs, so a failure names the stage. Integer stages
(descriptor, support matches, point list, grid, scan conversion, matching, L/R check, segments,
gap interpolation, median) must match exactly; the float stages follow libelas' float32
operation order and match exactly too (adaptive mean), except the disparity planes, which may
differ from the reference's Gauss elimination in double rounded to float by one float ulp
(asserted to 1e-6 relative; the planes are checked exactly against rational arithmetic on
crafted triangles instead). The Delaunay triangulation is checked for what defines one: every
point used, no point strictly inside any circumcircle, triangles tiling the convex hull.

The kernels use no double precision (every build makes ``double`` a compile error): the exact
quotients that replace it (fdiv in common.cl, long_quotient in planes.cl) are tested here
against exact rational arithmetic.
"""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas import ELAS_SCHEMA, ElasMatcher, ElasSettings, MIDDLEBURY
from cl_vision_nodes.elas import ROBOTICS
from cl_vision_nodes.elas.device import DEFINES, GAP_GROUP, LocalSizes, MAX_OWNED, program_files
from cl_vision_nodes.elas.support import INCON_ROUNDS
from cl_vision_nodes.errors import ImageFormatError, ParameterError
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.programs import build_options, kernel_source, NO_FP64_PRELUDE
import cv2
from deviceutil import download, write
import numpy as np
from oracles import elas as ref
import pyopencl as cl
import pytest
from scipy.spatial import ConvexHull, Delaunay

pytestmark = pytest.mark.kernels

HEIGHT, WIDTH = 93, 157
PARAMS = {
    'robotics': {**ROBOTICS, 'disp_max': 40},
    'middlebury': {**MIDDLEBURY, 'disp_max': 40},
    'subsampling': {**ROBOTICS, 'disp_max': 40, 'subsampling': True, 'candidate_stepsize': 3,
                    'speckle_size': 30},
}


class Frame:
    """One pair through the whole pipeline, with accessors for every stage's buffers."""

    def __init__(self, runtime, params: dict, seed: int = 3):
        self.runtime = runtime
        sample = stereo_pair(HEIGHT, WIDTH, seed=seed, max_disparity=22.0)
        self.left, self.right = sample.left, sample.right
        self.matcher = ElasMatcher(runtime, params)
        self.s = self.matcher.settings
        self.final = self.matcher.compute_both(array_to_raw(self.left, 'mono8'),
                                               array_to_raw(self.right, 'mono8'))
        self.plan = self.matcher.plan_for(WIDTH, HEIGHT)
        self.geo = self.plan.geometry

    def get(self, buf: cl.Buffer, dtype, shape) -> np.ndarray:
        return download(self.runtime, buf, shape, dtype)

    def desc(self, k: int) -> np.ndarray:
        return self.get(self.plan.descriptor.desc[k], np.uint8, (HEIGHT, WIDTH, 16))

    def lattice(self, buf: cl.Buffer) -> np.ndarray:
        return self.get(buf, np.int32, (self.geo.lattice_h, self.geo.lattice_w))

    def points(self) -> np.ndarray:
        n = int(self.get(self.plan.support.meta, np.int32, 2)[0])
        return self.get(self.plan.support.points, np.int32, (self.geo.max_points, 4))[:n, :3]

    def triangles(self, view: int) -> tuple[np.ndarray, np.ndarray]:
        """(triangles as point indices, their table keys) of one view."""
        stage = self.plan.delaunay
        tri = self.get(stage.tri[view], np.int32, (self.geo.max_points, MAX_OWNED, 4))
        count = self.get(stage.tri_count[view], np.int32, self.geo.max_points)
        slot, j = np.nonzero(np.arange(MAX_OWNED)[None, :] < count[:, None])
        return tri[slot, j, :3], (slot * MAX_OWNED + j).astype(np.int32)

    def out_map(self, buf: cl.Buffer, dtype=np.float32) -> np.ndarray:
        return self.get(buf, dtype, (self.geo.out_height, self.geo.out_width))


@pytest.fixture(scope='module', params=sorted(PARAMS))
def frame(runtime, request) -> Frame:
    return Frame(runtime, PARAMS[request.param])


# --- descriptor, support matches ----------------------------------------------------------------


def test_descriptor(frame):
    for k, img in enumerate((frame.left, frame.right)):
        np.testing.assert_array_equal(frame.desc(k), ref.descriptor(img, frame.s.subsampling))


def test_support_candidates(frame):
    want = ref.support_candidates(frame.desc(0), frame.desc(1), frame.s)
    got = frame.lattice(frame.plan.support.candidates)
    np.testing.assert_array_equal(got, want)
    assert (got[1:, 1:] >= 0).sum() > 30, 'too few support points for a meaningful test'


def test_support_filters(frame):
    raw = frame.lattice(frame.plan.support.candidates)
    want = ref.remove_redundant(ref.remove_redundant(ref.remove_inconsistent(raw, frame.s),
                                                     True), False)
    np.testing.assert_array_equal(frame.lattice(frame.plan.support.dcan), want)


def test_support_points(frame):
    want = ref.support_points(frame.lattice(frame.plan.support.dcan), frame.geo.step, WIDTH,
                              HEIGHT, frame.s.add_corners)
    np.testing.assert_array_equal(frame.points(), want)


@pytest.mark.parametrize('chain', [4, INCON_ROUNDS + 5])
def test_inconsistent_removal_cascades(runtime, chain):
    """
    Removals that cascade through the lattice equal libelas.

    Short chains end in the device rounds, a chain longer than the rounds falls back to the
    sequential loop; both equal libelas.
    """
    params = {**ROBOTICS, 'incon_window_size': 1, 'incon_threshold': 0, 'incon_min_support': 3}
    matcher = ElasMatcher(runtime, params)
    plan = matcher.plan_for(151, 97)
    rng = np.random.default_rng(chain)
    lattice = np.where(rng.random((plan.geometry.lattice_h, plan.geometry.lattice_w)) < 0.5,
                       rng.integers(0, 3, (plan.geometry.lattice_h, plan.geometry.lattice_w)),
                       -1).astype(np.int32)
    lattice[2:2 + chain, 7] = 9  # a column that libelas removes point after point
    lattice[1:3 + chain, 6] = -1
    lattice[1:3 + chain, 8] = -1
    write(runtime, plan.support.candidates, lattice)
    for launch in plan.support.filter_launches:
        launch()
    got = download(runtime, plan.support.dcan, lattice.shape, np.int32)
    want = ref.remove_redundant(ref.remove_redundant(
        ref.remove_inconsistent(lattice, matcher.settings), True), False)
    np.testing.assert_array_equal(got, want)
    assert (want[2:2 + chain, 7] == -1).all()


# --- delaunay ------------------------------------------------------------------------------------


def unique_points(xy: np.ndarray) -> np.ndarray:
    """Indicate of the first occurrence of every position (duplicates are not triangulated)."""
    _, first = np.unique(xy, axis=0, return_index=True)
    return np.sort(first)


def incircle(a, b, c, d) -> np.ndarray:
    """Exact in-circle determinant (int64); > 0: d inside the circle of a, b, c (CCW)."""
    ad, bd, cd = a - d, b - d, c - d
    al, bl, cl_ = (ad ** 2).sum(-1), (bd ** 2).sum(-1), (cd ** 2).sum(-1)
    return (ad[..., 0] * (bd[..., 1] * cl_ - bl * cd[..., 1])
            - ad[..., 1] * (bd[..., 0] * cl_ - bl * cd[..., 0])
            + al * (bd[..., 0] * cd[..., 1] - bd[..., 1] * cd[..., 0]))


def on_hull_boundary(xy: np.ndarray) -> int:
    hull = ConvexHull(xy)
    count = 0
    for p in xy:
        for i, j in hull.simplices:
            a, b = xy[i], xy[j]
            cross = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
            if cross == 0 and min(a[0], b[0]) <= p[0] <= max(a[0], b[0]) \
                    and min(a[1], b[1]) <= p[1] <= max(a[1], b[1]):
                count += 1
                break
    return count


def assert_delaunay(xy: np.ndarray, triangles: np.ndarray) -> None:
    """xy: (n, 2) int64 unique points; triangles: (t, 3) indices into xy."""
    a, b, c = (xy[triangles[:, k]] for k in range(3))
    twice_area = ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1])
                  - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))
    assert (twice_area > 0).all(), 'triangles must be counter-clockwise and not degenerate'
    assert len({tuple(sorted(t)) for t in triangles.tolist()}) == len(triangles), 'duplicates'
    assert set(triangles.ravel().tolist()) == set(range(len(xy))), 'a point is not used'
    inside = incircle(a[:, None], b[:, None], c[:, None], xy[None, :, :]) > 0
    assert not inside.any(), 'a point lies strictly inside a circumcircle'
    hull_twice_area = round(2 * ConvexHull(xy).volume)
    assert int(twice_area.sum()) == hull_twice_area, 'triangles do not tile the hull'
    assert len(triangles) == 2 * len(xy) - 2 - on_hull_boundary(xy)


def test_delaunay(frame):
    points = frame.points()
    for view in (0, 1):
        tri, _ = frame.triangles(view)
        xy, corners = in_unique_points(points, tri, view)
        assert (corners >= 0).all(), 'a dropped duplicate is a triangle corner'
        assert_delaunay(xy, corners)


def device_triangulation(runtime, params: dict, width: int, height: int,
                         lattice: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Support points of ``lattice`` and each view's triangles (indices into the points)."""
    matcher = ElasMatcher(runtime, params)
    plan = matcher.plan_for(width, height)
    geo = plan.geometry
    write(runtime, plan.support.dcan, lattice)
    for launch in [*plan.support.point_launches, *plan.delaunay.launches]:
        launch()
    n = int(download(runtime, plan.support.meta, 2, np.int32)[0])
    points = download(runtime, plan.support.points, (geo.max_points, 4), np.int32)[:n, :3]
    np.testing.assert_array_equal(points, ref.support_points(
        lattice, geo.step, width, height, matcher.settings.add_corners))
    triangles = []
    for view in (0, 1):
        tri = download(runtime, plan.delaunay.tri[view], (geo.max_points, MAX_OWNED, 4), np.int32)
        count = download(runtime, plan.delaunay.tri_count[view], geo.max_points, np.int32)
        slot, j = np.nonzero(np.arange(MAX_OWNED)[None, :] < count[:, None])
        triangles.append(tri[slot, j, :3])
    return points, triangles


def in_unique_points(points: np.ndarray, tri: np.ndarray,
                     view: int) -> tuple[np.ndarray, np.ndarray]:
    xy = ref.view_coordinates(points, bool(view)).astype(np.int64)
    keep = unique_points(xy)
    index = np.full(len(xy), -1)
    index[keep] = np.arange(len(keep))
    return xy[keep], index[tri]


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_delaunay_degenerate_lattices(runtime, seed):
    """
    Random degenerate lattices get a valid Delaunay triangulation in both views.

    Co-circular squares and trapezoids, collinear rows, duplicate right-view positions, corners.
    """
    rng = np.random.default_rng(seed)
    params = {**ROBOTICS, 'add_corners': bool(seed % 2), 'candidate_stepsize': 7}
    shape = (-(-263 // 7), -(-701 // 7))
    lattice = np.where(rng.random(shape) < 0.3, rng.integers(0, 60, shape), -1).astype(np.int32)
    lattice[0, :] = lattice[:, 0] = 0
    points, triangles = device_triangulation(runtime, params, 701, 263, lattice)
    for view, tri in enumerate(triangles):
        assert_delaunay(*in_unique_points(points, tri, view))


def test_delaunay_generic_points_equal_qhull(runtime):
    """
    One point per row at random positions: the triangulation must be exactly Qhull's.

    No four points are co-circular, so the Delaunay triangulation is unique.
    """
    rng = np.random.default_rng(7)
    shape = (-(-1500 // 7), -(-1201 // 7))
    lattice = np.full(shape, -1, np.int32)
    rows = np.arange(1, shape[0])
    lattice[rows, rng.integers(5, shape[1], len(rows))] = rng.integers(0, 250, len(rows))
    points, triangles = device_triangulation(runtime, {**ROBOTICS, 'candidate_stepsize': 7},
                                             1201, 1500, lattice)
    xy, ours = in_unique_points(points, triangles[1], 1)
    theirs = Delaunay(xy.astype(float)).simplices
    ta, tb, tc = (xy[theirs[:, k]] for k in range(3))
    orient = np.sign((tb[:, 0] - ta[:, 0]) * (tc[:, 1] - ta[:, 1])
                     - (tb[:, 1] - ta[:, 1]) * (tc[:, 0] - ta[:, 0]))
    on_circle = incircle(ta[:, None], tb[:, None], tc[:, None], xy[None]) * orient[:, None] == 0
    assert on_circle.sum() == 3 * len(theirs), 'the test set must be free of ties'
    assert_delaunay(xy, ours)
    assert {tuple(sorted(t)) for t in ours.tolist()} == \
        {tuple(sorted(t)) for t in theirs.tolist()}


# --- exact quotients without double precision --------------------------------------------------

QUOTIENT_KERNELS = """
__kernel void test_round_quotient(__global const float* a, __global const float* b,
                                  const int ulps, __global float* q)
{
    const int i = get_global_id(0);
    float start = fdiv(a[i], b[i]);  // then pushed ulps floats away, up or down by i
    for (int k = 0; k < ulps; ++k)
        start = nextafter(start, (i & 1) ? INFINITY : -INFINITY);
    q[i] = ulps ? round_quotient(start, a[i], b[i]) : start;
}

__kernel void test_long_quotient(__global const long* n, __global const long* d, __global float* q)
{
    const int i = get_global_id(0);
    q[i] = long_quotient(n[i], d[i]);
}
"""


@pytest.fixture(scope='module')
def quotients(runtime) -> dict[str, cl.Kernel]:
    """
    Build the helpers of the planes program (common.cl + planes.cl) with two test kernels.

    They are built as every program is: double precision is a compile error.
    """
    source = NO_FP64_PRELUDE + ''.join(kernel_source(f) for f in program_files('planes'))
    program = cl.Program(runtime.context, source + QUOTIENT_KERNELS).build(
        options=list(build_options(DEFINES['planes'])))
    kernels = {name: cl.Kernel(program, name)
               for name in ('test_round_quotient', 'test_long_quotient')}
    kernels['test_round_quotient'].set_scalar_arg_dtypes([None, None, np.int32, None])
    return kernels


def nearest_float32(x: Fraction) -> np.float32:
    """Round x to float32, to nearest and ties to even, from exact rationals."""
    guess = np.float32(float(x))
    around = [np.nextafter(guess, np.float32(-np.inf)), guess,
              np.nextafter(guess, np.float32(np.inf))]
    return min(around, key=lambda f: (abs(Fraction(float(f)) - x),
                                      int(np.float32(f).view(np.uint32)) & 1))


def device_quotients(runtime, kernel, n: int, *arrays: np.ndarray,
                     scalars: tuple = ()) -> np.ndarray:
    out = np.empty(n, np.float32)
    bufs = buffers(runtime, *arrays)
    out_buf = cl.Buffer(runtime.context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    kernel(runtime.queue, (n,), None, *bufs, *scalars, out_buf)
    cl.enqueue_copy(runtime.queue, out, out_buf)
    return out


@pytest.mark.parametrize('ulps', [0, 1, 4])
def test_fdiv_is_correctly_rounded(runtime, quotients, ulps):
    """
    The device's fdiv and its correction give IEEE division's result over normal quotients.

    fdiv is the device's quotient corrected; the correction works from up to 4 ulp away; the result
    is compared with NumPy's division.
    """
    rng = np.random.default_rng(ulps)
    n = 100_000
    wide = (rng.standard_normal((2, n)) * 2.0 ** rng.integers(-40, 41, (2, n))).astype(np.float32)
    ints = rng.integers(-2 ** 24, 2 ** 24, (2, n)).astype(np.float32)  # grid, raster slopes
    sums = np.stack([rng.integers(0, 2 ** 12, n) / np.float32(4),  # adaptive mean
                     rng.integers(1, 17, n) * np.float32(2)]).astype(np.float32)
    a, b = (np.concatenate(parts) for parts in zip(wide, ints, sums))
    b[b == 0] = 1
    got = device_quotients(runtime, quotients['test_round_quotient'], len(a), a, b,
                           scalars=(np.int32(ulps),))
    np.testing.assert_array_equal(got, a / b)


def test_long_quotient_is_correctly_rounded(runtime, quotients):
    """Integers beyond float's 24 bits, ties included (n / d halfway between two floats)."""
    rng = np.random.default_rng(5)
    count = 20_000
    n = rng.integers(-2 ** 45, 2 ** 45, count) >> rng.integers(0, 45, count)
    d = rng.integers(1, 2 ** 37, count) >> rng.integers(0, 37, count)
    d *= rng.choice([-1, 1], count)
    ties = np.array([2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 25 + 2), 3 * 2 ** 30 + 2 ** 6], np.int64)
    n = np.concatenate([n, ties, ties * 7, [0, 1, -1, 2 ** 45 - 1]])
    d = np.concatenate([d, [2, 2, 4, 2 ** 7], [14, 14, 28, 2 ** 7 * 7], [3, 3, 3, 1]])
    d[d == 0] = 1
    got = device_quotients(runtime, quotients['test_long_quotient'], len(n), n, d)
    want = [nearest_float32(Fraction(int(x), int(y))) for x, y in zip(n, d)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def test_planes_exact_at_the_largest_images(runtime):
    """
    elas_planes is exact on crafted triangles up to the largest image ElasMatcher accepts.

    Every coefficient is the correctly rounded rational solution, the prior valid below libelas'
    double 0.7 (a slope of exactly -0.7 rounds to the float 0.7f, which passes).
    """
    from cl_vision_nodes.elas.matcher import MAX_SIZE
    rng = np.random.default_rng(9)
    count = 2_000
    corners = np.stack([rng.integers(0, MAX_SIZE, (count, 3)),
                        rng.integers(0, MAX_SIZE, (count, 3)),
                        rng.integers(0, 512, (count, 3))], axis=-1)
    corners[:20, :, 1] = corners[:20, :1, 1]  # collinear: no plane
    corners[20] = [[10, 0, 0], [0, 0, 7], [10, 10, 0]]  # d = 7 - 0.7 u
    points = np.zeros((3 * count, 4), np.int32)
    points[:, :3] = corners.reshape(-1, 3)
    tri = np.zeros((count, MAX_OWNED, 4), np.int32)
    tri[:, 0, :3] = np.arange(3 * count).reshape(count, 3)
    tri_count = np.ones(count, np.int32)
    program = runtime.program(program_files('planes'), DEFINES['planes'])
    for right_view in (0, 1):
        pts, tris, counts, out = buffers(runtime, points, tri, tri_count,
                                         np.zeros((count * MAX_OWNED, 4), np.float32))
        program.kernel('elas_planes')((count,), (pts, tris, counts, np.int32(count),
                                                 np.int32(right_view), out), 'test')
        got = download(runtime, out, (count, MAX_OWNED, 4), np.float32)[:, 0]
        solved = [[exact_plane(c, shift) for c in corners] for shift in (0, 1)]
        own, other = solved[right_view], solved[1 - right_view]
        want = np.array([(*p, 1.0 if abs(float(p[0])) < 0.7 and abs(float(q[0])) < 0.7 else 0.0)
                         for p, q in zip(own, other)], np.float32)
        np.testing.assert_array_equal(got, want)
    assert got[20, 3] == 1.0 and got[:20, :3].max() == 0


def exact_plane(corners: np.ndarray, shift: int) -> tuple[np.float32, ...]:
    """
    Return the plane (a, b, c) of d = a x + b v + c through the corners, x = u - shift * d.

    Each is rounded from the exact rational solution; zeros when the corners are collinear.
    """
    x, v, d = ([int(k) for k in corners[:, j]] for j in range(3))
    x = [xi - shift * di for xi, di in zip(x, d)]
    det = x[0] * (v[1] - v[2]) + x[1] * (v[2] - v[0]) + x[2] * (v[0] - v[1])
    if det == 0:
        return np.float32(0), np.float32(0), np.float32(0)
    na = d[0] * (v[1] - v[2]) + d[1] * (v[2] - v[0]) + d[2] * (v[0] - v[1])
    nb = x[0] * (d[1] - d[2]) + x[1] * (d[2] - d[0]) + x[2] * (d[0] - d[1])
    nc = (x[0] * (v[1] * d[2] - v[2] * d[1]) + x[1] * (v[2] * d[0] - v[0] * d[2])
          + x[2] * (v[0] * d[1] - v[1] * d[0]))
    return tuple(nearest_float32(Fraction(num, det)) for num in (na, nb, nc))


# --- planes, grid, matching -------------------------------------------------------------------


def test_planes(frame):
    points = frame.points()
    for view in (0, 1):
        tri, keys = frame.triangles(view)
        got = frame.get(frame.plan.views[view].planes.planes, np.float32,
                        (frame.geo.max_points * MAX_OWNED, 4))[keys]
        want = ref.planes(points, tri, bool(view))
        np.testing.assert_allclose(got[:, :3], want[:, :3], rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got[:, 3], want[:, 3])


def test_grid(frame):
    points = frame.points()
    for view in (0, 1):
        got = frame.get(frame.plan.views[view].grid.lists, np.int32,
                        (frame.geo.grid_cells, frame.geo.list_len))
        want = ref.grid_lists(points, bool(view), frame.s.grid_size, WIDTH, HEIGHT,
                              frame.s.disp_max)
        for cell in range(frame.geo.grid_cells):  # entries past the count are not read
            n = want[cell, 0]
            np.testing.assert_array_equal(got[cell, :n + 1], want[cell, :n + 1])


def test_scan_conversion(frame):
    points = frame.points()
    for view in (0, 1):
        tri, keys = frame.triangles(view)
        got = frame.out_map(frame.plan.views[view].matching.owner, np.int32)
        want = ref.raster(points, tri, keys, bool(view), WIDTH, HEIGHT, frame.s.subsampling)
        np.testing.assert_array_equal(got, want)
        assert (got >= 0).mean() > 0.5


def test_matching(frame):
    for view in (0, 1):
        stages = frame.plan.views[view]
        owner = frame.out_map(stages.matching.owner, np.int32)
        planes = frame.get(stages.planes.planes, np.float32,
                           (frame.geo.max_points * MAX_OWNED, 4))
        keys = np.unique(owner[owner >= 0])
        lists = frame.get(stages.grid.lists, np.int32, (frame.geo.grid_cells, frame.geo.list_len))
        ref_desc, tgt_desc = (frame.desc(1), frame.desc(0)) if view else (frame.desc(0),
                                                                          frame.desc(1))
        want = ref.match(ref_desc, tgt_desc, owner, {int(k): planes[k] for k in keys}, lists,
                         frame.s, bool(view))
        np.testing.assert_array_equal(frame.out_map(stages.matching.disparity), want)
        assert (want >= 0).mean() > 0.5


@pytest.mark.parametrize('params', sorted(PARAMS))
def test_work_group_shapes_do_not_change_results(runtime, monkeypatch, params):
    """
    The other kind of device's work-group shapes give the same maps, bit for bit.

    GPU shapes on PoCL, or the reverse, within this device's limits.
    """
    sample = stereo_pair(HEIGHT, WIDTH, seed=4, max_disparity=22.0)
    pair = [array_to_raw(img, 'mono8') for img in (sample.left, sample.right)]
    values = {**PARAMS[params], 'postprocess_only_left': False}
    own = ElasMatcher(runtime, values).compute_both(*pair)
    other = LocalSizes.for_device(replace(runtime.limits, is_gpu=not runtime.limits.is_gpu))
    monkeypatch.setattr(LocalSizes, 'for_device', classmethod(lambda cls, limits: other))
    matcher = ElasMatcher(runtime, values)
    assert matcher.device.local == other
    for got, want in zip(matcher.compute_both(*pair), own):
        np.testing.assert_array_equal(got, want)


def test_pipeline_output(frame):
    """The published maps: -1 for every invalid pixel, mostly valid on this easy scene."""
    left, right = frame.final
    assert left.shape == (frame.geo.out_height, frame.geo.out_width)
    assert set(np.unique(left[left < 0])) <= {-1.0}
    assert (left >= 0).mean() > 0.6 and (right >= 0).mean() > 0.4


# --- post-processing on crafted maps ------------------------------------------------------------


def disparity_map(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Piecewise smooth disparities with noise, speckles and invalid holes (-1 and -10)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    d = np.where(x + 0.3 * y < w / 2, 8 + 0.05 * x, 20 - 0.04 * y).astype(np.float32)
    d += rng.integers(-1, 2, d.shape).astype(np.float32) * (rng.random(d.shape) < 0.2)
    d[rng.random(d.shape) < 0.03] = 31.0
    d[rng.random(d.shape) < 0.12] = -10.0
    d[rng.random(d.shape) < 0.04] = -1.0
    d[5:9, 10:30] = -10.0
    return np.round(d * 4) / 4


POST_SIZES = [(45, 67), (33, 70)]


def run_kernel(runtime, name: str, items, args, local=None) -> None:
    """Run a post-processing kernel from the program the matcher uses (cached by value)."""
    program = runtime.program(program_files('postprocess'), DEFINES['postprocess'])
    program.kernel(name)(items, args, 'test', local)


def buffers(runtime, *arrays: np.ndarray) -> list[cl.Buffer]:
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    return [cl.Buffer(runtime.context, flags, hostbuf=np.ascontiguousarray(a)) for a in arrays]


@pytest.mark.parametrize('h,w', POST_SIZES)
@pytest.mark.parametrize('subsampling', [False, True])
def test_lr_check(runtime, h, w, subsampling):
    rng = np.random.default_rng(h)
    d1, d2 = disparity_map(rng, h, w), disparity_map(rng, h, w)
    b1, b2, o1, o2 = buffers(runtime, d1, d2, d1, d2)
    run_kernel(runtime, 'elas_lr_check', (w, h),
               (b1, b2, np.int32(w), np.int32(h), np.int32(subsampling), np.int32(2), o1, o2))
    want1, want2 = ref.lr_check(d1, d2, 2, subsampling)
    np.testing.assert_array_equal(download(runtime, o1, (h, w), np.float32), want1)
    np.testing.assert_array_equal(download(runtime, o2, (h, w), np.float32), want2)


@pytest.mark.parametrize('h,w', POST_SIZES)
@pytest.mark.parametrize('min_size,sim', [(25, 1.0), (1, 0.5), (200, 2.0)])
def test_remove_small_segments(runtime, h, w, min_size, sim):
    d = disparity_map(np.random.default_rng(w), h, w)
    (buf,) = buffers(runtime, d)
    label, size = buffers(runtime, np.zeros((h, w), np.int32), np.zeros((h, w), np.int32))
    dims = (np.int32(w), np.int32(h))
    for name, args in (('elas_segments_init', (*dims, label, size)),
                       ('elas_segments_merge', (buf, *dims, np.float32(sim), label)),
                       ('elas_segments_count', (*dims, label, size)),
                       ('elas_segments_apply', (buf, *dims, label, size, np.int32(min_size)))):
        run_kernel(runtime, name, (w, h), args, LocalSizes.for_device(runtime.limits).pixels)
    np.testing.assert_array_equal(download(runtime, buf, (h, w), np.float32),
                                  ref.remove_small_segments(d, sim, min_size))


@pytest.mark.parametrize('h,w', POST_SIZES)
@pytest.mark.parametrize('gap,extrapolate', [(3, False), (5000, True), (1, True)])
def test_gap_interpolation(runtime, h, w, gap, extrapolate):
    d = disparity_map(np.random.default_rng(gap), h, w)
    d[:, :3] = -10.0  # runs touching the first column are never filled
    src, temp, dst = buffers(runtime, d, d, d)
    dims = (np.int32(w), np.int32(h))
    run_kernel(runtime, 'elas_gap', (GAP_GROUP * h,), (src, *dims, np.int32(1), np.int32(gap),
                                                       np.int32(extrapolate), temp), (GAP_GROUP,))
    run_kernel(runtime, 'elas_gap', (GAP_GROUP * w,), (temp, *dims, np.int32(0), np.int32(gap),
                                                       np.int32(extrapolate), dst), (GAP_GROUP,))
    np.testing.assert_array_equal(download(runtime, dst, (h, w), np.float32),
                                  ref.gap_interpolation(d, gap, extrapolate))


@pytest.mark.parametrize('h,w', POST_SIZES)
@pytest.mark.parametrize('subsampling', [False, True])
def test_adaptive_mean(runtime, h, w, subsampling):
    d = disparity_map(np.random.default_rng(w + subsampling), h, w)
    src, temp, dst = buffers(runtime, d, d, d)
    dims = (np.int32(w), np.int32(h))
    local = LocalSizes.for_device(runtime.limits).pixels
    run_kernel(runtime, 'elas_adaptive_mean_h', (w, h), (src, *dims, np.int32(subsampling), temp),
               local)
    run_kernel(runtime, 'elas_adaptive_mean_v', (w, h),
               (src, temp, *dims, np.int32(subsampling), dst), local)
    np.testing.assert_array_equal(download(runtime, dst, (h, w), np.float32),
                                  ref.adaptive_mean(d, subsampling))


def test_adaptive_mean_weights():
    """Check libelas' effective weights: 4 below a difference of 2, 2 below 8, else 0."""
    centre = np.float32(10.0)
    taps = np.float32([10, 11.9, 12, 17.9, 18, 2.1, 2.0, -10])
    np.testing.assert_array_equal(ref.am_weight(taps, centre), [4, 4, 2, 2, 0, 2, 0, 0])


@pytest.mark.parametrize('h,w', POST_SIZES)
def test_median(runtime, h, w):
    d = disparity_map(np.random.default_rng(h * w), h, w)
    src, temp, dst = buffers(runtime, d, d, d)
    dims = (np.int32(w), np.int32(h))
    run_kernel(runtime, 'elas_median_h', (w, h), (src, *dims, temp))
    run_kernel(runtime, 'elas_median_v', (w, h), (src, temp, *dims, dst))
    np.testing.assert_array_equal(download(runtime, dst, (h, w), np.float32), ref.median(d))


# --- parameters and API -------------------------------------------------------------------------


def test_presets_are_valid_and_differ_as_libelas():
    for preset in (ROBOTICS, MIDDLEBURY):
        ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), preset)
    assert {k: v for k, v in ELAS_SCHEMA.defaults().items() if k in ROBOTICS} == dict(ROBOTICS)
    changed = {k for k in ROBOTICS if ROBOTICS[k] != MIDDLEBURY[k]}
    assert changed == {'support_threshold', 'add_corners', 'gamma', 'sradius', 'match_texture',
                       'ipol_gap_width', 'filter_median', 'filter_adaptive_mean',
                       'postprocess_only_left'}


def test_prior_matches_libelas_values():
    s = ElasSettings.from_values(ELAS_SCHEMA.defaults())
    assert s.prior()[:4].tolist() == [-14, -9, -2, 0] and s.plane_radius == 2
    m = ElasSettings.from_values({**ELAS_SCHEMA.defaults(), **MIDDLEBURY})
    assert m.prior()[:4].tolist() == [-9, -5, -1, 0] and m.plane_radius == 3


def test_parameter_checks():
    with pytest.raises(ParameterError, match='disp_max - disp_min'):
        ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), {'disp_min': 100, 'disp_max': 105})
    with pytest.raises(ParameterError, match='maximum'):
        ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), {'disp_max': 600})


def test_bad_pairs_are_refused(runtime):
    matcher = ElasMatcher(runtime)
    small = np.zeros((40, 50), np.uint8)
    with pytest.raises(ImageFormatError, match='one size'):
        matcher.compute_gray(small, np.zeros((40, 51), np.uint8))
    with pytest.raises(ImageFormatError, match='too small'):
        matcher.compute_gray(small[:10], small[:10])
    wide = np.zeros((16, 28_001), np.uint8)  # beyond the exact integer Delaunay predicates
    with pytest.raises(ImageFormatError, match='too large'):
        matcher.compute_gray(wide, wide)


def test_configure_applies_next_frame(runtime):
    sample = stereo_pair(HEIGHT, WIDTH, seed=5, max_disparity=20.0)
    matcher = ElasMatcher(runtime, {'disp_max': 40})
    dense = matcher.compute_gray(sample.left, sample.right)
    matcher.configure({'subsampling': True})
    half = matcher.compute_gray(sample.left, sample.right)
    assert half.shape == (HEIGHT // 2, WIDTH // 2) == matcher.output_shape(WIDTH, HEIGHT)
    matcher.configure({'subsampling': False, 'speckle_size': 10_000_000})
    assert (matcher.compute_gray(sample.left, sample.right) < 0).all()
    assert (dense >= 0).any()


def test_textureless_pair_is_all_invalid(runtime):
    flat = np.full((64, 96), 128, np.uint8)
    out = ElasMatcher(runtime).compute_gray(flat, flat)
    assert out.shape == (64, 96) and (out == -1.0).all()


def test_colour_input_equals_its_gray(runtime):
    """Any encoding goes through the device decoder: bgr8 gives the map of its OpenCV gray."""
    sample = stereo_pair(HEIGHT, WIDTH, seed=8, max_disparity=20.0)
    rng = np.random.default_rng(8)
    tint = rng.integers(0, 40, 3)
    colour = [np.clip(img[..., None] + tint - 20, 0, 255).astype(np.uint8)
              for img in (sample.left, sample.right)]
    matcher = ElasMatcher(runtime, {'disp_max': 40})
    got = matcher.compute(array_to_raw(colour[0], 'bgr8'), array_to_raw(colour[1], 'bgr8'))
    want = matcher.compute_gray(*(cv2.cvtColor(c, cv2.COLOR_BGR2GRAY) for c in colour))
    np.testing.assert_array_equal(got, want)
    assert (got >= 0).mean() > 0.5
