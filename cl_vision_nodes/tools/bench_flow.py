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

"""`cl-vision bench flow`: the face of benchmarks/flow_speed.py (what it measures)."""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from cl_vision_nodes.benchmarks.flow_speed import FlowRow, kernel_times, our_cases, run
from cl_vision_nodes.benchmarks.timing import format_rows
from cl_vision_nodes.opencl.runtime import ClRuntime


def print_kernels(device: str, sizes, formulation: str, frames: int) -> None:
    """Print per method (dis per preset) and size: kernel, launches and device ms per frame."""
    formulation = None if formulation == 'device' else formulation
    chosen = formulation or ClRuntime(device).limits.formulation
    print(f'Flow kernels, per frame (mean of {frames} frames), {chosen} formulation')
    for (method, preset, params), size in itertools.product(our_cases(), sizes):
        times = kernel_times(device, method, size, frames, formulation, dict(params))
        title = f'{method} {preset}' if preset else method
        print(f'\n{title} {size[0]}x{size[1]}\n{"kernel":<20} {"launches":>9} {"ms":>9}')
        for name, time in sorted(times.items(), key=lambda item: -item[1].ms):
            print(f'{name:<20} {time.launches:>9} {time.ms:>9.2f}')
        print(f'{"total":<20} {sum(t.launches for t in times.values()):>9} '
              f'{sum(t.ms for t in times.values()):>9.2f}')


def write_json(rows: list[FlowRow], path: Path) -> None:
    """Write the rows as a JSON list of ``FlowRow.as_dict``."""
    Path(path).write_text(json.dumps([r.as_dict() for r in rows], indent=2) + '\n')


def main(args: argparse.Namespace) -> None:
    if getattr(args, 'kernels', None):
        print_kernels(args.device, args.sizes, args.kernels, min(args.repeats, 5))
        return
    print('Dense optical flow, ms per frame (ours: from its bytes to its flow, upload + pyramid '
          '+ flow + download; as in flow_node, where the queue holds idle (a CPU device, a GPU '
          'with semaphores) the next frame enqueued between frames, "ahead")')
    rows = run(args.device, args.repeats, args.sizes)
    print(format_rows([r.table_row() for r in rows], 'DIS MEDIUM cpu',
                      lambda r: r.method == 'DIS MEDIUM' and r.where.startswith('OpenCV CPU')))
    if args.json:
        write_json(rows, args.json)
