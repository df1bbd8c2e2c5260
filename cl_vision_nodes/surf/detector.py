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
Fast-Hessian detector on the device: responses, maxima, selection of the strongest, order.

Follows OpenCV's ``fastHessianDetector`` (surf.cpp): n_octaves x (n_octave_layers + 2) layers
of filter size (9 + 6 layer) 2^octave sampled every 2^octave pixels, the same sample grid and
border margins, a strict 3x3x3 maximum above the threshold, one Newton step kept when all
offsets are within 1 (and not all zero), size = cvRound(size + ds offset), laplacian = sign of
Dxx + Dyy, response = the determinant at the discrete maximum. The arithmetic is OpenCV's in
float (see kernels/surf/detector.cl), so keypoints agree with OpenCV's to the last bit or nearly.

Pipeline (one in-order queue, no host round trip except the count):

1. ``hessian``: every layer of every octave in one launch into ``det``.
2. ``detect``: maxima + interpolation, appended to the candidate list with an atomic counter.
3. The host reads the candidate count: it sizes the next launches (one work-group per
   keypoint later on) and is the only blocking read before the final download. If the
   count exceeds the candidate buffer, the buffer grows and ``detect`` runs again (first
   frames only: the capacity is kept).
4. If there are more candidates than ``max_keypoints``: a response histogram, a one-group cut
   search and a compaction keep those in the bins that hold the strongest ``max_keypoints``.
5. ``rank_keypoints``: every kept candidate counts the candidates that precede it in OpenCV's
   order (response, size, octave descending, y descending, x ascending; then the sample index,
   so the order is total) and writes itself to that rank if it is below ``max_keypoints``.
   Sorting on the device keeps the list ordered where orientation and descriptors read it, so
   nothing goes back to the host; ranking by counting needs no multi-pass sort, and its O(n^2)
   compares (n is near ``max_keypoints`` after step 4) are spread over many work-groups.

Work-group sizes come from the device's limits (``select_cut`` and ``rank_keypoints`` take
theirs as build defines); the histogram cut and the ranks are integer counts, so any size gives
the same keypoints.

Deviation: the ``max_keypoints`` cap (OpenCV's CPU SURF has none; its GPU versions cap too,
but drop arbitrary candidates rather than the weakest).
"""
from __future__ import annotations

from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.opencl.buffers import Buffers
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.surf.keypoints import KP_FIELDS, record_defines
from cl_vision_nodes.surf.schema import SurfSettings
import numpy as np
import pyopencl as cl

KERNELS = ('surf/common.cl', 'surf/detector.cl')
HAAR_SIZE0 = 9
HAAR_SIZE_INC = 6
EDGE_FIELDS = 9
"""Per filter table entry: the 8 pattern edges, then the size (kernel ``hessian_at``)."""
HISTOGRAM_BINS = 32768
"""Top 16 bits of a positive float response (kernel ``response_bin``)."""
ITEM_WG = 128
"""Preferred work-group size of the one-item-per-sample kernels (no required size)."""
CUT_WG = 256
"""Preferred size of ``select_cut``'s one work-group: chunks of HISTOGRAM_BINS / CUT_WG bins."""
RANK_GROUP = (32, 8)
"""Preferred (candidates per ranking work-group, work-items comparing each one): 32 is a warp."""
MIN_CAPACITY = 4096


def layer_size(octave: int, layer: int) -> int:
    """Filter side of a layer: (9 + 6 layer) 2^octave (OpenCV's SURF_HAAR_SIZE0/_INC)."""
    return (HAAR_SIZE0 + HAAR_SIZE_INC * layer) << octave


def layer_samples(height: int, width: int, octaves: int, layers: int) -> int:
    """Sample of ``layers`` layers per octave: octave o has (H >> o) x (W >> o) per layer."""
    return sum(layers * (height >> o) * (width >> o) for o in range(octaves))


def filter_tables(octaves: int, layers: int) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the box-filter tables per (octave, layer), octave-major, as the kernels read them.

    int32 [cvRound(size / 9 * k) for k = 1..8, size] and float32 [1 / Dxx-lobe area, 1 / Dxy-lobe
    area], in OpenCV's float32 arithmetic (``resizeHaarPattern``); the kernels read them instead of
    dividing (kernels/surf/detector.cl).
    """
    edges = np.zeros((octaves * layers, EDGE_FIELDS), np.int32)
    weights = np.zeros((octaves * layers, 2), np.float32)
    for octave in range(octaves):
        for layer in range(layers):
            size = layer_size(octave, layer)
            ratio = np.float32(size) / np.float32(9)
            e = [int(np.rint(ratio * np.float32(k))) for k in range(1, 9)]
            row = octave * layers + layer
            edges[row] = [*e, size]
            weights[row] = (np.float32(1) / (np.float32(e[2]) * np.float32(e[6] - e[1])),
                            np.float32(1) / (np.float32(e[3] - e[0]) * np.float32(e[3] - e[0])))
    return edges, weights


class HessianDetector:
    """
    Runs the detector stages; the result is the ``keypoints`` buffer.

    Its first ``count`` records (x, y, size, angle = 0, response, octave, laplacian, valid = 1,
    then room for the descriptor) are in output order. Its buffers are ``buffers``' roles ``det``,
    ``cand_*``, ``sel_*``, ``keypoints`` and a few counters.
    """

    def __init__(self, runtime: ClRuntime, buffers: Buffers, images: DeviceImages):
        self.runtime = runtime
        self.buffers = buffers
        self.images = images
        limits = runtime.limits
        self.cut_group = limits.group(CUT_WG)
        self.rank_group = limits.group_2d(RANK_GROUP)
        program = runtime.program(KERNELS, {
            **record_defines(), 'HAAR_SIZE0': HAAR_SIZE0, 'HAAR_SIZE_INC': HAAR_SIZE_INC,
            'EDGE_FIELDS': EDGE_FIELDS, 'HISTOGRAM_BINS': HISTOGRAM_BINS,
            'CUT_WG': self.cut_group, 'RANK_ITEMS': self.rank_group[0],
            'RANK_SPLIT': self.rank_group[1]})
        self._hessian = program.kernel('hessian')
        self._detect = program.kernel('detect')
        self._response_histogram = program.kernel('response_histogram')
        self._select_cut = program.kernel('select_cut')
        self._compact_selected = program.kernel('compact_selected')
        self._rank_keypoints = program.kernel('rank_keypoints')
        self._groups = {kernel.name: kernel.fit((ITEM_WG,))
                        for kernel in (self._hessian, self._detect, self._response_histogram,
                                       self._compact_selected)}
        self._capacity = MIN_CAPACITY
        self._zeroed_histogram: cl.Buffer | None = None
        self._tables: dict[tuple[int, int], tuple[cl.Buffer, cl.Buffer]] = {}

    def _filter_tables(self, octaves: int, layers: int) -> tuple[cl.Buffer, cl.Buffer]:
        """Device copies of ``filter_tables``, made once per (octaves, layers)."""
        found = self._tables.get((octaves, layers))
        if found is None:
            found = tuple(self.runtime.constant(table) for table in filter_tables(octaves, layers))
            self._tables[octaves, layers] = found
        return found

    def responses(self, integ: cl.Buffer, height: int, width: int, octaves: int,
                  layers: int) -> cl.Buffer:
        """
        Enqueue the determinant of every layer (``layers`` per octave) into ``det``.

        Octave-major, then layer, then (H >> octave) x (W >> octave) row-major.
        """
        total = layer_samples(height, width, octaves, layers)
        det = self.buffers.get('det', total * 4)
        if total:
            edges, weights = self._filter_tables(octaves, layers)
            self._hessian((total,), (integ, np.int32(width), np.int32(height), np.int32(octaves),
                                     np.int32(layers), np.int32(total), edges, weights, det),
                          'hessian', self._groups['hessian'])
        return det

    def detect(self, integ: cl.Buffer, height: int, width: int,
               settings: SurfSettings) -> tuple[cl.Buffer, int]:
        """Enqueue the detector on ``integ``; returns the keypoint buffer and its length."""
        octaves, layers = settings.n_octaves, settings.n_octave_layers
        middle_total = layer_samples(height, width, octaves, layers)
        keep = settings.max_keypoints
        stride = KP_FIELDS + settings.descriptor_length
        self._capacity = max(self._capacity, 2 * keep)
        det = self.responses(integ, height, width, octaves, layers + 2)
        keypoints = self.buffers.get('keypoints', keep * stride * 4)
        if middle_total == 0:
            return keypoints, 0
        edges, weights = self._filter_tables(octaves, layers + 2)
        counter = self.buffers.get('found', 4)
        while True:
            cand_f = self.buffers.get('cand_f', self._capacity * 16)
            cand_i = self.buffers.get('cand_i', self._capacity * 16)
            self.runtime.fill(counter, np.uint32(0), 'detect')
            self._detect((middle_total,),
                         (integ, det, np.int32(width), np.int32(height), np.int32(octaves),
                          np.int32(layers), np.int32(middle_total), edges, weights,
                          np.float32(settings.hessian_threshold), counter,
                          np.uint32(self._capacity), cand_f, cand_i),
                         'detect', self._groups['detect'])
            found = int(self.images.download(counter, (1,), np.dtype(np.uint32))[0])
            if found <= self._capacity:
                break
            self._capacity = found + found // 4  # grow once, then keep: no per-frame allocation
        if found == 0:
            return keypoints, 0
        count_at = counter  # holds the number of candidates to rank
        if found > keep:
            cand_f, cand_i, count_at = self._select(cand_f, cand_i, found, keep)
        self.rank(cand_f, cand_i, count_at, found, keep, stride, keypoints)
        return keypoints, min(found, keep)

    def rank(self, cand_f: cl.Buffer, cand_i: cl.Buffer, count_at: cl.Buffer, most: int,
             keep: int, stride: int, keypoints: cl.Buffer) -> None:
        """
        Write the first ``keep`` candidates, in output order, at the start of ``keypoints``.

        Of the ``count_at[0]`` (at most ``most``) candidates, as records of ``stride`` floats.
        """
        self._rank_keypoints((most, self.rank_group[1]),
                             (cand_f, cand_i, count_at, np.int32(keep), np.int32(stride),
                              keypoints), 'select', self.rank_group)

    def _select(self, cand_f: cl.Buffer, cand_i: cl.Buffer, found: int,
                keep: int) -> tuple[cl.Buffer, cl.Buffer, cl.Buffer]:
        """
        Compact the candidates of the bins holding the strongest ``keep`` into ``sel_*`` buffers.

        Those are the histogram bins; returns the buffers and the buffer whose first uint is their
        count.
        """
        nbytes = (HISTOGRAM_BINS + self.cut_group) * 4  # bins, then chunk totals
        histogram = self.buffers.get('histogram', nbytes)
        if histogram is not self._zeroed_histogram:  # new: zero once, select_cut re-zeroes it
            self.runtime.fill(histogram, np.uint32(0), 'select')
            self._zeroed_histogram = histogram
        sel_f = self.buffers.get('sel_f', self._capacity * 16)
        sel_i = self.buffers.get('sel_i', self._capacity * 16)
        selected = self.buffers.get('selected', 4)
        cut = self.buffers.get('cut', 4)
        self.runtime.fill(selected, np.uint32(0), 'select')
        self._response_histogram((found,), (cand_f, np.int32(found), histogram), 'select',
                                 self._groups['response_histogram'])
        self._select_cut((self.cut_group,), (histogram, np.uint32(keep), cut), 'select',
                         (self.cut_group,))
        self._compact_selected((found,), (cand_f, cand_i, np.int32(found), cut, selected, sel_f,
                                          sel_i), 'select', self._groups['compact_selected'])
        return sel_f, sel_i, selected
