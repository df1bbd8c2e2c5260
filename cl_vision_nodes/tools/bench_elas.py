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

"""`cl-vision bench elas`: the face of benchmarks/elas_speed.py (what it measures)."""
from __future__ import annotations

import argparse

from cl_vision_nodes.benchmarks.elas_speed import run
from cl_vision_nodes.benchmarks.timing import format_rows


def main(args: argparse.Namespace) -> None:
    source = f'{args.left} / {args.right}' if args.left else 'generated stereo pairs'
    print(f'ELAS disparity, ms per frame (upload + all stages + download), {source}; '
          'raw->points: rectify + ELAS + depth + points (disparity_node with rectify)')
    print(format_rows(run(args.device, args.repeats, args.left, args.right, args.preset),
                      'SGBM', lambda r: r.method.startswith('SGBM')))
