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
`cl-vision eval FOLDER --ray ADDRESS`: the folder's bags spread over a Ray cluster.

One Ray task per bag, each asking for one GPU, or one CPU slot on a cluster without GPUs
(ray_cluster.py): Ray's scheduler runs as many bags at once as the cluster has such slots. A
task gets its bag's files through Ray's object store (no shared file system needed), evaluates
it with the per-bag function it is given (one_bag.evaluate, run by bag_folder.evaluate_one) in a
temporary folder of its machine and sends the eval folder back, written to OUT/<bag> here. Bags
played at the same time on one machine must not hear each other's nodes over DDS: each bag runs
on a ROS domain of its own (bag_folder.domain_id). A task whose worker dies (killed, out of
memory) is retried once, then its row in the report says so.
"""
from __future__ import annotations

from dataclasses import replace
import json
from pathlib import Path
import tempfile

from cl_vision_nodes.evaluation.bag_folder import (domain_id, Evaluate, evaluate_one, first_domain,
                                                   for_bag, result_of)
from cl_vision_nodes.evaluation.combined import BagResult
from cl_vision_nodes.evaluation.compare import load_report, REPORT
from cl_vision_nodes.evaluation.one_bag import EvalOptions
from cl_vision_nodes.evaluation.report import markdown
from cl_vision_nodes.processes.ray_cluster import connect, first_line, slots

WORKER_RETRIES = 1


def folder_files(folder: Path) -> dict[str, bytes]:
    """Return every file under ``folder`` by its path inside it."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob('*')) if p.is_file()}


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write ``folder_files``' answer back under ``folder``."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def relocate(out: Path, bag: Path) -> None:
    """Point a bag's report at this machine's paths (the worker ran in a temporary folder)."""
    report = load_report(out)
    report.update(bag=str(bag), output_bag=str(out / 'bag'))
    (out / REPORT).write_text(json.dumps(report, indent=2) + '\n')
    (out / 'report.md').write_text(markdown(report))


def evaluate_remotely(evaluate: Evaluate, options: EvalOptions, bag_files: dict[str, bytes],
                      domain: int) -> tuple[str | None, dict[str, bytes]]:
    """
    Evaluate one bag on a Ray worker (a Ray task); return its error, if any, and eval folder.

    The folder comes back also from an interrupted run: its report says so.
    """
    with tempfile.TemporaryDirectory(prefix='cl_vision_eval_') as tmp:
        bag, out = Path(tmp) / 'bag', Path(tmp) / 'out'
        write_files(bag, bag_files)
        _, error = evaluate_one(evaluate, for_bag(replace(options, status_lines=True), bag, out,
                                                  domain))
        return error, ({} if error else folder_files(out))


def evaluate_on_ray(evaluate: Evaluate, options: EvalOptions, bags: dict[str, tuple[Path, Path]],
                    address: str) -> list[BagResult]:
    """
    Evaluate the bags (name -> (bag, eval folder)) on the cluster at ``address``.

    The paths in ``options`` are this machine's: each worker gets its own (``for_bag``).
    """
    ray, connected = connect(address)
    try:
        cluster = slots(ray)
        print(f'cl-vision eval: Ray cluster at {address}: {cluster}, one bag on each',
              flush=True)
        task = ray.remote(evaluate_remotely).options(max_retries=WORKER_RETRIES,
                                                     **cluster.resources)
        first = first_domain(options)
        futures = {name: task.remote(evaluate, options, folder_files(bag), domain_id(first, index))
                   for index, (name, (bag, _)) in enumerate(bags.items())}
        results = []
        for name, future in futures.items():
            try:
                error, files = ray.get(future)
            except ray.exceptions.RayError as exc:
                error, files = f'the Ray worker failed: {first_line(exc)}', {}
                print(f'cl-vision eval: {name}: {error}', flush=True)
            write_files(bags[name][1], files)
            if error is None:
                relocate(bags[name][1], bags[name][0])
            results.append(result_of(name, bags[name][1], error))
        return results
    finally:
        if connected:
            ray.shutdown()
