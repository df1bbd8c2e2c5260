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
Stages after matching, in libelas' order and under its conditions.

"L/R check", "remove small segments", "gap interpolation", "adaptive mean", "median", and "output"
(invalid -> -1).

The left map is always post-processed, the right one only without postprocess_only_left.
Every stage reads one buffer and writes another (never in place across work-items), cycling
through two maps per view and one shared temporary.
"""
from __future__ import annotations

from cl_vision_nodes.elas.device import GAP_GROUP, Geometry, StageDevice, Step
from cl_vision_nodes.elas.schema import ElasSettings
import numpy as np
import pyopencl as cl

MODULE = 'postprocess'


class PostProcessStage:
    """L/R check of both raw maps, then each view's chain; ``output`` holds the final maps."""

    def __init__(self, dev: StageDevice, geo: Geometry, s: ElasSettings,
                 raw: tuple[cl.Buffer, cl.Buffer]):
        self.dev, self.geo, self.s = dev, geo, s
        self.size = (np.int32(geo.out_width), np.int32(geo.out_height))
        self.temp = dev.buffer('post_temp', 4 * geo.out_pixels)
        self.labels = dev.buffer('segment_labels', 4 * geo.out_pixels)
        self.sizes = dev.buffer('segment_sizes', 4 * geo.out_pixels)
        maps = [(dev.buffer(f'post_{v}_a', 4 * geo.out_pixels),
                 dev.buffer(f'post_{v}_b', 4 * geo.out_pixels)) for v in 'lr']
        self.launches: list[Step] = [self._launch(
            'elas_lr_check', 'L/R check',
            (*raw, *self.size, np.int32(s.subsampling), np.int32(s.lr_threshold),
             maps[0][0], maps[1][0]))]
        final_left = self._chain(*maps[0])
        final_right = maps[1][0] if s.postprocess_only_left else self._chain(*maps[1])
        self.output = tuple(dev.buffer(f'output_{v}', 4 * geo.out_pixels) for v in 'lr')
        self.launches.append(self._finalize(final_left, self.output[0]))
        self.right_output = [self._finalize(final_right, self.output[1])]

    def _launch(self, name: str, stage: str, args: tuple) -> Step:
        """Launch a per-pixel kernel over the output map."""
        return self.dev.launch(MODULE, name, (self.geo.out_width, self.geo.out_height),
                               self.dev.local.pixels, args, stage)

    def _gap(self, src: cl.Buffer, dst: cl.Buffer, horizontal: bool) -> Step:
        """
        Run libelas' gapInterpolation along rows or columns.

        One work-group of GAP_GROUP per line.
        """
        s, lines = self.s, self.geo.out_height if horizontal else self.geo.out_width
        return self.dev.kernel(MODULE, 'elas_gap').bind(
            (GAP_GROUP * lines,),
            (src, *self.size, np.int32(horizontal), np.int32(s.gap_width),
             np.int32(s.add_corners), dst), 'gap interpolation', (GAP_GROUP,))

    def _finalize(self, src: cl.Buffer, dst: cl.Buffer) -> Step:
        count = self.geo.out_pixels
        return self.dev.launch(MODULE, 'elas_finalize', (count,), (self.dev.local.pixels[0],),
                               (src, np.int32(count), dst), 'output')

    def _chain(self, current: cl.Buffer, spare: cl.Buffer) -> cl.Buffer:
        """Enqueue libelas' post-processing of one map; returns the buffer with the result."""
        s, size, temp, subs = self.s, self.size, self.temp, np.int32(self.s.subsampling)
        stage = 'remove small segments'
        self.launches += [
            self._launch('elas_segments_init', stage, (*size, self.labels, self.sizes)),
            self._launch('elas_segments_merge', stage,
                         (current, *size, np.float32(s.speckle_sim_threshold), self.labels)),
            self._launch('elas_segments_count', stage, (*size, self.labels, self.sizes)),
            self._launch('elas_segments_apply', stage,
                         (current, *size, self.labels, self.sizes, np.int32(s.segment_size))),
            self._gap(current, temp, True),
            self._gap(temp, spare, False),
        ]
        current, spare = spare, current
        if s.filter_adaptive_mean:
            stage = 'adaptive mean'
            self.launches += [
                self._launch('elas_adaptive_mean_h', stage, (current, *size, subs, temp)),
                self._launch('elas_adaptive_mean_v', stage, (current, temp, *size, subs, spare)),
            ]
            current, spare = spare, current
        if s.filter_median:
            self.launches += [
                self._launch('elas_median_h', 'median', (current, *size, temp)),
                self._launch('elas_median_v', 'median', (current, temp, *size, spare)),
            ]
            current, spare = spare, current
        return current
