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
Stage "grid": candidate disparities per grid_size x grid_size cell (createGrid), per view.

Support points mark d-1..d+1 in their cell (bit masks, atomic_or), then each cell ORs its 3x3
neighbourhood the way libelas' flat pointer walk does (wrapping at the left and right edges,
nothing for the first and last grid rows) and writes libelas' list [count, d_1 < d_2 < ...].
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import Geometry, StageDevice
from cl_vision_nodes.elas.schema import ElasSettings
from cl_vision_nodes.elas.support import SupportStage
import numpy as np

MODULE = 'grid'
STAGE = 'grid'


class GridStage:
    """Owns the candidate lists (grid cells x (disp_max + 2) int32) of one view."""

    def __init__(self, dev: StageDevice, geo: Geometry, s: ElasSettings, support: SupportStage,
                 right_view: bool):
        i32 = np.int32
        view = 'r' if right_view else 'l'
        marks = dev.buffer(f'grid_marks_{view}', 4 * geo.grid_cells * geo.grid_words)
        self.lists = dev.buffer(f'grid_lists_{view}', 4 * geo.grid_cells * geo.list_len)
        sizes = (i32(geo.grid_w), i32(geo.grid_h), i32(geo.grid_words), i32(s.disp_max))
        self.launches = [
            dev.fill(marks, np.uint32(0), STAGE),
            dev.launch(MODULE, 'elas_grid_mark', (geo.max_points,), (dev.local.items,),
                       (support.points, support.meta, i32(geo.max_points), i32(right_view),
                        i32(s.grid_size), *sizes, marks), STAGE),
            dev.launch(MODULE, 'elas_grid_lists', (geo.grid_cells,), (dev.local.items,),
                       (marks, *sizes, self.lists), STAGE),
        ]
