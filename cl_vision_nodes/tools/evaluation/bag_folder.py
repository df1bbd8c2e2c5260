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
`cl-vision eval FOLDER --out DIR`: every rosbag2 folder inside FOLDER, one combined report.

Each bag (a folder holding metadata.yaml, at any depth) is evaluated as `cl-vision eval BAG`
evaluates one (command.evaluate, the same options for every bag) into DIR/<its path inside
FOLDER>, one after another in this process or, with ``--ray ADDRESS``, spread over a Ray cluster
(ray_eval.py). Each bag runs on a ROS domain of its own, the first (``--domain-id``, else a
random one) plus the bag's index: bags played at the same time on one machine must not hear each
other's nodes. DIR/report.json and report.md then hold a row per bag and the totals
(combined.py). A bag that fails (no usable camera, a node that does not start) gets its error in
its row and the others go on; the run then exits 1.
"""
from __future__ import annotations

import argparse
from pathlib import Path
import random
import sys

from cl_vision_nodes.errors import CLVisionError, DataFormatError, ParameterError
from cl_vision_nodes.tools.evaluation.combined import BagResult, write_combined
from cl_vision_nodes.tools.evaluation.command import MAX_DOMAIN_ID, RANDOM_DOMAINS
from cl_vision_nodes.tools.evaluation.compare import load_report

BAG_METADATA = 'metadata.yaml'
EXIT_FAILED_BAGS = 1


def is_bag(path: Path) -> bool:
    """Say whether ``path`` is a rosbag2 folder (it holds the bag's metadata.yaml)."""
    return (path / BAG_METADATA).is_file()


def find_bags(folder: Path, out: Path) -> list[Path]:
    """Return the rosbag2 folders inside ``folder``, sorted, none of them inside ``out``."""
    skipped = out.resolve()
    found = (p.parent for p in folder.rglob(BAG_METADATA) if p.is_file())
    return sorted(p for p in found if p != folder and not p.resolve().is_relative_to(skipped))


def is_bag_folder(path: Path) -> bool:
    """Say whether ``path`` is a folder of bags rather than one bag (eval's BAG argument)."""
    return path.is_dir() and not is_bag(path) and \
        any(p.is_file() for p in path.rglob(BAG_METADATA))


def outputs(folder: Path, out: Path) -> dict[str, tuple[Path, Path]]:
    """
    Return each bag's name (its path inside the folder) with its path and its eval folder.

    Refused before anything runs: an output that exists already (eval does not overwrite).
    """
    bags = {bag.relative_to(folder).as_posix(): bag for bag in find_bags(folder, out)}
    for name in bags:
        if (out / name / 'bag').exists():
            raise DataFormatError(f'{out / name / "bag"} exists already, not overwriting')
    return {name: (bag, out / name) for name, bag in bags.items()}


def first_domain(args: argparse.Namespace) -> int:
    """Return the ROS domain of the folder's first bag: ``--domain-id``, else a random one."""
    return random.randint(1, RANDOM_DOMAINS) if args.domain_id is None else args.domain_id


def domain_id(first: int, index: int) -> int:
    """Return the ROS domain of the bag at ``index``: ``first`` + index, within DDS' range."""
    return (first + index) % (MAX_DOMAIN_ID + 1)


def bag_arguments(args: argparse.Namespace, bag: Path, out: Path,
                  domain_id: int | None) -> argparse.Namespace:
    """Return eval's options for one bag of the folder: the folder's, with this bag's paths."""
    return argparse.Namespace(**{**vars(args), 'bag': str(bag), 'out': out,
                                 'domain_id': domain_id, 'ray': None})


def evaluate_one(args: argparse.Namespace) -> tuple[int, str | None]:
    """
    Evaluate one bag (``bag_arguments``); return the exit code and the error if one stopped it.

    Guarded (child_processes): on a Ray worker too, nothing it starts outlives it.
    """
    from cl_vision_nodes.tools.child_processes import guarded
    from cl_vision_nodes.tools.evaluation.command import evaluate
    errors = []

    def body() -> int:
        try:
            return evaluate(args)
        except CLVisionError as exc:
            print(f'cl-vision eval: {args.bag}: {exc}', file=sys.stderr, flush=True)
            errors.append(str(exc))
            return EXIT_FAILED_BAGS

    return guarded('cl-vision eval', body), (errors or [None])[0]


def result_of(name: str, out: Path, error: str | None) -> BagResult:
    """Return a bag's result from its eval folder (none where it failed)."""
    return BagResult(name, None if error else load_report(out), error)


def evaluate_folder(args: argparse.Namespace) -> int:
    """Evaluate every bag of the folder ``args.bag``, here or on ``args.ray``; write the report."""
    if args.out is None:
        raise ParameterError('eval needs --out DIR for a folder of bags')
    folder, out = Path(args.bag), Path(args.out)
    bags = outputs(folder, out)
    print(f'cl-vision eval: {len(bags)} bags in {folder}', flush=True)
    if args.ray:
        from cl_vision_nodes.tools.evaluation.ray_eval import evaluate_on_ray
        results, code = evaluate_on_ray(args, bags), 0
    else:
        results, code, first = [], 0, first_domain(args)
        for index, (name, (bag, bag_out)) in enumerate(bags.items()):
            print(f'cl-vision eval: bag {name}', flush=True)
            code, error = evaluate_one(bag_arguments(args, bag, bag_out,
                                                     domain_id(first, index)))
            results.append(result_of(name, bag_out, error))
            if code not in (0, EXIT_FAILED_BAGS):  # interrupted: what is done is reported
                break
    out.mkdir(parents=True, exist_ok=True)
    print(f'report: {write_combined(out, results, folder, args.ray).resolve()}')
    failed = [result.name for result in results if result.error]
    if failed:
        print(f"cl-vision eval: {len(failed)} of {len(bags)} bags failed: {', '.join(failed)}",
              file=sys.stderr)
    return code or (EXIT_FAILED_BAGS if failed else 0)
