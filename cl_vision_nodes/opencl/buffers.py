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
Device buffers owned by one object, keyed by role and reused while the size stays the same.

Each estimator (and each image decoder) has its own ``Buffers``: two objects on one runtime
never see each other's buffers, and the per-frame path allocates nothing.
"""
from __future__ import annotations

import pyopencl as cl


class Buffers:
    """The device buffers of one owner."""

    def __init__(self, context: cl.Context):
        self.context = context
        self._buffers: dict[str, cl.Buffer] = {}

    def get(self, role: str, nbytes: int, flags: int = cl.mem_flags.READ_WRITE) -> cl.Buffer:
        """Return the buffer of ``role``, reallocated only when its byte size (or flags) change."""
        nbytes = max(int(nbytes), 1)
        found = self._buffers.get(role)
        if found is None or found.size != nbytes or found.flags != flags:
            found = cl.Buffer(self.context, flags, nbytes)
            self._buffers[role] = found
        return found

    def handles(self) -> dict[str, cl.Buffer]:
        """Return the buffers by role now (a copy: tests compare it with a later one)."""
        return dict(self._buffers)

    def __len__(self) -> int:
        return len(self._buffers)

    def allocated_bytes(self) -> int:
        return sum(buf.size for buf in self._buffers.values())
