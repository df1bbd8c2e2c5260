"""Options every algorithm subcommand shares: device, --param with the ROS names, profiling."""
from __future__ import annotations

import argparse
from typing import Mapping

from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.params import ParameterSchema, Value


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
    """The schema's values: defaults, then a ``preset``, then ``--param``, ``--device``,
    ``--profile`` and ``overrides`` (explicit options such as ``--method``); a bad one raises
    ParameterError."""
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
