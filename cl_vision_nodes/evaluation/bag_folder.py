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
A folder of bags: finding them, each its eval folder and ROS domain, one bag's run.

Each bag (a folder holding metadata.yaml, at any depth) is evaluated as `cl-vision eval BAG`
evaluates one (the same options for every bag) into DIR/<its path inside FOLDER>. Each bag runs
on a ROS domain of its own, the first (``--domain-id``, else a random one) plus the bag's index:
bags played at the same time on one machine must not hear each other's nodes. A bag that fails
(no usable camera, a node that does not start) gets its error in its row and the others go on.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
import random
import sys
from typing import Callable

from cl_vision_nodes.errors import CLVisionError, DataFormatError
from cl_vision_nodes.evaluation.combined import BagResult
from cl_vision_nodes.evaluation.compare import load_report
from cl_vision_nodes.evaluation.one_bag import EvalOptions, MAX_DOMAIN_ID, RANDOM_DOMAINS
from cl_vision_nodes.processes.child_processes import guarded

BAG_METADATA = 'metadata.yaml'
EXIT_FAILED_BAGS = 1

Evaluate = Callable[[EvalOptions], int]
"""One bag's evaluation (one_bag.evaluate): the folder runners take it as a parameter."""


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


def first_domain(options: EvalOptions) -> int:
    """Return the ROS domain of the folder's first bag: ``--domain-id``, else a random one."""
    return random.randint(1, RANDOM_DOMAINS) if options.domain_id is None else options.domain_id


def domain_id(first: int, index: int) -> int:
    """Return the ROS domain of the bag at ``index``: ``first`` + index, within DDS' range."""
    return (first + index) % (MAX_DOMAIN_ID + 1)


def for_bag(options: EvalOptions, bag: Path, out: Path, domain: int) -> EvalOptions:
    """Return eval's options for one bag of the folder: the folder's, with this bag's paths."""
    return replace(options, bag=bag, out=out, domain_id=domain)


def evaluate_one(evaluate: Evaluate, options: EvalOptions) -> tuple[int, str | None]:
    """
    Evaluate one bag (``for_bag``); return the exit code and the error if one stopped it.

    Guarded (child_processes): on a Ray worker too, nothing it starts outlives it.
    """
    errors = []

    def body() -> int:
        try:
            return evaluate(options)
        except CLVisionError as exc:
            print(f'cl-vision eval: {options.bag}: {exc}', file=sys.stderr, flush=True)
            errors.append(str(exc))
            return EXIT_FAILED_BAGS

    return guarded('cl-vision eval', body), (errors or [None])[0]


def result_of(name: str, out: Path, error: str | None) -> BagResult:
    """Return a bag's result from its eval folder (none where it failed)."""
    return BagResult(name, None if error else load_report(out), error)
