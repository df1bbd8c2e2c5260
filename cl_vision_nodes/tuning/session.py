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
One tune from start to end: search, held-out comparison, parameter file and report.

The algorithms run in this process (or worker processes, or the workers of a Ray cluster:
tuning/ray_pool.py) on the OpenCL device over the bag's frames. The first half of the frames
tunes, the second is held out: the start values (the schema's defaults with the given
assignments) and the tuned ones are compared there. The tuned values are those of the Pareto
trial (score against ms per frame) with the best score within ``TIME_BUDGET`` times the start
values' ms per frame; they are written as ``OUT/<node>.yaml``, the node's parameter file. The
study is stored in ``OUT/<node>.journal``: a resumed tune continues it after an interruption.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from cl_vision_nodes.flow.schema import resolve_method
from cl_vision_nodes.opencl.devices import list_devices, resolve_spec, select_device
from cl_vision_nodes.tuning.evaluator import Evaluator
from cl_vision_nodes.tuning.frames import load_frames, TuneFrames
from cl_vision_nodes.tuning.output import write_params
from cl_vision_nodes.tuning.pictures import strip_answers
from cl_vision_nodes.tuning.pool import EvaluatorPool, InProcessPool, ProcessPool
from cl_vision_nodes.tuning.report import changed_values, write_report
from cl_vision_nodes.tuning.space import node_schema, parse_params, search_space
from cl_vision_nodes.tuning.study import held_out_comparison, Outcome, run_study, TIME_BUDGET
from optuna.trial import TrialState

OnTrial = Callable[[Any, Any], None]
"""Called with (study, trial) as each trial finishes (Optuna's callback)."""


@dataclass(frozen=True)
class TuneOptions:
    """What `cl-vision tune` was asked: the bag, the node, the search and where it runs."""

    bag: Path
    node: str
    out: Path
    params: str | None = None  # NAME or NAME=LOW:HIGH, comma-separated; None: the node's own
    start: tuple[str, ...] = ()  # NAME=VALUE start values
    trials: int = 100
    frames: int = 20
    workers: int | None = None
    ray: str | None = None  # a Ray cluster's address
    seed: int = 0
    resume: bool = False
    device: str = 'auto'

    @property
    def journal(self) -> Path:
        """Return the study's journal file (a resumed tune continues it)."""
        return self.out / f'{self.node}.journal'


@dataclass(frozen=True)
class TuneResult:
    """What a tune found (``lines`` say it) and the files it wrote."""

    lines: list[str]
    parameter_file: Path
    report: Path


def worker_devices(device: str, workers: int) -> list[str]:
    """
    Return one device (``P:D``) per worker, checked here: a bad one is one line, not N crashes.

    ``auto`` spreads them over the machine's GPUs (several workers share one when there are
    fewer GPUs); anything else (or a machine without a GPU) puts every worker on that device.
    """
    request = resolve_spec(device)
    gpus = [e.index for e in list_devices() if e.is_gpu] if request == 'auto' else []
    if not gpus:
        return [select_device(request).index] * workers
    return [gpus[i % len(gpus)] for i in range(workers)]


def flow_method(node: str, start: Mapping[str, Any], device: str) -> str | None:
    """Return the flow method the trials run (``auto`` resolved on ``device``), None without."""
    key = {'flow': 'method', 'vision_pipeline': 'flow.method'}.get(node)
    if key is None:
        return None
    return resolve_method(str(start[key]), select_device(resolve_spec(device)).is_gpu)


def evaluator_pool(options: TuneOptions, frames: TuneFrames) -> EvaluatorPool:
    """Return where the trials run: on the Ray cluster, in worker processes or in this one."""
    if options.ray:
        from cl_vision_nodes.tuning.ray_pool import RayPool  # ray: optional, only for --ray
        return RayPool(options.ray, options.bag, options.node, options.frames, options.workers)
    if options.workers is None or options.workers == 1:
        return InProcessPool(options.device, frames)
    return ProcessPool(worker_devices(options.device, options.workers), options.bag,
                       options.node, options.frames)


def summary(outcome: Outcome, held_out_frames: int) -> list[str]:
    """Return the lines that say what the search found and how it did on the held-out frames."""
    states = [t.state for t in outcome.study.trials]
    failed = sum('error' in t.user_attrs for t in outcome.study.trials
                 if t.state == TrialState.FAIL)
    reference, before, after = outcome.reference, outcome.start_held_out, outcome.tuned_held_out
    budget = f"within {TIME_BUDGET:g}x the start values' {reference.ms_per_frame:.1f} ms per frame"
    if outcome.chosen is None:
        choice = f'no Pareto trial {budget}: the start values are kept'
    else:
        choice = (f'tuned = trial {outcome.chosen.number}, the Pareto trial with the best '
                  f'{reference.metric} {budget}')
    ratio = after.score / before.score if before.score else float('nan')
    changed = ', '.join(f'{name} {start!r} -> {tuned!r}' for name, start, tuned
                        in changed_values(outcome.start, outcome.tuned)) or 'none'
    return [f'{len(states)} trials: {states.count(TrialState.COMPLETE)} complete, {failed} '
            f'failed, {states.count(TrialState.FAIL) - failed} interrupted; Pareto front of '
            f'{len(outcome.study.best_trials)}', choice,
            f'held-out frames ({held_out_frames}): {reference.metric} {before.score:.4g} -> '
            f'{after.score:.4g} ({ratio:.2f}x), ms per frame {before.ms_per_frame:.1f} -> '
            f'{after.ms_per_frame:.1f}',
            f'changed: {changed}']


class TuneSession:
    """A tune: its frames, search space and evaluator pool, then the search and its files."""

    def __init__(self, options: TuneOptions):
        """Load the frames and start the pool (``description`` says what will be searched)."""
        self.options = options
        self.start = node_schema(options.node).parse_assignments(list(options.start))
        names, ranges = parse_params(options.params) if options.params else (None, {})
        self.space = search_space(options.node, names, ranges,
                                  flow_method(options.node, self.start, options.device))
        self.frames = load_frames(options.bag, options.node, options.frames)
        self.description = (f'{self.frames.description}; {len(self.frames.tuning)} frames to '
                            f'tune on, {len(self.frames.held_out)} held out; searching '
                            f'{", ".join(self.space)}')
        self.pool = evaluator_pool(options, self.frames)

    def search(self, on_trial: OnTrial) -> TuneResult:
        """
        Search, compare on the held-out frames, write the parameter file and the report.

        KeyboardInterrupt ends the search with the finished trials kept in the journal. The
        pool is closed either way.
        """
        options = self.options
        try:
            options.out.mkdir(parents=True, exist_ok=True)
            study = run_study(self.pool, self.space, options.journal, options.trials,
                              options.seed, options.resume, on_trial, base=self.start)
            outcome = held_out_comparison(self.pool, study, self.start)
        finally:
            self.pool.close()
        lines = summary(outcome, len(self.frames.held_out))
        path = write_params(options.out, options.node, outcome.tuned, str(options.bag), lines[2])
        evaluator = self.pool.evaluator if isinstance(self.pool, InProcessPool) else \
            Evaluator(options.device, self.frames)
        strip = strip_answers(lambda values: evaluator.answers(values, 'held_out'),
                              [frame.left_gray for frame in self.frames.held_out])
        report = write_report(options.out, outcome.study, options.node, outcome.start_held_out,
                              outcome.tuned_held_out, outcome.tuned, outcome.start, strip)
        return TuneResult(lines, path, report)
