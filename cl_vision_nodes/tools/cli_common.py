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

"""Options every algorithm subcommand shares: device, --param with the ROS names, profiling."""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable, Mapping

from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import ParameterSchema, Value


def finite_number(text: str) -> float:
    """Parse a finite float (argparse type): a plain ``value <= 0`` check lets NaN through."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}') from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'expected a finite number, got {text!r}')
    return value


def positive_number(text: str) -> float:
    """Parse a finite float > 0 (argparse type): a rate, a timeout."""
    value = finite_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f'must be > 0, got {text!r}')
    return value


def non_negative_number(text: str) -> float:
    """Parse a finite float >= 0 (argparse type): an offset, a wait."""
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be >= 0, got {text!r}')
    return value


def integer_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """Make an argparse type: an int in [low, high] (high None: no upper bound)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}') from None
        if value < low or (high is not None and value > high):
            bounds = f'>= {low}' if high is None else f'in {low}..{high}'
            raise argparse.ArgumentTypeError(f'must be {bounds}, got {text!r}')
        return value
    return parse


def output_file(text: str) -> Path:
    """
    Check a file (or bag folder) to create, in a folder that exists (argparse type).

    Checked before any work starts, so a bad path costs nothing and leaves nothing behind.
    """
    path = Path(text)
    if path.parent.is_file():
        raise argparse.ArgumentTypeError(f'{text}: {path.parent} is a file, not a folder')
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f'{text}: folder {path.parent} does not exist')
    return path


def output_folder(text: str) -> Path:
    """
    Create a folder to write into, with its parents (argparse type).

    No part of it may be a file.
    """
    path = Path(text)
    existing = next(p for p in (path, *path.parents) if p.exists())  # '.' or '/' at the latest
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f'{text}: {existing} is a file, not a folder')
    return path


def add_device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--device', default='auto',
                        help='OpenCL device: auto, gpu, cpu, P:D or a name substring '
                             '(default: $CL_VISION_DEVICE or auto)')


def add_algorithm_options(parser: argparse.ArgumentParser) -> None:
    add_device_option(parser)
    parser.add_argument('--param', action='append', default=[], metavar='NAME=VALUE',
                        help='a parameter of the node, same name and range as the ROS '
                             'parameter (repeatable)')
    parser.add_argument('--profile', action='store_true',
                        help='print the device time of every stage')


def algorithm_params(schema: ParameterSchema, args: argparse.Namespace,
                     preset: Mapping[str, Value] | None = None,
                     **overrides: Value) -> dict[str, Value]:
    """
    Return the schema's values; a bad one raises ParameterError.

    Defaults, then a ``preset``, then ``--param``, ``--device``, ``--profile`` and ``overrides``
    (explicit options such as ``--method``).
    """
    base = schema.validate(schema.defaults(), preset or {}, allow_read_only=True)
    values = schema.parse_assignments(args.param, base)
    explicit = {k: v for k, v in overrides.items() if v is not None}
    if args.device != 'auto':
        explicit['device'] = args.device
    if args.profile:
        explicit['profile'] = True
    return schema.validate(values, explicit, allow_read_only=True)


def runtime_for(values: dict[str, Value]) -> ClRuntime:
    return ClRuntime(str(values['device']), profile=bool(values['profile']))


def print_profile(runtime: ClRuntime) -> None:
    stages = runtime.profiler.collect()
    if stages:
        print('device ms: ' + ', '.join(f'{k} {v:.2f}' for k, v in stages.items()))
