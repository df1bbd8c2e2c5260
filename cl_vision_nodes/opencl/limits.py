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
What a device allows, read once: work-group size, local memory, fp64, image support.

Kernels with fixed local tiles take their sizes as build defines chosen here, so the same code
runs on a GPU with 1024 work-items per group and on a small one (or PoCL with
``POCL_MAX_WORK_GROUP_SIZE=64``) with 64.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl

MIN_GROUP = 64
"""The smallest work-group limit the kernels are written for (Mali, Raspberry Pi, PoCL at 64)."""
FORMULATIONS: tuple[str, ...] = ('gpu', 'cpu')
"""Ways a kernel with two formulations is written: 'gpu' (many light work-items, local-memory
tiles shared by a group) or 'cpu' (few heavy work-items, each walking its own tile without
barriers, so PoCL runs it as plain loops)."""


@dataclass(frozen=True)
class DeviceLimits:
    """The limits of one device that shape our launches."""

    max_group: int
    max_item_sizes: tuple[int, ...]
    local_mem: int
    fp64: bool
    image_support: bool
    compute_units: int
    is_gpu: bool
    host_memory: bool
    """The device computes in the host's memory (a CPU device, an integrated GPU): a buffer
    mapped for reading is read where it lies, without a copy."""

    @classmethod
    def of(cls, device: cl.Device) -> DeviceLimits:
        return cls(max_group=int(device.max_work_group_size),
                   max_item_sizes=tuple(int(n) for n in device.max_work_item_sizes),
                   local_mem=int(device.local_mem_size),
                   fp64='cl_khr_fp64' in device.extensions,
                   image_support=bool(device.image_support),
                   compute_units=int(device.max_compute_units),
                   is_gpu=bool(device.type & cl.device_type.GPU),
                   host_memory=bool(device.host_unified_memory))

    @property
    def formulation(self) -> str:
        """
        Return the formulation of FORMULATIONS that runs best here: 'gpu' on GPUs, else 'cpu'.

        The one place the choice is made; algorithm objects take it as an argument (default this)
        so tests run both formulations on one device and compare them.
        """
        return 'gpu' if self.is_gpu else 'cpu'

    def fits(self, local: tuple[int, ...]) -> bool:
        """Whether a work-group of shape ``local`` may be launched on this device."""
        total = 1
        for size, limit in zip(local, self.max_item_sizes):
            if size > limit:
                return False
            total *= size
        return total <= self.max_group

    def group(self, preferred: int) -> int:
        """Return the largest power of two <= ``preferred`` the device allows in one dimension."""
        size = preferred
        while size > 1 and not self.fits((size,)):
            size //= 2
        return size

    def group_2d(self, preferred: tuple[int, int], min_width: int = 1) -> tuple[int, int]:
        """
        Halve ``preferred`` (x, y) until the device allows it.

        Rows first, then columns down to ``min_width``.
        """
        width, height = preferred
        while not self.fits((width, height)):
            if height > 1:
                height //= 2
            elif width > min_width:
                width //= 2
            else:
                break
        return width, height
