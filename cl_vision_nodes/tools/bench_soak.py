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

"""`cl-vision bench soak`: the face of benchmarks/soak.py (what it measures)."""
from __future__ import annotations

import argparse
from dataclasses import asdict
import json
import os
from pathlib import Path
import tempfile

from cl_vision_nodes.benchmarks.soak import MIB_KB, soak, soak_specs, SoakOptions, SoakRow
from cl_vision_nodes.ros.allocator import configure_allocator


def format_table(rows: list[SoakRow], warmup_s: float) -> str:
    lines = [f'{"node":<10} {"answered":>13} {"RSS MiB at":>10} {"at end":>7} '
             f'{"MB/hour":>8} {"anon":>6} {"shmem":>6} {"fds at":>6} {"at end":>6} {"max":>4}']
    for row in rows:
        ref, end = row.reference(warmup_s), row.samples[-1]
        lines.append(f'{row.node:<10} {f"{row.answered}/{row.sent}":>13} '
                     f'{ref.rss_kb / MIB_KB:>10.1f} {end.rss_kb / MIB_KB:>7.1f} '
                     f'{row.growth_mb_per_hour(warmup_s):>+8.2f} '
                     f'{row.growth_mb_per_hour(warmup_s, "anon_kb"):>+6.2f} '
                     f'{row.growth_mb_per_hour(warmup_s, "shmem_kb"):>+6.2f} '
                     f'{ref.fds:>6} {end.fds:>6} '
                     f'{max(s.fds for s in row.samples):>4}')
    return '\n'.join(lines)


def main(args: argparse.Namespace) -> None:
    specs = soak_specs(args.nodes)
    options = SoakOptions(args.sizes[0], args.rate, args.duration, args.sample, args.timeout,
                          args.device, tuple(args.node_param or ()), args.domain_id)
    warmup_s = options.warmup_s
    width, height = options.size
    print(f'Soak: {", ".join(s.key for s in specs)}, one process each, fed {width}x{height} '
          f'at {args.rate:g} Hz for {args.duration:g} s by one camera process; {os.cpu_count()} '
          f'CPUs; {configure_allocator().line()}', flush=True)
    with tempfile.TemporaryDirectory(prefix='cl_vision_bench_soak_') as tmp:
        rows = soak(specs, options, Path(tmp))
    print(f'RSS and fds at {warmup_s:g} s (after the warm-up) and at the end; MB/hour: the RSS '
          'growth between the two (MiB) per hour, anon and shmem: its anonymous (heaps) and '
          "shared-memory (Fast DDS' segments) parts; answered: frames with the first output")
    print(format_table(rows, warmup_s))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=2) + '\n')
