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
`cl-vision doctor`: can this machine run the package, on which device, and how to fix it.

The findings per device come from benchmarks/device_check.py; where no device can run
everything, it prints the install command for each kind of hardware.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict
import json

from cl_vision_nodes.benchmarks.device_check import DeviceReport, examine, INSTALL_ROUTES
from cl_vision_nodes.errors import CLVisionError
from cl_vision_nodes.opencl.devices import list_devices, select_device
from cl_vision_nodes.tools.cli_common import add_device_option


def print_report(report: DeviceReport, chosen: str | None) -> None:
    mark = '*' if report.index == chosen else ' '
    print(f'{mark} {report.index}  {report.kind}  {report.name}  '
          f'[{report.platform} {report.driver}]')
    print(f'    builds kernels: {"yes" if report.builds else "no: " + str(report.problem)}')
    if not report.builds:
        return
    print(f'    fp64: {"yes" if report.fp64 else "no"}  max work-group: {report.max_work_group}'
          f'  local memory: {report.local_memory_kib} KiB  image support: '
          f'{"yes" if report.image_support else "no"}  compute units: {report.compute_units}')
    if report.frame_ms is not None:
        print(f'    640x480 bgr8 upload + decode + download: {report.frame_ms:.2f} ms')
    for name, state in report.capabilities.items():
        print(f'    {name}: {state}')


def cmd_doctor(args: argparse.Namespace) -> int:
    reports = [examine(entry) for entry in list_devices()]
    try:
        chosen: str | None = select_device(args.device, warn=lambda _: None).index
    except CLVisionError:
        chosen = None
    if args.json:
        print(json.dumps({'devices': [asdict(r) for r in reports], 'chosen': chosen}, indent=1))
    else:
        for report in reports:
            print_report(report, chosen)
        print(f'(*: chosen by --device {args.device!r})' if chosen else
              f'no device matching {args.device!r} can build kernels')
    if any(r.runs_everything for r in reports):
        return 0
    if not args.json:
        print('No device runs every capability. Install an OpenCL driver:')
        for hardware, command in INSTALL_ROUTES:
            print(f'  {hardware}: {command}')
    return 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('doctor', help='check every OpenCL device: builds, limits, speed, '
                                           'capabilities; how to install a driver')
    add_device_option(parser)
    parser.add_argument('--json', action='store_true', help='print the findings as JSON')
    parser.set_defaults(run=cmd_doctor)
