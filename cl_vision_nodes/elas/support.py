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
Stage "support matches" (libelas computeSupportMatches + addCornerSupportPoints).

Candidate lattice, removal of inconsistent and redundant support points, the support point list
with optional image corners, and the per-row point tables the triangulation searches.

removeInconsistentSupportPoints is sequential in libelas (in place, u-major). The device
reproduces it exactly as a monotone fixed point (kernels/elas/support.cl, elas_incon_*): round 0
on the original lattice, then INCON_ROUNDS rounds of decrements, each a cheap launch that
returns at once when nothing changed; if removals still cascade after the last round, one
work-item redoes the step sequentially. On KITTI 000001, Cones, Motorcycle and libelas' urban1
(both presets) at most three rounds after round 0 removed anything.
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import Geometry, StageDevice, Step
from cl_vision_nodes.elas.schema import ElasSettings
import numpy as np
import pyopencl as cl

MODULE = 'support'
STAGE = 'support matches'
INCON_ROUNDS = 8
INT4 = 16


class SupportStage:
    """Owns the lattice, the point list (``points``, ``meta``) and the row tables per view."""

    def __init__(self, dev: StageDevice, geo: Geometry, s: ElasSettings,
                 desc: tuple[cl.Buffer, cl.Buffer]):
        i32 = np.int32
        local = dev.local
        lattice = (geo.lattice_w, geo.lattice_h)
        lw, lh = i32(geo.lattice_w), i32(geo.lattice_h)
        self.candidates = dev.buffer('dcan_raw', 4 * geo.lattice)
        self.dcan = dev.buffer('dcan', 4 * geo.lattice)
        count = dev.buffer('incon_count', 4 * geo.lattice)
        state = dev.buffer('incon_state', 4 * geo.lattice)
        pending = dev.buffer('incon_pending', 4)
        self.points = dev.buffer('points', INT4 * geo.max_points)
        self.meta = dev.buffer('meta', 8)
        self.row_start = dev.buffer('row_start', 4 * geo.rows)
        self.row_y = dev.buffer('row_y', 4 * geo.rows)
        self.row_len = tuple(dev.buffer(f'row_len_{v}', 4 * geo.rows) for v in 'lr')
        self.slots = tuple(dev.buffer(f'slots_{v}', INT4 * geo.max_points) for v in 'lr')
        raw = self.candidates
        incon = (i32(s.incon_window_size), i32(s.incon_threshold), i32(s.incon_min_support))
        self.match_launches = [
            dev.launch(MODULE, 'elas_support_candidates', lattice, local.heavy,
                       (*desc, i32(geo.width), i32(geo.height), lw, lh, i32(geo.step),
                        i32(s.disp_min), i32(s.disp_max), i32(s.support_texture),
                        np.float32(s.support_threshold), i32(s.lr_threshold), raw), STAGE)]
        self.filter_launches: list[Step] = [
            dev.launch(MODULE, 'elas_incon_init', lattice, local.pixels,
                       (raw, lw, lh, *incon, count, state), STAGE),
            dev.fill(pending, np.int32(-1), STAGE),
            *(dev.launch(MODULE, 'elas_incon_round', lattice, local.pixels,
                         (raw, lw, lh, *incon, i32(k), count, state, pending), STAGE)
              for k in range(1, INCON_ROUNDS + 1)),
            dev.launch(MODULE, 'elas_incon_apply', lattice, local.pixels,
                       (raw, lw, lh, *incon, i32(INCON_ROUNDS), state, pending, self.dcan),
                       STAGE),
            dev.launch(MODULE, 'elas_redundant', (geo.lattice_w,), (local.items,),
                       (self.dcan, lw, lh, i32(1)), STAGE),
            dev.launch(MODULE, 'elas_redundant', (geo.lattice_h,), (local.items,),
                       (self.dcan, lw, lh, i32(0)), STAGE),
        ]
        # one work-group, fitted to the kernel and to local memory (16 bytes per work-item)
        (group,) = dev.kernel(MODULE, 'elas_support_points').fit((local.group,))
        while group > 1 and 16 * group + 4 > dev.runtime.limits.local_mem:
            group //= 2
        self.point_launches = [
            dev.launch(MODULE, 'elas_support_points', (group,), (group,),
                       (self.dcan, lw, lh, i32(geo.step), i32(geo.width), i32(geo.height),
                        i32(s.add_corners), dev.buffer('col_base', 4 * geo.lattice_w),
                        dev.buffer('cell_point', 4 * geo.lattice), self.row_start, self.row_y,
                        *self.row_len, self.points, *self.slots, self.meta,
                        cl.LocalMemory(4 * (group + 1)), cl.LocalMemory(8 * group),
                        cl.LocalMemory(4 * group)), STAGE)]
        self.launches = [*self.match_launches, *self.filter_launches, *self.point_launches]
