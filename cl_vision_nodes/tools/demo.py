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

"""
`cl-vision demo`: the three nodes over real DDS on a stereo sequence of real imagery.

It renders the Middlebury Motorcycle drive (``make-bag motorcycle``: scikit-image's stereo pair
seen from a rig moving forward and turning right, with exact disparity and flow ground truth from
the scene's depth), writes it as a dataset bag, runs flow_node, surf_node and disparity_node as
ROS processes on it (`cl-vision eval`: lockstep playback, every answer recorded), prints one
status line a second (frames, fps and accuracy so far per node) and ends by naming the folder
that holds the input and output bags, the report and the colour pictures.
"""
from __future__ import annotations

import argparse
from pathlib import Path
import time

from cl_vision_nodes.bags.datasets import motorcycle, write_bag
from cl_vision_nodes.evaluation.one_bag import EvalOptions, evaluate
from cl_vision_nodes.processes.child_processes import guarded
from cl_vision_nodes.tools.cli_common import integer_in, output_folder, positive_number

DEMO_FRAMES = 12
DEMO_SIZE = (240, 320)  # small enough for PoCL on two cores in about a minute; disparity <= 63
DEMO_PARAMS = ('disparity.disp_max=64',)


def run(args: argparse.Namespace) -> int:
    """Render, evaluate, name the outputs; nothing started outlives it (child_processes)."""
    return guarded('cl-vision demo', lambda: demonstrate(args))


def demonstrate(args: argparse.Namespace) -> int:
    out = Path(args.out or f'demo-output/{time.strftime("%Y%m%d-%H%M%S")}')
    out.mkdir(parents=True, exist_ok=True)
    height, width = DEMO_SIZE
    print(f'rendering the Middlebury Motorcycle drive, {args.frames} {width}x{height} stereo '
          f'frames with ground truth -> {out / "input_bag"}', flush=True)
    dataset = motorcycle(args.frames, height, width)
    write_bag(dataset, out / 'input_bag', 'mcap', rate=10.0)
    code = evaluate(EvalOptions(out / 'input_bag', out, device=args.device,
                                param=list(DEMO_PARAMS), timeout=args.timeout, status_lines=True))
    print(f'demo outputs: {out.resolve()} (report.md, report.json, bag/, input_bag/, PNGs)')
    return code


def add_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser('demo', help='a stereo sequence of real imagery through the three '
                                       'nodes over DDS: status lines, report, pictures')
    demo.add_argument('--frames', type=integer_in(2), default=DEMO_FRAMES,
                      help='frames of the sequence, 2 to 20 (flow needs two)')
    demo.add_argument('--timeout', type=positive_number, default=120.0,
                      help='seconds to wait for each answer (the first includes kernel builds)')
    demo.add_argument('--out', type=output_folder,
                      help='output folder (default demo-output/<date-time>)')
    demo.add_argument('--device', default='auto')
    demo.set_defaults(run=run)
