"""Timing helpers shared by the benchmarks: warm-up, repeats, mean and best in milliseconds."""
from __future__ import annotations

import time
from typing import Callable

from cl_vision_nodes.opencl.runtime import ClRuntime


def time_ms(fn: Callable[[], object], repeats: int, budget_s: float = 10.0) -> tuple[float, float]:
    """(mean, best) ms of ``fn`` over up to ``repeats`` calls after one warm-up call, stopping
    early once ``budget_s`` seconds are spent (slow baselines on slow devices)."""
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats and (not times or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * sum(times) / len(times), 1e3 * min(times)


def device_stages(device: str, prepare: Callable[[ClRuntime], Callable[[], object]]) -> str:
    """Device ms per stage of one warm call, on a separate profiling runtime (profiling events
    can slow a queue, so timed runs use an unprofiled one). ``prepare`` builds the call."""
    runtime = ClRuntime(device, profile=True)
    call = prepare(runtime)
    call()
    runtime.profiler.collect()
    call()
    return ', '.join(f'{k} {v:.2f}' for k, v in runtime.profiler.collect().items())
