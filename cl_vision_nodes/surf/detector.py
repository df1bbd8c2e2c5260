"""Fast-Hessian detector on the device: responses, maxima, selection of the strongest, order.

Follows OpenCV's ``fastHessianDetector`` (surf.cpp): n_octaves x (n_octave_layers + 2) layers
of filter size (9 + 6 layer) 2^octave sampled every 2^octave pixels, the same sample grid and
border margins, a strict 3x3x3 maximum above the threshold, one Newton step kept when all
offsets are within 1 (and not all zero), size = cvRound(size + ds offset), laplacian = sign of
Dxx + Dyy, response = the determinant at the discrete maximum. The arithmetic is OpenCV's in
float (see kernels/surf.cl), so keypoints agree with OpenCV's to the last bit or nearly.

Pipeline (one in-order queue, no host round trip except the count):

1. ``hessian``: every layer of every octave in one launch into ``surf_det``.
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

Deviation: the ``max_keypoints`` cap (OpenCV's CPU SURF has none; its GPU versions cap too,
but drop arbitrary candidates rather than the weakest).
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from cl_vision_nodes.imaging.device_image import DeviceImages
from cl_vision_nodes.surf.device import (CUT_WG, HISTOGRAM_BINS, KP_FIELDS, RANK_ITEMS,
                                         RANK_SPLIT, SurfKernels)
from cl_vision_nodes.surf.schema import SurfSettings

HAAR_SIZE0 = 9
HAAR_SIZE_INC = 6
HESSIAN_WG = 128
SCAN_WG = 128
MIN_CAPACITY = 4096


def layer_size(octave: int, layer: int) -> int:
    """Filter side of a layer: (9 + 6 layer) 2^octave (OpenCV's SURF_HAAR_SIZE0/_INC)."""
    return (HAAR_SIZE0 + HAAR_SIZE_INC * layer) << octave


def layer_samples(height: int, width: int, octaves: int, layers: int) -> int:
    """Samples of ``layers`` layers per octave: octave o has (H >> o) x (W >> o) per layer."""
    return sum(layers * (height >> o) * (width >> o) for o in range(octaves))


def filter_tables(octaves: int, layers: int) -> tuple[np.ndarray, np.ndarray]:
    """Per (octave, layer), octave-major: int32 [cvRound(size / 9 * k) for k = 1..8, size] and
    float32 [1 / Dxx-lobe area, 1 / Dxy-lobe area], in OpenCV's float32 arithmetic
    (``resizeHaarPattern``); the kernels read them instead of dividing (kernels/surf.cl)."""
    edges = np.zeros((octaves * layers, 9), np.int32)
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
    """Runs the detector stages; the result is the ``surf_keypoints`` buffer whose first
    ``count`` records (x, y, size, angle = 0, response, octave, laplacian, valid = 1, then room
    for the descriptor) are in output order."""

    def __init__(self, kernels: SurfKernels, images: DeviceImages):
        self.kernels = kernels
        self.images = images
        self._capacity = MIN_CAPACITY
        self._histogram: cl.Buffer | None = None
        self._tables: dict[tuple[int, int], tuple[cl.Buffer, cl.Buffer]] = {}

    def _filter_tables(self, octaves: int, layers: int) -> tuple[cl.Buffer, cl.Buffer]:
        """Device copies of ``filter_tables``, made once per (octaves, layers)."""
        found = self._tables.get((octaves, layers))
        if found is None:
            flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
            context = self.kernels.runtime.context
            found = tuple(cl.Buffer(context, flags, hostbuf=table)
                          for table in filter_tables(octaves, layers))
            self._tables[octaves, layers] = found
        return found

    def responses(self, integ: cl.Buffer, height: int, width: int, octaves: int,
                  layers: int) -> cl.Buffer:
        """Enqueue the determinant of every layer (``layers`` per octave) into ``surf_det``:
        octave-major, then layer, then (H >> octave) x (W >> octave) row-major."""
        total = layer_samples(height, width, octaves, layers)
        det = self.kernels.runtime.buffer('surf_det', total * 4)
        if total:
            edges, weights = self._filter_tables(octaves, layers)
            self.kernels.launch('hessian', (total,), (HESSIAN_WG,),
                                (integ, np.int32(width), np.int32(height), np.int32(octaves),
                                 np.int32(layers), np.int32(total), edges, weights, det),
                                'hessian')
        return det

    def detect(self, integ: cl.Buffer, height: int, width: int,
               settings: SurfSettings) -> tuple[cl.Buffer, int]:
        """Enqueue the detector on ``integ``; returns the keypoint buffer and its length."""
        rt = self.kernels.runtime
        octaves, layers = settings.n_octaves, settings.n_octave_layers
        middle_total = layer_samples(height, width, octaves, layers)
        keep = settings.max_keypoints
        stride = KP_FIELDS + settings.descriptor_length
        self._capacity = max(self._capacity, 2 * keep)
        det = self.responses(integ, height, width, octaves, layers + 2)
        keypoints = rt.buffer('surf_keypoints', keep * stride * 4)
        if middle_total == 0:
            return keypoints, 0
        edges, weights = self._filter_tables(octaves, layers + 2)
        counter = rt.buffer('surf_found', 4)
        while True:
            cand_f = rt.buffer('surf_cand_f', self._capacity * 16)
            cand_i = rt.buffer('surf_cand_i', self._capacity * 16)
            self._zero(counter, 4)
            self.kernels.launch('detect', (middle_total,), (HESSIAN_WG,),
                                (integ, det, np.int32(width), np.int32(height),
                                 np.int32(octaves), np.int32(layers), np.int32(middle_total),
                                 edges, weights, np.float32(settings.hessian_threshold),
                                 counter, np.uint32(self._capacity), cand_f, cand_i), 'detect')
            found = int(self.images.download(counter, (1,), np.dtype(np.uint32))[0])
            if found <= self._capacity:
                break
            self._capacity = found + found // 4  # grow once, then keep: no per-frame allocation
        if found == 0:
            return keypoints, 0
        count_at = counter  # holds the number of candidates to rank
        if found > keep:
            cand_f, cand_i, count_at = self._select(cand_f, cand_i, found, keep)
        self.kernels.launch('rank_keypoints', (found, RANK_SPLIT), (RANK_ITEMS, RANK_SPLIT),
                            (cand_f, cand_i, count_at, np.int32(keep), np.int32(stride),
                             keypoints), 'select')
        return keypoints, min(found, keep)

    def _select(self, cand_f: cl.Buffer, cand_i: cl.Buffer, found: int,
                keep: int) -> tuple[cl.Buffer, cl.Buffer, cl.Buffer]:
        """Compact the candidates of the histogram bins holding the strongest ``keep`` into the
        ``surf_sel_*`` buffers; returns them and the buffer whose first uint is their count."""
        rt = self.kernels.runtime
        launch = self.kernels.launch
        nbytes = (HISTOGRAM_BINS + CUT_WG) * 4  # bins, then chunk totals
        histogram = rt.buffer('surf_histogram', nbytes)
        if histogram is not self._histogram:  # new buffer: zero once, select_cut re-zeroes it
            self._zero(histogram, nbytes)
            self._histogram = histogram
        sel_f = rt.buffer('surf_sel_f', self._capacity * 16)
        sel_i = rt.buffer('surf_sel_i', self._capacity * 16)
        selected = rt.buffer('surf_selected', 4)
        cut = rt.buffer('surf_cut', 4)
        self._zero(selected, 4)
        launch('response_histogram', (found,), (SCAN_WG,),
               (cand_f, np.int32(found), histogram), 'select')
        launch('select_cut', (CUT_WG,), (CUT_WG,),
               (histogram, np.uint32(keep), cut), 'select')
        launch('compact_selected', (found,), (SCAN_WG,),
               (cand_f, cand_i, np.int32(found), cut, selected, sel_f, sel_i), 'select')
        return sel_f, sel_i, selected

    def _zero(self, buf: cl.Buffer, nbytes: int) -> None:
        event = cl.enqueue_fill_buffer(self.kernels.runtime.queue, buf, np.zeros(1, np.uint32),
                                       0, nbytes)
        self.kernels.runtime.profiler.record('detect', event)
