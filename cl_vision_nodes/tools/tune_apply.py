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
`cl-vision tune --apply NODE_NAME`: a tune's values set on a running node, live.

The values come from the parameter file a tune wrote (``--from FILE``, by default
``<--out>/<--node>.yaml``): its ``/**`` section and any section for this node's name, nested
namespaces flattened (``flow: {method: hs}`` is ``flow.method``), read as the node reads its
own files (ros/start_parameters.py). They are sent through the node's parameter services
(ros/remote_parameters.py); every value the node refuses is named with its reason. Exit 0 when
the node took every value (or had it already), 1 when it refused some (the others stay set), 2
when it does not answer or the file is unusable (also for a value no ROS parameter can hold,
e.g. a list of mixed types).
"""
from __future__ import annotations

import argparse
from pathlib import Path
import sys

from cl_vision_nodes.errors import DataFormatError, ParameterError
from cl_vision_nodes.params import Value
from cl_vision_nodes.ros.start_parameters import file_parameters
from cl_vision_nodes.tools.cli_common import positive_number

DEFAULT_TIMEOUT_S = 10.0
EXIT_REFUSED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--apply``, ``--from`` and ``--apply-timeout`` to the tune command."""
    group = parser.add_argument_group('live tuning (no search)')
    group.add_argument('--apply', metavar='NODE_NAME',
                       help="set a tune's values on this running node through its parameter "
                            'services (what ros2 param load does), e.g. /camera/disparity_node')
    group.add_argument('--from', dest='from_file', type=Path, metavar='FILE',
                       help='--apply: the parameter file to apply (default: OUT/NODE.yaml of '
                            '--out and --node)')
    group.add_argument('--apply-timeout', type=positive_number, default=DEFAULT_TIMEOUT_S,
                       metavar='S', help='--apply: seconds to wait for the node to answer '
                                         f'(default {DEFAULT_TIMEOUT_S:g})')


def parameter_file_values(path: Path, node_name: str) -> dict[str, Value]:
    """
    Return the values a parameter file sets on ``node_name``, its node keys read as rcl does.

    DataFormatError if the file is unusable or sets nothing for the node.
    """
    try:
        values = file_parameters(str(path), '/' + node_name.lstrip('/'))
    except ParameterError as exc:
        raise DataFormatError(str(exc)) from None
    if not values:
        raise DataFormatError(f'{path}: no ros__parameters for {node_name} (expected a /** or '
                              'node-name section, as cl-vision tune writes)')
    return values


def parameter_file(args: argparse.Namespace) -> Path:
    """Return the file to apply: ``--from``, else ``<--out>/<--node>.yaml``."""
    if args.from_file is not None:
        return args.from_file
    out, node = getattr(args, 'out', None), getattr(args, 'node', None)
    if out is None or node is None:
        raise DataFormatError('--apply needs the parameter file: --from FILE (or --out DIR and '
                              '--node NODE of the tune that wrote DIR/NODE.yaml)')
    return Path(out) / f'{node}.yaml'


def run(args: argparse.Namespace) -> int:
    """Apply the file's values to ``args.apply``; print what was set and what was refused."""
    path = parameter_file(args)
    from cl_vision_nodes.ros.remote_parameters import apply_parameters  # rclpy: ROS only
    values = parameter_file_values(path, args.apply)
    try:
        applied = apply_parameters(args.apply, values, args.apply_timeout)
    except DataFormatError as exc:  # a value no parameter can hold
        raise DataFormatError(f'{path}: {exc}') from None
    for name, value in applied.set.items():
        print(f'{args.apply}: set {name} = {value!r}')
    print(f'{args.apply}: {len(applied.set)} set, {len(applied.unchanged)} unchanged, '
          f'{len(applied.refused)} refused (from {path})')
    for name, reason in applied.refused.items():
        print(f'{args.apply}: refused {name}: {reason}', file=sys.stderr)
    return EXIT_REFUSED if applied.refused else 0
