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
`cl-vision`: the command-line face of the package (offline runs, devices, benchmarks).

Larger subcommands live in their own modules and add their parser here; expected
failures (``CLVisionError``) print one line on stderr and exit with code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn, Sequence

from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.opencl.devices import list_devices, select_device
from cl_vision_nodes.processes.child_processes import guarded
from cl_vision_nodes.ros.allocator import configure_allocator
from cl_vision_nodes.tools import (demo, disparity_cli, doctor, eval_cli, flow_cli, make_bag,
                                   rectify_cli, replay, surf_cli, tune_cli)
from cl_vision_nodes.tools.cli_common import (add_device_option, integer_in, output_file,
                                              positive_number)

EXIT_BAD_INPUT = 2


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (and exit code 2) like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f'{self.prog}: error: {message} (see --help)\n')


def cmd_devices(args: argparse.Namespace) -> int:
    chosen = select_device(args.device)
    for entry in list_devices():
        mark = '*' if entry == chosen else ' '
        print(f'{mark} {entry.platform_index}:{entry.device_index}  {entry.kind:5s} '
              f'{entry.name}  [{entry.platform}, {entry.device.max_compute_units} units, '
              f'{entry.device.global_mem_size // 2**20} MiB]')
    print(f'* = chosen by --device {args.device!r}')
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if (args.left is None) != (args.right is None):
        raise ParameterError('--left and --right name the two images of one pair: give both')
    if args.what in ('flow', 'all'):
        from cl_vision_nodes.tools import bench_flow
        bench_flow.main(args)
    if args.what in ('surf', 'all'):
        from cl_vision_nodes.tools import bench_surf
        bench_surf.main(args)
    if args.what in ('elas', 'all'):
        from cl_vision_nodes.tools import bench_elas
        bench_elas.main(args)
    if args.what == 'pipeline':
        from cl_vision_nodes.tools import bench_pipeline
        bench_pipeline.main(args)
    if args.what == 'transport':
        from cl_vision_nodes.tools import bench_transport
        return guarded('cl-vision bench transport', lambda: bench_transport.main(args) or 0)
    if args.what == 'node':
        from cl_vision_nodes.tools import bench_node
        return guarded('cl-vision bench node', lambda: bench_node.main(args) or 0)
    if args.what == 'soak':
        from cl_vision_nodes.tools import bench_soak
        return guarded('cl-vision bench soak', lambda: bench_soak.main(args) or 0)
    return 0


def frame_sizes(text: str) -> list[tuple[int, int]]:
    """Parse ``640x480,1280x720`` (argparse type): frame sizes, width first."""
    sizes = []
    for item in text.split(','):
        width, x, height = item.strip().partition('x')
        if not (x and width.isdigit() and height.isdigit() and int(width) >= 16
                and int(height) >= 16):
            raise argparse.ArgumentTypeError(f'expected WIDTHxHEIGHT[,WIDTHxHEIGHT...] of at '
                                             f'least 16x16, got {text!r}')
        sizes.append((int(width), int(height)))
    return sizes


def rates(text: str) -> list[float]:
    """Parse ``30,60,120`` (argparse type): input rates in Hz; ``none`` for none."""
    if text.strip().lower() == 'none':
        return []
    try:
        values = [float(item) for item in text.split(',')]
    except ValueError:
        values = []
    if not values or not all(0 < v < float('inf') for v in values):
        raise argparse.ArgumentTypeError(f'expected rates in Hz like 30,60,120 (or none), got '
                                         f'{text!r}')
    return values


def names(text: str) -> list[str]:
    """Parse a comma-separated list (argparse type)."""
    return [n.strip() for n in text.split(',') if n.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog='cl-vision', description=__doc__.strip().splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True, parser_class=OneLineParser)

    devices = sub.add_parser('devices', help='list OpenCL platforms/devices, mark the chosen one')
    add_device_option(devices)
    devices.set_defaults(run=cmd_devices)

    bench = sub.add_parser('bench', help='benchmarks with same-run comparisons')
    bench.add_argument('what', choices=['flow', 'surf', 'elas', 'all', 'node',
                                        'transport', 'pipeline', 'soak'],
                       help='node: latency of the nodes over DDS against compute and transport '
                            'floor; transport: the floor under allocator and Fast DDS settings; '
                            "pipeline: the pipeline's device work, one queue against one per "
                            'capability; soak: every node fed at --rate for --duration, resident '
                            'memory and open files sampled (none of these four is part of all)')
    bench.add_argument('--repeats', type=integer_in(1), default=20, help='timed runs per case')
    bench.add_argument('--image', help='surf: resize this image instead of a generated texture')
    bench.add_argument('--left', help='elas: left image of a rectified pair (with --right)')
    bench.add_argument('--right', help='elas: right image of the pair')
    bench.add_argument('--preset', choices=['robotics', 'middlebury'], default='robotics',
                       help='elas: libelas setting')
    bench.add_argument('--sizes', type=frame_sizes, default=[(640, 480), (1280, 720)],
                       help='flow, node, transport, soak (the first): frame sizes '
                            '(default 640x480,1280x720)')
    bench.add_argument('--frames', type=integer_in(1), help='node, transport: measured frames '
                       'per case after the warm-up (default 30 for node, 100 for transport)')
    bench.add_argument('--rates', type=rates, default=None,
                       help='node: after lockstep, --frames frames at each of these input rates '
                            'whatever the answers; the share answered and its latency '
                            '(default 30,60,120; none to skip)')
    bench.add_argument('--node-inputs', type=names, default=None,
                       help="node: comma-separated, each a run of every node: the nodes' input "
                            'subscriptions reliable (default: a frame lost in transport is not '
                            "the node's), best_effort (keep-last 1, as before the inputs took "
                            "the publisher's reliability) or default (as the node declares them, "
                            'as a user runs it)')
    bench.add_argument('--camera', choices=['profile', 'dds-defaults'], default='profile',
                       help="node: the publisher with the package's Fast DDS profile, or as a "
                            "user's camera driver on Fast DDS' defaults (reliable keep-last 5)")
    bench.add_argument('--node-encodings', type=names, default=None,
                       help='node: image encodings of the frames sent (default mono8; bgr8)')
    bench.add_argument('--node-param', action='append', metavar='NAME=VALUE',
                       help='node: a parameter for every node process (repeatable), e.g. '
                            'executor=single_threaded; soak: for every node that has it, e.g. '
                            'method=bm')
    bench.add_argument('--nodes', type=names, default=None,
                       help='node, soak: comma-separated nodes (default: every one)')
    bench.add_argument('--encodings', type=names, default=['32FC2', 'bgr8'],
                       help='transport: image encodings (default 32FC2,bgr8)')
    bench.add_argument('--variants', type=names, default=[],
                       help='transport: Fast DDS profile variants beside the allocator '
                            'comparison (names in bench_transport.VARIANTS; "all" for every one)')
    bench.add_argument('--rate', type=positive_number, default=30.0,
                       help='transport, soak: images per second')
    bench.add_argument('--duration', type=positive_number, default=1800.0,
                       help='soak: seconds the camera sends (default 1800)')
    bench.add_argument('--sample', type=positive_number, default=60.0,
                       help="soak: seconds between samples of the nodes' memory and open files "
                            '(default 60)')
    bench.add_argument('--timeout', type=positive_number, default=120.0,
                       help='node, transport, soak: seconds to wait for processes to connect '
                            'and for each answer (the first includes kernel builds)')
    bench.add_argument('--domain-id', type=integer_in(0, 232),
                       help='node, transport, soak: ROS_DOMAIN_ID (default: a random one)')
    bench.add_argument('--kernels', nargs='?', const='device', choices=['device', 'gpu', 'cpu'],
                       help='flow: launches and device ms per frame of each kernel of every '
                            'method instead of frame times, in the formulation of the device '
                            '(default) or the named one')
    bench.add_argument('--json', type=output_file,
                       help='flow, node, transport, soak: write the rows here')
    add_device_option(bench)
    bench.set_defaults(run=cmd_bench)

    demo.add_parser(sub)
    doctor.add_parser(sub)
    eval_cli.add_parser(sub)
    flow_cli.add_parser(sub)
    make_bag.add_parser(sub)
    replay.add_parser(sub)
    surf_cli.add_parser(sub)
    rectify_cli.add_parser(sub)
    disparity_cli.add_parser(sub)
    tune_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    configure_allocator()  # replay, eval, bench and demo move large messages; nodes inherit it
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except CLVisionError as exc:
        print(f'cl-vision {args.command}: error: {exc}', file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == '__main__':
    sys.exit(main())
