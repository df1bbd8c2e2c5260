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
FlowEstimator: the public entry point of the optical-flow algorithm layer (no ROS).

Streaming use (flow_node): ``push_gray(gray)`` per decoded frame returns the device flow from the
previous frame to this one (None for the first frame, or after a size change or ``reset()``),
``start_download`` enqueues its read into a host array behind it (``download`` waits for it);
``push(raw)`` does all three for a message. Each frame is pyramided once; the two frames'
pyramids live on the device and swap roles.
One-shot use (CLI, tests): ``estimate(gray0, gray1)``. ``configure(params)`` validates changed
parameters against FLOW_SCHEMA and applies them to the next frame. The estimator owns its device
buffers (``buffers``, and ``images`` for the uploads): two estimators on one runtime never share
one; the programs of every method are built by the constructor. ``method`` is the method that
runs: the ``method`` parameter, or for ``auto`` the device's choice (``resolve_method``).
Kernels written twice (for GPUs and for CPUs) run in the device's formulation
(``DeviceLimits.formulation``) unless the constructor is given another.
"""
from __future__ import annotations

from typing import Mapping, Protocol

from cl_vision_nodes.errors import ImageFormatError
from cl_vision_nodes.flow.block_matching import BlockMatcher
from cl_vision_nodes.flow.dense_inverse_search import DenseInverseSearch
from cl_vision_nodes.flow.horn_schunck import HornSchunck
from cl_vision_nodes.flow.lucas_kanade import LucasKanade
from cl_vision_nodes.flow.pyramid import DevicePyramid, level_shapes, Shape
from cl_vision_nodes.flow.schema import FLOW_SCHEMA, FlowSettings, resolve_method
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import gray_to_raw, RawImage
from cl_vision_nodes.opencl.runtime import ClRuntime, PendingRead
from cl_vision_nodes.params import Value
import numpy as np
import pyopencl as cl


class FlowMethod(Protocol):
    """What lk, hs, bm and dis have in common: level-0 flow between two device pyramids."""

    reads_gradients: bool
    """Whether ``run`` reads the pyramid's gradients of the levels it reads."""

    def configure(self, settings: FlowSettings) -> None:
        """Build the programs ``settings`` need (ParameterError if the device cannot run them)."""

    def run(self, prev: DevicePyramid, cur: DevicePyramid, settings: FlowSettings) -> cl.Buffer:
        """Level-0 flow into one of the estimator's flow buffers."""

    def levels(self, shapes: list[Shape], settings: FlowSettings) -> range:
        """Pyramid levels ``run`` reads of a frame whose levels could be ``shapes``."""


class FlowEstimator:
    """Dense optical flow between consecutive frames with the method of the current settings."""

    def __init__(self, runtime: ClRuntime, params: Mapping[str, Value] | None = None,
                 formulation: str | None = None):
        """
        Validate ``params`` and build every flow program for them.

        ParameterError for a bad value, KernelBuildError for a program that does not build: a node
        compiles while it starts, not on its first frame. ``formulation`` ('gpu' or 'cpu') chooses
        how kernels written twice run; by default the device's.
        """
        self.runtime = runtime
        self.formulation = formulation or runtime.limits.formulation
        self.values: dict[str, Value] = FLOW_SCHEMA.validate(FLOW_SCHEMA.defaults(),
                                                             params or {}, allow_read_only=True)
        self.settings = FlowSettings.from_values(self.values)
        self.method = resolve_method(self.settings.method, runtime.limits.is_gpu)
        self.buffers = runtime.buffers()
        self.images = DeviceImages(runtime)
        self._pyramids = [DevicePyramid(runtime, self.images, self.buffers, slot,
                                        self.formulation) for slot in (0, 1)]
        self._methods: dict[str, FlowMethod] = {
            'lk': LucasKanade(runtime, self.buffers, self.settings, self.formulation),
            'hs': HornSchunck(runtime, self.buffers, self.formulation),
            'bm': BlockMatcher(runtime, self.buffers, self.settings, self.formulation),
            'dis': DenseInverseSearch(runtime, self.buffers, self.settings, self.formulation)}
        self._current = 0
        self._has_previous = False

    def configure(self, params: Mapping[str, Value]) -> None:
        """
        Apply changed parameters from the next frame on; ParameterError leaves all unchanged.

        The programs a changed build define needs are built now (a size seen before is found in the
        runtime's cache).
        """
        values = FLOW_SCHEMA.validate(self.values, params, allow_read_only=True)
        settings = FlowSettings.from_values(values)
        for method in self._methods.values():  # lk first: it alone may reject a value
            method.configure(settings)
        self.values, self.settings = values, settings
        self.method = resolve_method(settings.method, self.runtime.limits.is_gpu)

    def reset(self) -> None:
        """Forget the previous frame: the next ``push`` starts a new stream."""
        self._has_previous = False

    @property
    def streaming(self) -> bool:
        """Whether a previous frame is held (the next push gives a flow)."""
        return self._has_previous

    def warm(self, gray: DeviceGray) -> cl.Buffer:
        """
        Run the current method through every buffer it alternates between, then ``reset``.

        Three pushes of ``gray``: both pyramids and both flow buffers written, the method's launch
        plan built, the second as a camera of another encoding than mono8 sends it (decoded, so
        a pyramid's level 1 is made from floats, not bytes). On a CPU device the first writes of
        a buffer are page faults: an estimator's first two flows took twice the steady frame
        after its kernels were built elsewhere, and PoCL compiles a kernel at its first run.
        Returns the last flow (valid until the next push).
        """
        self.push_gray(gray)
        floats = DeviceGray(self.images.floats(gray), gray.height, gray.width)
        self.download(self.push_gray(floats))
        flow = self.push_gray(gray)
        self.download(flow)
        self.reset()
        return flow

    def push_gray(self, gray: DeviceGray) -> cl.Buffer | None:
        """
        Add a decoded frame; return the device flow from the previous frame, or None.

        The flow is HxW float2 (u, v), valid until the next push. None for the first frame of a
        stream (or after a size change, ``reset()``, or a change to a method that reads level 0
        when the previous frame's method did not). ``gray`` is read into this frame's pyramid
        now, so the caller may decode the next frame into its buffer at once.
        """
        self.buffers.age_views()  # the download before the last, before kernels write its buffer
        previous = self._pyramids[self._current]
        current = self._pyramids[1 - self._current]
        method = self._methods[self.method]
        levels = method.levels(level_shapes(gray.height, gray.width), self.settings)
        gradients = levels if method.reads_gradients else range(0)
        current.build(gray, levels.stop, first=levels.start, gradients=gradients)
        self._current = 1 - self._current
        if self._has_previous and previous.shapes[0] == current.shapes[0]:
            previous.extend(levels.stop, gradients)  # after a change of method or levels
            if previous.has(levels.start):  # not so where its method did not keep level 0
                return method.run(previous, current, self.settings)
        self._has_previous = True
        return None

    def start_download(self, flow: cl.Buffer) -> PendingRead:
        """
        Enqueue the read of a flow of the last frame into a host array (mapped or pinned).

        HxWx2 float32 once read, valid until the push after next: consecutive frames read into
        two pinned arrays in turn, or map flow buffers of their own that stay mapped until then
        (``Buffers.age_views``), so the previous frame's array, which a node may still be
        serializing, is neither overwritten nor unmapped by this one (``ClRuntime.start_read``).
        """
        height, width = self._pyramids[self._current].shapes[0]
        return self.runtime.start_read(self.buffers, f'flow_host_{self._current}', flow,
                                       (height, width, 2), np.dtype(np.float32), 'download')

    def download(self, flow: cl.Buffer) -> np.ndarray:
        """Return a flow of the last frame on the host (``start_download``, waited for)."""
        return self.start_download(flow).wait()

    def push(self, raw: RawImage, copy: bool = True) -> np.ndarray | None:
        """
        Add a message frame; return the HxWx2 float32 flow (u, v) from the previous frame.

        None as ``push_gray``. With ``copy=False`` the result is the host array of
        ``download``, valid until the next push.
        """
        flow = self.push_gray(self.images.decode(raw))
        if flow is None:
            return None
        host = self.download(flow)
        return host.copy() if copy else host

    def estimate(self, gray0: np.ndarray, gray1: np.ndarray) -> np.ndarray:
        """
        Return the flow from ``gray0`` to ``gray1`` (HxW, uint8 or float on 0..255).

        Restarts the stream.
        """
        if gray0.shape != gray1.shape:
            raise ImageFormatError(f'frames differ in size: {gray0.shape} vs {gray1.shape}')
        self.reset()
        self.push(gray_to_raw(gray0))
        flow = self.push(gray_to_raw(gray1))
        assert flow is not None
        return flow
