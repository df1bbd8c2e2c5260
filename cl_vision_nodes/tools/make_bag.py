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
`cl-vision make-bag DATASET --out BAG`: a data set with ground truth as a rosbag2.

In the layout of ``bags.layout`` (camera images, camera infos, ground-truth topics), for `cl-vision
eval`, `cl-vision replay` or `ros2 bag play`. The data sets it recognises: ``bags.datasets``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.datasets import open_dataset, write_bag
from cl_vision_nodes.tools.cli_common import output_folder, positive_number


def run(args: argparse.Namespace) -> int:
    dataset = open_dataset(args.dataset, args.disparity_scale, args.seed)
    counts = write_bag(dataset, Path(args.out), args.storage, args.rate)
    frames = counts.get(layout.LEFT_IMAGE, 0)
    print(f"{args.out}: {dataset.layout}, {frames} frame{'' if frames == 1 else 's'} at "
          f'{args.rate:g} Hz')
    for topic, count in counts.items():
        print(f'  {topic:36s} {layout.INPUT_TYPES[topic]:30s} {count}')
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('make-bag', help='convert a data set with ground truth to a rosbag2',
                            description=__doc__.strip().split('\n\n')[0])
    parser.add_argument('dataset', help='data set folder, synthetic:{flow,stereo}:FRAMES:HxW, or '
                                        'motorcycle[:FRAMES:HxW]')
    parser.add_argument('--out', required=True, type=output_folder, help='bag folder to create')
    parser.add_argument('--storage', choices=['mcap', 'sqlite3'], default='mcap')
    parser.add_argument('--rate', type=positive_number, default=10.0,
                        help='frames per second of the stamps')
    parser.add_argument('--seed', type=int, default=0, help='synthetic data sets: random seed')
    parser.add_argument('--disparity-scale', type=positive_number, default=1.0,
                        help='stereo pairs: <name>_gt.png holds disparity times this (1 for the '
                             'quarter-size Cones, 4 for full-size Middlebury 2003)')
    parser.set_defaults(run=run)
