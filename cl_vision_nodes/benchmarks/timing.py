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

"""Timing helpers shared by the benchmarks: warm-up, repeats, mean, best, p50 and p95 in ms."""
from __future__ import annotations

from dataclasses import dataclass
import time
from typing import Callable, NamedTuple

from cl_vision_nodes.opencl.runtime import ClRuntime
import numpy as np


class Timing(NamedTuple):
    """Ms per call: the mean, the best, and the median and 95th percentile (how steady)."""

    mean_ms: float
    best_ms: float
    p50_ms: float
    p95_ms: float


def time_ms(fn: Callable[[], object], repeats: int, budget_s: float = 10.0,
            between: Callable[[], object] = lambda: None) -> Timing:
    """
    Return the Timing of ``fn`` over up to ``repeats`` calls after one warm-up call.

    Stops early once ``budget_s`` seconds are spent (slow baselines on slow devices).
    ``between`` runs untimed after each call (a node's work between frames).
    """
    fn()
    between()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats and (not times or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        between()
    ms = 1e3 * np.array(times)
    return Timing(float(ms.mean()), float(ms.min()), float(np.percentile(ms, 50)),
                  float(np.percentile(ms, 95)))


def device_stages(device: str, prepare: Callable[[ClRuntime], Callable[[], object]]) -> str:
    """
    Return the device ms per stage of one warm call, on a separate profiling runtime.

    Profiling events can slow a queue, so timed runs use an unprofiled one. ``prepare`` builds the
    call.
    """
    runtime = ClRuntime(device, profile=True)
    call = prepare(runtime)
    call()
    runtime.profiler.collect()
    call()
    return ', '.join(f'{k} {v:.2f}' for k, v in runtime.profiler.collect().items())


@dataclass(frozen=True)
class BenchRow:
    """One measured case: ms per frame (a Timing's four), where it ran, device ms per stage."""

    method: str
    where: str
    width: int
    height: int
    mean_ms: float
    best_ms: float
    p50_ms: float
    p95_ms: float
    stages: str = ''
    note: str = ''


def format_rows(rows: list[BenchRow], label: str, is_baseline: Callable[[BenchRow], bool]) -> str:
    """
    Format a table grouped by frame size, with fps and each row's ratio to the size's baseline.

    The speed ratio to the size's baseline row is the same-run comparison every benchmark prints.
    """
    lines = [f'{"method":<18} {"size":>9} {"note":>8} {"mean ms":>9} {"best ms":>9} {"p50 ms":>8} '
             f'{"p95 ms":>8} {"fps":>8} {"vs " + label:>18}  where / device ms per stage']
    for size in sorted({(r.width, r.height) for r in rows}):
        group = [r for r in rows if (r.width, r.height) == size]
        baseline = next(r.mean_ms for r in group if is_baseline(r))
        for r in group:
            lines.append(f'{r.method:<18} {f"{r.width}x{r.height}":>9} {r.note:>8} '
                         f'{r.mean_ms:>9.2f} {r.best_ms:>9.2f} {r.p50_ms:>8.2f} {r.p95_ms:>8.2f} '
                         f'{1e3 / r.mean_ms:>8.1f} '
                         f'{baseline / r.mean_ms:>17.2f}x  {r.where}'
                         + (f' / {r.stages}' if r.stages else ''))
    return '\n'.join(lines)
