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

The bags (bag_folder.py) run one after another in this process or, with a Ray address, spread
over a Ray cluster (ray_eval.py). DIR/report.json and report.md then hold a row per bag and the
totals (combined.py); a bag that failed makes the run exit 1.
"""
from __future__ import annotations

from pathlib import Path
import sys

from cl_vision_nodes.evaluation.bag_folder import (domain_id, Evaluate, evaluate_one,
                                                   EXIT_FAILED_BAGS, first_domain, for_bag,
                                                   outputs, result_of)
from cl_vision_nodes.evaluation.combined import write_combined
from cl_vision_nodes.evaluation.one_bag import EvalOptions
from cl_vision_nodes.evaluation.ray_eval import evaluate_on_ray


def evaluate_folder(evaluate: Evaluate, options: EvalOptions, ray: str | None) -> int:
    """Evaluate every bag of the folder ``options.bag``, here or on ``ray``; write the report."""
    folder, out = Path(options.bag), Path(options.out)
    bags = outputs(folder, out)
    print(f'cl-vision eval: {len(bags)} bags in {folder}', flush=True)
    if ray:
        results, code = evaluate_on_ray(evaluate, options, bags, ray), 0
    else:
        results, code, first = [], 0, first_domain(options)
        for index, (name, (bag, bag_out)) in enumerate(bags.items()):
            print(f'cl-vision eval: bag {name}', flush=True)
            code, error = evaluate_one(evaluate, for_bag(options, bag, bag_out,
                                                         domain_id(first, index)))
            results.append(result_of(name, bag_out, error))
            if code not in (0, EXIT_FAILED_BAGS):  # interrupted: what is done is reported
                break
    out.mkdir(parents=True, exist_ok=True)
    print(f'report: {write_combined(out, results, folder, ray).resolve()}')
    failed = [result.name for result in results if result.error]
    if failed:
        print(f"cl-vision eval: {len(failed)} of {len(bags)} bags failed: {', '.join(failed)}",
              file=sys.stderr)
    return code or (EXIT_FAILED_BAGS if failed else 0)
