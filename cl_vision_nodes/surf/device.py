"""Launching the kernels of ``kernels/surf.cl``: work-group sizes (build defines) and launches.

The sizes are fixed here and passed to the compiler, so the kernels' ``reqd_work_group_size``
and local arrays agree with what the host launches. 128-wide groups suit NVIDIA (4 warps) and
PoCL alike; the descriptor needs exactly 64 (4 work-items per subregion of its 4x4 grid).
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pyopencl as cl

from cl_vision_nodes.opencl.runtime import ClRuntime

PROGRAM = 'surf'
INT_WG = 128
"""Columns per block of the integral image scan (one work-group)."""
INT_STRIP = 16
"""Rows per block of the integral image scan."""
RANK_ITEMS = 32
"""Candidates per ranking work-group (one warp)..."""
RANK_SPLIT = 8
"""...each compared with all candidates by RANK_SPLIT work-items, one slice each."""
CUT_WG = 256
ORI_WG = 128
DESC_WG = 64
ORI_SAMPLES = 113
"""Integer points (i, j) with i^2 + j^2 <= 6^2: OpenCV's orientation samples."""
HISTOGRAM_BINS = 32768
"""Top 16 bits of a positive float response (kernel ``response_bin``); a multiple of CUT_WG
with at most CUT_WG bins per chunk (kernel ``select_cut``)."""
KP_FIELDS = 8
"""Floats of a device keypoint before its descriptor: x, y, size, angle, response, octave,
laplacian, valid. A record is KP_FIELDS + descriptor length floats, so one read fetches all."""

DEFINES = MappingProxyType({'INT_WG': INT_WG, 'INT_STRIP': INT_STRIP, 'RANK_ITEMS': RANK_ITEMS,
                            'RANK_SPLIT': RANK_SPLIT, 'CUT_WG': CUT_WG, 'ORI_WG': ORI_WG,
                            'DESC_WG': DESC_WG, 'ORI_SAMPLES': ORI_SAMPLES,
                            'KP_FIELDS': KP_FIELDS, 'HISTOGRAM_BINS': HISTOGRAM_BINS})


class SurfKernels:
    """The SURF kernels of one runtime, launched through ``ClRuntime.launch``."""

    def __init__(self, runtime: ClRuntime):
        self.runtime = runtime

    def launch(self, name: str, items: tuple[int, ...], local: tuple[int, ...],
               args: tuple[Any, ...], stage: str) -> cl.Event:
        """Enqueue ``name`` over ``items`` work-items, rounded up to a multiple of ``local``
        (the kernels check their bounds), and record it under ``stage``."""
        return self.runtime.launch(PROGRAM, name, items, local, args, stage, DEFINES)
