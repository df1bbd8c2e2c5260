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

"""`cl-vision bench node`: the face of benchmarks/node_latency.py (what it measures)."""
from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
import random
import tempfile

from cl_vision_nodes.bags import layout
from cl_vision_nodes.benchmarks.node_latency import (bench_nodes, FRAMES, input_modes, NodeRow,
                                                     RATES_HZ, select, Settings, WARMUP)
from cl_vision_nodes.benchmarks.scene import make_scene
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.processes.nodes import node_environment
from cl_vision_nodes.ros.allocator import configure_allocator

RATE_COLUMN = 20


def format_table(rows: list[NodeRow]) -> str:
    rates = [r.rate_hz for r in rows[0].rates] if rows else []
    lines = [f'{"node":<10} {"size":>9} {"visuals":>7} {"latency p50":>11} {"compute":>8} '
             f'{"floor":>7} {"overhead":>8}   {"p90":>7} {"answered":>8} {"in MB":>6} '
             f'{"out MB":>6}' + ''.join(f' {f"at {rate:g} Hz":>{RATE_COLUMN}}'
                                        for rate in rates)]
    for r in rows:
        lines.append(f'{r.node:<10} {r.size:>9} {"yes" if r.visuals else "no":>7} '
                     f'{r.latency_p50_ms:>11.2f} {r.compute_ms:>8.2f} {r.floor_ms:>7.2f} '
                     f'{r.overhead_ms:>8.2f}   {r.latency_p90_ms:>7.2f} '
                     f'{f"{r.answered}/{r.answered + r.unanswered}":>8} '
                     f'{r.input_bytes / 1e6:>6.2f} {r.output_bytes / 1e6:>6.2f}'
                     + ''.join(f' {result.cell:>{RATE_COLUMN}}' for result in r.rates))
    loaded = [r for r in rows if not math.isnan(r.rate_hz)]
    if loaded:
        lines.append('sustained load (visual topics subscribed, frames alternating):')
        lines += [f'{r.node:<10} {r.size:>9} {r.rate_hz:>6.0f} Hz in: {r.rate_answered}/'
                  f'{r.rate_sent} answered, latency p50 {r.rate_latency_p50_ms:.2f} ms'
                  for r in loaded]
    return '\n'.join(lines)


def run(args: argparse.Namespace) -> list[NodeRow]:
    nodes = select(args.nodes)
    domain_id = random.randint(1, 101) if args.domain_id is None else args.domain_id
    runtime = ClRuntime(args.device)
    rates = tuple(args.rates if getattr(args, 'rates', None) is not None else RATES_HZ)
    modes = input_modes(getattr(args, 'node_inputs', None))
    camera = getattr(args, 'camera', 'profile')
    print(f'Node latency through DDS, lockstep, {args.frames or FRAMES} frames after {WARMUP} '
          f'warm-up, then as many at {", ".join(f"{r:g}" for r in rates) or "no"} Hz; '
          f'device {runtime.entry.name}; {os.cpu_count()} CPUs; ROS domain '
          f'{domain_id}; node inputs {",".join(modes)}; camera {camera}; '
          f'{configure_allocator().line()}', flush=True)
    scenes = [make_scene(width, height, encoding) for encoding in
              getattr(args, 'node_encodings', None) or [layout.IMAGE_ENCODING]
              for width, height in args.sizes]
    with tempfile.TemporaryDirectory(prefix='cl_vision_bench_node_') as tmp:
        settings = Settings(args.frames or FRAMES, args.timeout, node_environment(domain_id),
                            Path(tmp), args.device, rates, modes[0],
                            tuple(getattr(args, 'node_param', None) or ()),
                            camera == 'dds-defaults')
        return bench_nodes(nodes, scenes, settings, modes, runtime)


def main(args: argparse.Namespace) -> None:
    rows = run(args)
    print('overhead = latency p50 - compute (in-process mean) - floor (p50 inputs + p50 answers '
          'publisher -> subscriber); ms')
    if any(r.rates for r in rows):
        print('at N Hz: frames answered (every output, by stamp) / sent at N Hz whatever the '
              'answers, then latency p50/p95 of the answered ones; ms')
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in rows], indent=2) + '\n')
