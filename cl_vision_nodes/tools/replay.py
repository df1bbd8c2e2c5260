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

"""`cl-vision replay BAG`: the face of bags/replay.py."""
from __future__ import annotations

import argparse
from pathlib import Path

from cl_vision_nodes.bags.replay import replay, ReplayOptions
from cl_vision_nodes.tools.cli_common import non_negative_number, positive_number


def run(args: argparse.Namespace) -> int:
    return replay(ReplayOptions(Path(args.bag), args.topics, args.start_offset, args.rate,
                                args.loop, args.clock, args.wait_subscribers))


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('replay', help='publish a rosbag2 (mcap or sqlite3) with its timing')
    parser.add_argument('bag', help='bag folder (or .mcap/.db3 file)')
    parser.add_argument('--rate', type=positive_number, default=1.0,
                        help='speed factor (2 = twice as fast)')
    parser.add_argument('--loop', action='store_true', help='start over at the end')
    parser.add_argument('--topics', nargs='+', help='only these topics')
    parser.add_argument('--start-offset', type=non_negative_number, default=0.0,
                        help='skip the first SECONDS of the bag')
    parser.add_argument('--clock', action='store_true', help='publish the bag time on /clock')
    parser.add_argument('--wait-subscribers', type=non_negative_number, default=1.0,
                        help='wait up to SECONDS for every topic to have a subscriber')
    parser.set_defaults(run=run)
