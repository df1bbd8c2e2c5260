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

"""`cl-vision bench surf`: the face of benchmarks/surf_speed.py (what it measures)."""
from __future__ import annotations

import argparse

from cl_vision_nodes.benchmarks.surf_speed import run
from cl_vision_nodes.benchmarks.timing import format_rows


def main(args: argparse.Namespace) -> None:
    source = args.image or 'generated texture'
    print(f'SURF detect + describe, ms per frame (upload and download included), {source}')
    print(format_rows(run(args.device, args.repeats, args.image), 'SIFT',
                      lambda r: r.method == 'SIFT'))
