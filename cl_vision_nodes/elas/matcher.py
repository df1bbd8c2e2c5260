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
ElasMatcher: libelas' whole pipeline on an OpenCL device, frame after frame.

One matching path, ``match``: a gray pair on the device (decoded, or rectified, by the caller)
goes into the plan's input buffers, the pre-bound launches of every stage are enqueued, and the
left map stays on the device (``last_output``) for later stages (depth, points, the
DisparityImage). The nodes, the pipeline and ``cl-vision bench elas`` call it; ``compute`` and
``compute_both`` are its host adapters (decode both images straight into the inputs, match,
download). No buffer is allocated while the image size and the parameters stay the same.

Output convention: float32 disparity in pixels of the left image (``x_R = x_L - d``), with every
invalid pixel (libelas' -1 "no match" and -10 "rejected or not covered") set to
``INVALID_DISPARITY`` = -1.0. With ``subsampling`` the map is (H // 2) x (W // 2) and holds the
full-resolution disparities of the pixels (2i, 2j), as libelas.

The reference is libelas as pyelas 1.0.1 ships it (with the demotion of the best support match
into second place and the 2014 top/bottom gap extrapolation). Differences, whose effect
test/test_elas_accuracy.py measures (below 0.2 percentage points on every measure there):
- Delaunay ties (co-circular lattice points) are broken differently (triangulation.py), and
  pixels on shared triangle edges take the triangle with the larger table index;
- adaptive mean: where libelas reads its uninitialised temporary buffer (border rows and
  columns that its horizontal pass skips), the unfiltered value is used;
- descriptors outside the image interior are zero (libelas' uninitialised buffer holds zeros on
  its first call and whatever the allocator returns later).
Everything else follows libelas' arithmetic, including its quirks (see reference.py), in
single precision only (no device needs fp64): where libelas decides in double (Delaunay, plane
solve) the kernels compute exactly in 64-bit integers and round quotients correctly. The result
does not depend on the device: PoCL and an NVIDIA H200 give bit-identical maps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from cl_vision_nodes.elas.descriptor import DescriptorStage
from cl_vision_nodes.elas.device import build_programs, Geometry, LocalSizes, StageDevice, Step
from cl_vision_nodes.elas.grid import GridStage
from cl_vision_nodes.elas.matching import MatchingStage
from cl_vision_nodes.elas.planes import PlaneStage
from cl_vision_nodes.elas.postprocess import PostProcessStage
from cl_vision_nodes.elas.schema import ELAS_SCHEMA, ElasSettings
from cl_vision_nodes.elas.support import SupportStage
from cl_vision_nodes.elas.triangulation import TriangulationStage
from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import array_to_raw, RawImage, validate
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import Value
import numpy as np
import pyopencl as cl

INVALID_DISPARITY = -1.0
MIN_SIZE = 16  # libelas' borders (5 px for support points, descriptor rows 2..H-3) need room
MAX_SIZE = 28_000  # the exact Delaunay predicates in 64-bit integers (triangulation.cl) need
# view coordinates, widened by disp_max on both sides, to span at most 29,600 px
GRAY_ROLES = ('gray_left', 'gray_right')  # the DeviceImages buffers the descriptor stage reads


def check_size(width: int, height: int) -> None:
    """Raise ImageFormatError for an image size ELAS cannot match."""
    if min(width, height) < MIN_SIZE:
        raise ImageFormatError(
            f'{width}x{height} is too small for ELAS (at least {MIN_SIZE}x{MIN_SIZE})')
    if max(width, height) > MAX_SIZE:
        raise ImageFormatError(
            f'{width}x{height} is too large for ELAS (at most {MAX_SIZE} px a side)')


@dataclass(frozen=True)
class ViewStages:
    """The per-view stages after the triangulation, in libelas' order."""

    planes: PlaneStage
    grid: GridStage
    matching: MatchingStage


@dataclass
class Plan:
    """The stages (buffers and bound launches) of one image size and one set of parameters."""

    geometry: Geometry
    settings: ElasSettings
    descriptor: DescriptorStage
    support: SupportStage
    delaunay: TriangulationStage  # both views
    views: tuple[ViewStages, ViewStages]  # left, right
    post: PostProcessStage
    launches: list[Step]
    inputs: tuple[cl.Buffer, cl.Buffer]  # the gray pair the descriptor stage reads

    @classmethod
    def build(cls, dev: StageDevice, geo: Geometry, s: ElasSettings,
              gray: tuple[cl.Buffer, cl.Buffer]) -> Plan:
        descriptor = DescriptorStage(dev, geo, s, gray)
        support = SupportStage(dev, geo, s, descriptor.desc)
        tri = TriangulationStage(dev, geo, support)
        views = []
        for right_view in (False, True):
            planes = PlaneStage(dev, geo, support, tri, right_view)
            grid = GridStage(dev, geo, s, support, right_view)
            match = MatchingStage(dev, geo, s, descriptor.desc, support, tri, planes, grid,
                                  right_view)
            views.append(ViewStages(planes, grid, match))
        post = PostProcessStage(dev, geo, s, (views[0].matching.disparity,
                                              views[1].matching.disparity))
        launches = [*descriptor.launches, *support.launches, *tri.launches]
        for name in ('planes', 'grid', 'matching'):  # both views per stage
            for view in views:
                launches += getattr(view, name).launches
        launches += post.launches
        return cls(geo, s, descriptor, support, tri, (views[0], views[1]), post, launches, gray)


class ElasMatcher:
    """
    Dense stereo with libelas' algorithm; parameters from ELAS_SCHEMA (defaults: ROBOTICS).

    Its programs are built by the constructor (KernelBuildError there, never per frame); it
    owns its device buffers and keeps its bound kernels between frames. Not thread-safe:
    several matchers may share a runtime from one thread; concurrent threads need one runtime
    each.
    """

    def __init__(self, runtime: ClRuntime, params: Mapping[str, Value] | None = None):
        self.runtime = runtime
        self.images = DeviceImages(runtime)
        self.device = StageDevice(runtime, runtime.buffers(), build_programs(runtime),
                                  LocalSizes.for_device(runtime.limits))
        self.values = ELAS_SCHEMA.validate(ELAS_SCHEMA.defaults(), params or {},
                                           allow_read_only=True)
        self.settings = ElasSettings.from_values(self.values)
        self._plan: Plan | None = None
        self._last: Plan | None = None  # the plan of the last compute

    def configure(self, params: Mapping[str, Value]) -> None:
        """Validate and apply parameter changes (any subset); they take effect next frame."""
        self.values = ELAS_SCHEMA.validate(self.values, params, allow_read_only=True)
        self.settings = ElasSettings.from_values(self.values)

    def output_shape(self, width: int, height: int) -> tuple[int, int]:
        """(rows, columns) of the disparity map of a width x height pair."""
        geo = Geometry.of(width, height, self.settings)
        return geo.out_height, geo.out_width

    def compute(self, left: RawImage, right: RawImage) -> np.ndarray:
        """Left disparity map (float32, invalid = INVALID_DISPARITY) of a rectified pair."""
        return self._download(self.match(*self._decode(left, right)))

    def compute_both(self, left: RawImage, right: RawImage) -> tuple[np.ndarray, np.ndarray]:
        """
        Compute the left and right maps.

        The right one is post-processed only without postprocess_only_left (libelas' D2, ``x_L =
        x_R + d``).
        """
        left_map = self.match(*self._decode(left, right))
        post = self._last.post
        for launch in post.right_output:
            launch()
        return self._download(left_map), self._download(post.output[1])

    def match(self, left: DeviceGray, right: DeviceGray) -> cl.Buffer:
        """
        Match a gray pair on the device; return the left map's buffer (``last_output``).

        The pair is copied (a mono8 frame decoded) into the plan's inputs unless it is there
        already, so its buffers may take the next frame at once.
        """
        plan = self._pair_plan((left.width, left.height), (right.width, right.height))
        for gray, target in zip((left, right), plan.inputs):
            if not gray.held_in(target):  # a mono8 frame not yet decoded: decoded into target
                self.images.copy(gray, target, 'upload')
        return self._run(plan).post.output[0]

    @property
    def last_output(self) -> cl.Buffer:
        """
        Return the device buffer of the left map of the last compute.

        It is float32, ``output_shape``, invalid = INVALID_DISPARITY, and overwritten by the next
        compute.
        """
        if self._last is None:
            raise RuntimeError('no disparity map yet: call a compute method first')
        return self._last.post.output[0]

    def compute_gray(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """compute() for host arrays: HxW uint8 gray images (mono8)."""
        return self.compute(array_to_raw(np.ascontiguousarray(left), 'mono8'),
                            array_to_raw(np.ascontiguousarray(right), 'mono8'))

    def plan_for(self, width: int, height: int) -> Plan:
        """
        Return the stages for this image size and the current parameters (built when they change).

        The tests use it to reach every stage's buffers.
        """
        plan = self._plan
        if plan is None or plan.settings != self.settings \
                or (plan.geometry.width, plan.geometry.height) != (width, height):
            geo = Geometry.of(width, height, self.settings)
            # the buffers upload_gray(raw, role) fills: the same while the size is
            gray = tuple(self.images.buffers.get(role, 4 * geo.pixels) for role in GRAY_ROLES)
            plan = self._plan = Plan.build(self.device, geo, self.settings, gray)
        return plan

    def _pair_plan(self, left: tuple[int, int], right: tuple[int, int]) -> Plan:
        """Return the plan of a pair of (width, height) sizes; ImageFormatError unless one size."""
        if left != right:
            raise ImageFormatError(f'left image is {left[0]}x{left[1]}, right image '
                                   f'{right[0]}x{right[1]}: a rectified pair has one size')
        check_size(*left)
        return self.plan_for(*left)

    def _decode(self, left: RawImage, right: RawImage) -> tuple[DeviceGray, DeviceGray]:
        """Upload and decode a host pair into the plan's input buffers (checked first)."""
        validate(left)
        validate(right)
        self._pair_plan((left.width, left.height), (right.width, right.height))
        return (self.images.decode(left, GRAY_ROLES[0]),
                self.images.decode(right, GRAY_ROLES[1]))

    def _run(self, plan: Plan) -> Plan:
        """Enqueue every stage up to the left output on the plan's input pair."""
        for launch in plan.launches:
            launch()
        self._last = plan
        return plan

    def _download(self, buffer: cl.Buffer) -> np.ndarray:
        shape = (self._last.geometry.out_height, self._last.geometry.out_width)
        return self.images.download(buffer, shape, np.dtype(np.float32))
