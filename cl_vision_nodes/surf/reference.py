"""NumPy references of the SURF kernels, for the kernel tests (test/test_surf_kernels.py).

Written for clarity after OpenCV's ``calcLayerDetAndTrace`` (surf.cpp): integer box sums, each
lobe weighted by sign / area in float64 and rounded to float32 like OpenCV's double
accumulation, then ``det = Dxx Dyy - 0.81 Dxy^2`` in float32. The kernel's factored integer
form rounds to the same float32 values, so the tests compare bit for bit.
"""
from __future__ import annotations

import numpy as np

from cl_vision_nodes.surf.detector import layer_size

# OpenCV's 9x9 patterns: (x1, y1, x2, y2, weight) per lobe.
DXX = ((0, 2, 3, 7, 1), (3, 2, 6, 7, -2), (6, 2, 9, 7, 1))
DYY = ((2, 0, 7, 3, 1), (2, 3, 7, 6, -2), (2, 6, 7, 9, 1))
DXY = ((1, 1, 4, 4, 1), (5, 1, 8, 4, -1), (1, 5, 4, 8, -1), (5, 5, 8, 8, 1))


def integral(image: np.ndarray) -> np.ndarray:
    """(H+1)x(W+1) uint32 integral of an 8-bit image, zero first row and column."""
    out = np.zeros((image.shape[0] + 1, image.shape[1] + 1), np.uint32)
    out[1:, 1:] = image.astype(np.uint64).cumsum(0).cumsum(1)
    return out


def _edge(size: int, k: int) -> int:
    """cvRound(float(size) / 9 * k), OpenCV's resizeHaarPattern (no ties occur)."""
    return int(np.rint(np.float32(size) / np.float32(9) * np.float32(k)))


def _pattern(sums: np.ndarray, tops: np.ndarray, lefts: np.ndarray, size: int,
             lobes: tuple[tuple[int, int, int, int, int], ...]) -> np.ndarray:
    total = np.zeros(tops.shape, np.float64)
    for x1, y1, x2, y2, weight in lobes:
        ex1, ey1, ex2, ey2 = (_edge(size, k) for k in (x1, y1, x2, y2))
        area = np.float32(ex2 - ex1) * np.float32(ey2 - ey1)
        w = np.float64(np.float32(weight) / area)
        box = (sums[tops + ey2, lefts + ex2].astype(np.int64) - sums[tops + ey1, lefts + ex2]
               - sums[tops + ey2, lefts + ex1] + sums[tops + ey1, lefts + ex1])
        total += box * w
    return total.astype(np.float32)


def hessian_layer(sums: np.ndarray, octave: int, layer: int) -> np.ndarray:
    """det of one layer on its (H >> octave) x (W >> octave) grid, 0 where the filter does not
    fit (sample (i, j) has its filter's top-left corner at 2^octave (i - m, j - m),
    m = (size // 2) >> octave)."""
    height, width = sums.shape[0] - 1, sums.shape[1] - 1
    step = 1 << octave
    size = layer_size(octave, layer)
    det = np.zeros((height >> octave, width >> octave), np.float32)
    if size > height or size > width:
        return det
    rows = 1 + (height - size) // step
    cols = 1 + (width - size) // step
    tops, lefts = np.meshgrid(np.arange(rows) * step, np.arange(cols) * step, indexing='ij')
    dxx = _pattern(sums, tops, lefts, size, DXX)
    dyy = _pattern(sums, tops, lefts, size, DYY)
    dxy = _pattern(sums, tops, lefts, size, DXY)
    margin = (size // 2) >> octave
    det[margin:margin + rows, margin:margin + cols] = dxx * dyy - np.float32(0.81) * dxy * dxy
    return det
