"""Stages after matching: "L/R check", "remove small segments", "gap interpolation",
"adaptive mean", "median" (libelas' order and conditions), and "output" (invalid -> -1).

The left map is always post-processed, the right one only without postprocess_only_left.
Every stage reads one buffer and writes another (never in place across work-items), cycling
through two maps per view and one shared temporary.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from cl_vision_nodes.elas.device import GAP_GROUP, Fill, Geometry, Launch, LocalSizes, Workspace
from cl_vision_nodes.elas.schema import ElasSettings


class PostProcessStage:
    """L/R check of both raw maps, then each view's chain; ``output`` holds the final maps."""

    def __init__(self, ws: Workspace, geo: Geometry, local: LocalSizes, s: ElasSettings,
                 raw: tuple[cl.Buffer, cl.Buffer]):
        self.ws, self.geo, self.local, self.s = ws, geo, local, s
        self.size = (np.int32(geo.out_width), np.int32(geo.out_height))
        self.temp = ws.buffer('post_temp', 4 * geo.out_pixels)
        self.labels = ws.buffer('segment_labels', 4 * geo.out_pixels)
        self.sizes = ws.buffer('segment_sizes', 4 * geo.out_pixels)
        maps = [(ws.buffer(f'post_{v}_a', 4 * geo.out_pixels),
                 ws.buffer(f'post_{v}_b', 4 * geo.out_pixels)) for v in 'lr']
        self.launches: list[Launch | Fill] = [self._launch(
            'elas_lr_check', self.geo.out_width, self.geo.out_height, 'L/R check',
            (*raw, *self.size, np.int32(s.subsampling), np.int32(s.lr_threshold),
             maps[0][0], maps[1][0]))]
        final_left = self._chain(*maps[0])
        final_right = maps[1][0] if s.postprocess_only_left else self._chain(*maps[1])
        self.output = tuple(ws.buffer(f'output_{v}', 4 * geo.out_pixels) for v in 'lr')
        self.launches.append(self._finalize(final_left, self.output[0]))
        self.right_output = [self._finalize(final_right, self.output[1])]

    def _launch(self, name: str, items_x: int, items_y: int, stage: str,
                args: tuple) -> Launch:
        return Launch(self.ws.runtime, name, (items_x, items_y), self.local.pixels, args, stage)

    def _finalize(self, src: cl.Buffer, dst: cl.Buffer) -> Launch:
        count = self.geo.out_pixels
        return Launch(self.ws.runtime, 'elas_finalize', (count,), (self.local.pixels[0],),
                      (src, np.int32(count), dst), 'output')

    def _chain(self, current: cl.Buffer, spare: cl.Buffer) -> cl.Buffer:
        """Enqueue libelas' post-processing of one map; returns the buffer with the result."""
        s, w, h, rt = self.s, self.geo.out_width, self.geo.out_height, self.ws.runtime
        size, temp, subs = self.size, self.temp, np.int32(s.subsampling)
        stage = 'remove small segments'
        self.launches += [
            self._launch('elas_segments_init', w, h, stage, (*size, self.labels, self.sizes)),
            self._launch('elas_segments_merge', w, h, stage,
                         (current, *size, np.float32(s.speckle_sim_threshold), self.labels)),
            self._launch('elas_segments_count', w, h, stage, (*size, self.labels, self.sizes)),
            self._launch('elas_segments_apply', w, h, stage,
                         (current, *size, self.labels, self.sizes, np.int32(s.segment_size))),
        ]
        gap = np.int32(s.gap_width)
        self.launches += [
            Launch(rt, 'elas_gap', (GAP_GROUP * h,), (GAP_GROUP,),
                   (current, *size, np.int32(1), gap, np.int32(s.add_corners), temp),
                   'gap interpolation'),
            Launch(rt, 'elas_gap', (GAP_GROUP * w,), (GAP_GROUP,),
                   (temp, *size, np.int32(0), gap, np.int32(s.add_corners), spare),
                   'gap interpolation'),
        ]
        current, spare = spare, current
        if s.filter_adaptive_mean:
            stage = 'adaptive mean'
            self.launches += [
                self._launch('elas_adaptive_mean_h', w, h, stage, (current, *size, subs, temp)),
                self._launch('elas_adaptive_mean_v', w, h, stage,
                             (current, temp, *size, subs, spare)),
            ]
            current, spare = spare, current
        if s.filter_median:
            self.launches += [
                self._launch('elas_median_h', w, h, 'median', (current, *size, temp)),
                self._launch('elas_median_v', w, h, 'median', (current, temp, *size, spare)),
            ]
            current, spare = spare, current
        return current
