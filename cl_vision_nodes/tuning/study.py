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
The search: Optuna ask/tell from this process, trials evaluated by a pool, stored in one file.

Two objectives, both minimised: the score (``TrialResult.score``) and ms per frame; Optuna's TPE
sampler (multi-objective, seeded) proposes values and the study's best trials are the Pareto
front. The study lives in a JournalFileBackend file, written as each trial is asked and told, so
an interruption loses only the trials in flight: they are told FAIL on Ctrl-C, and a crash
leaves them RUNNING, which ``resume`` marks FAIL; these do not count towards ``trials``.
Finished trials (COMPLETE, or FAIL with an ``error``) count and are never repeated; the sampler
is seeded with ``seed`` plus the number of trials in the study, so a resumed search does not
propose its first values again. A trial whose evaluation raised CLVisionError (a value the
algorithms or the device refuse, a non-finite score) or whose worker died is told FAIL with the
reason in its user attribute ``error``, and the search goes on. The start values (``base``) are
enqueued as the first trial where the space holds them.
"""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, fields
import math
from pathlib import Path
from typing import Callable, Mapping

from cl_vision_nodes.errors import CLVisionError, DataFormatError
from cl_vision_nodes.params import Value
from cl_vision_nodes.tuning.evaluator import TrialResult
from cl_vision_nodes.tuning.pool import EvaluatorPool
from cl_vision_nodes.tuning.space import AT_MOST, Distribution
import optuna
from optuna.distributions import IntDistribution
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, Trial, TrialState

STUDY_NAME = 'tune'
TRIAL_FIELDS = tuple(field.name for field in fields(TrialResult))
"""Kept as user attributes of each complete trial."""
DIRECTIONS = ('minimize', 'minimize')
OnTrial = Callable[[optuna.Study, FrozenTrial], None]


def open_study(storage: Path, seed: int, resume: bool) -> optuna.Study:
    """
    Create the study in ``storage`` or, with ``resume``, load it and fail its stale trials.

    DataFormatError when ``storage`` exists without ``resume`` or is missing with it.
    """
    if storage.exists() != resume:
        raise DataFormatError(f'{storage} exists: add --resume to continue that tune, or choose '
                              'another --out' if storage.exists() else
                              f'--resume: no tune to continue in {storage.parent}')
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the caller reports the trials
    journal = JournalStorage(JournalFileBackend(str(storage)))
    if resume:
        study = optuna.load_study(study_name=STUDY_NAME, storage=journal)
        fail_running(study)
    else:
        study = optuna.create_study(study_name=STUDY_NAME, storage=journal,
                                    directions=list(DIRECTIONS))
    study.sampler = optuna.samplers.TPESampler(seed=seed + len(study.trials))
    return study


def fail_running(study: optuna.Study) -> None:
    """
    Tell FAIL every trial still RUNNING (in flight when interrupted, or asked, not started).

    Without an ``error``: an interrupted trial does not count as finished.
    """
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study.tell(trial.number, state=TrialState.FAIL)


def finished_trials(study: optuna.Study) -> int:
    """Count the trials that ran to an end: COMPLETE, or FAIL for a reason (``error``)."""
    return sum(trial.state == TrialState.COMPLETE or 'error' in trial.user_attrs
               for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                                     TrialState.FAIL)))


def _holds(dist: Distribution, value: Value) -> bool:
    """Say whether ``value`` lies in ``dist`` (an Int, Float or Categorical distribution)."""
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return value in dist.choices
    return dist.low <= value <= dist.high


def _tell(study: optuna.Study, trial: Trial, future: Future[TrialResult]) -> None:
    try:
        result = future.result()
        if not (math.isfinite(result.score) and math.isfinite(result.ms_per_frame)):
            raise CLVisionError(f'no finite score ({result.metric} {result.score})')
    except (CLVisionError, BrokenProcessPool) as exc:
        trial.set_user_attr('error', str(exc) or type(exc).__name__)
        study.tell(trial, state=TrialState.FAIL)
        return
    for key, value in asdict(result).items():
        trial.set_user_attr(key, value)
    study.tell(trial, [result.score, result.ms_per_frame])


def _ask(study: optuna.Study, space: Mapping[str, Distribution],
         base: Mapping[str, Value]) -> tuple[Trial, dict[str, Value]]:
    """Ask a trial and return it with its values; a parameter of ``AT_MOST`` up to its bound's."""
    trial = study.ask({name: dist for name, dist in space.items() if name not in AT_MOST})
    values = {**base, **trial.params}
    for name, bound in AT_MOST.items():
        dist = space.get(name)
        if isinstance(dist, IntDistribution):
            high = max(dist.low, min(dist.high, int(values[bound])))
            values[name] = trial.suggest_int(name, dist.low, high, step=dist.step)
    return trial, values


def run_study(pool: EvaluatorPool, space: Mapping[str, Distribution], storage: Path,
              trials: int, seed: int, resume: bool, on_trial: OnTrial | None = None, *,
              base: Mapping[str, Value] | None = None) -> optuna.Study:
    """
    Run trials until ``trials`` have finished (see the module's docstring) and return the study.

    Each trial evaluates ``base`` (the start values, default the schema's) updated with the
    trial's values. ``on_trial`` is called after each trial is told (``finished_trials`` says
    how many have finished). KeyboardInterrupt: the trials in flight are told FAIL (not counted),
    then it propagates.
    """
    base = dict(base or {})
    study = open_study(storage, seed, resume)
    if not study.trials:
        start = {name: base[name] for name in space if name in base}
        if len(start) == len(space) and all(_holds(dist, start[name])
                                            for name, dist in space.items()):
            study.enqueue_trial(start)
    in_flight: dict[Future[TrialResult], Trial] = {}
    # With several workers one more trial waits in the pool, so a worker that finishes starts
    # the next at once instead of waiting for this process to tell and ask (tens of ms a trial).
    queued = pool.workers + (1 if pool.workers > 1 else 0)
    try:
        while finished_trials(study) + len(in_flight) < trials or in_flight:
            while len(in_flight) < queued and finished_trials(study) + len(in_flight) < trials:
                trial, values = _ask(study, space, base)
                in_flight[pool.submit(values)] = trial
            done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for future in done:
                trial = in_flight.pop(future)
                _tell(study, trial, future)
                if on_trial is not None:
                    on_trial(study, study.get_trials(deepcopy=False)[trial.number])
    except BaseException:
        for future in in_flight:
            future.cancel()
        fail_running(study)
        raise
    return study


TIME_BUDGET = 1.5
"""The tuned values may cost at most this times the start values' ms per frame."""


def choose_tuned(study: optuna.Study, start_ms: float,
                 budget: float = TIME_BUDGET) -> FrozenTrial | None:
    """Return the Pareto trial with the best score within ``budget`` x ``start_ms``, or None."""
    within = [t for t in study.best_trials if t.values[1] <= budget * start_ms]
    return min(within, key=lambda t: (t.values[0], t.values[1]), default=None)


@dataclass(frozen=True)
class Outcome:
    """A finished search and its check on the held-out frames: what a summary or report shows."""

    study: optuna.Study
    start: dict[str, Value]  # the untuned values (defaults and --param)
    tuned: dict[str, Value]  # start updated with the chosen trial's values
    chosen: FrozenTrial | None  # None: no Pareto trial within the time budget (tuned = start)
    reference: TrialResult  # start on the tuning frames: the time budget's base
    start_held_out: TrialResult
    tuned_held_out: TrialResult


def start_trial(study: optuna.Study, start: Mapping[str, Value]) -> FrozenTrial | None:
    """Return the first complete trial of the start values (enqueued first), or None."""
    return next((t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                 if all(start.get(name) == value for name, value in t.params.items())), None)


def held_out_comparison(pool: EvaluatorPool, study: optuna.Study,
                        start: Mapping[str, Value]) -> Outcome:
    """
    Choose the tuned values (``choose_tuned``) and score them and the start on the held-out half.

    The time budget's base is the start values' trial, timed as every other trial was (beside
    the other workers' trials); where the study has none, the start values timed now.
    """
    trial = start_trial(study, start)
    reference = pool.submit(start, 'tuning').result() if trial is None else \
        TrialResult(**{name: trial.user_attrs[name] for name in TRIAL_FIELDS})
    chosen = choose_tuned(study, reference.ms_per_frame)
    tuned = {**start, **(chosen.params if chosen is not None else {})}
    start_held_out = pool.submit(start, 'held_out').result()
    return Outcome(study, dict(start), tuned, chosen, reference, start_held_out,
                   pool.submit(tuned, 'held_out').result())
