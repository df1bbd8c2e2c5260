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

"""`cl-vision bench transport`: the face of benchmarks/transport.py (what it measures)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
import random
import tempfile

from cl_vision_nodes.benchmarks.transport import (check_choices, image_message, measure,
                                                  study_cases, STUDY_FRAMES, VARIANTS, WARMUP)
from cl_vision_nodes.processes.nodes import node_environment


STUDY_HEADER = (f'{"profile":<20} {"reliability":<12} {"allocator":<13} {"image":<15} '
                f'{"p50 ms":>7} {"p90 ms":>7} {"dds p50":>7} {"lost":>5} {"RSS MiB":>8}')


def study_line(r: dict) -> str:
    """Format one row of the study (RSS: the subscriber's peak)."""
    return (f'{r["variant"]:<20} {r["reliability"]:<12} {r["allocator"]:<13} {r["image"]:<15} '
            f'{r["p50_ms"]:>7.2f} {r["p90_ms"]:>7.2f} {r["dds_p50_ms"]:>7.2f} {r["lost"]:>5} '
            f'{r.get("rss_max_kb", 0) / 1024:>8.0f}')


def main(args: argparse.Namespace) -> None:
    """Run `cl-vision bench transport`: the allocator and Fast DDS profile variants."""
    variants = list(VARIANTS) if args.variants == ['all'] else args.variants
    check_choices(variants, args.encodings)
    images = {f'{w}x{h} {enc}': image_message(w, h, enc, f'/cl_vision_floor/image_{w}x{h}_'
                                              f'{enc.lower()}')
              for w, h in args.sizes for enc in args.encodings}
    env = node_environment(random.randint(1, 101) if args.domain_id is None else args.domain_id)
    frames = args.frames or STUDY_FRAMES
    print(f'Transport floor: publisher process -> subscriber process, {frames} images at '
          f'{args.rate:g} Hz after {WARMUP} warm-up, raw take; latency = publish call -> '
          'subscriber callback (dds: -> DDS reception)')
    print(STUDY_HEADER)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix='cl_vision_transport_') as tmp:
        for k, case in enumerate(study_cases(variants)):
            for i, (name, message) in enumerate(images.items()):
                row = measure(case, name, message, frames, args.rate, env,
                              Path(tmp) / f'{k}_{i}', args.timeout)
                print(study_line(row), flush=True)
                rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + '\n')
