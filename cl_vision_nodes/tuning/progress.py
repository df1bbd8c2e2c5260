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
The tune's progress line: trials done of the total, failed ones, best score so far, time left.

An ``on_trial(study, trial)`` callback of ``run_study``, called as each trial is told (the score's
name is the trials' user attribute ``metric``, as study.py stores it). Counts come from the study
itself, so a resumed tune starts from the trials the earlier run finished; the time left is the
pace of this run's trials (all workers together) times the trials left.
"""
from __future__ import annotations

import time
from typing import Callable, TextIO

from cl_vision_nodes.evaluation.progress_bar import bar, duration, StatusLine
import optuna
from optuna.trial import FrozenTrial, TrialState

FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)


class TuneProgress:
    """``tune [####....] 12/100 trials, 1 failed, best D1 0.1234 at 5.2 ms/frame, 3 min left``."""

    def __init__(self, total: int, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.clock = total, clock
        self.line = StatusLine(stream, clock=clock)
        self.started = clock()
        self.done_before: int | None = None  # trials finished before this run (a resume)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Count ``trial`` (just told) and show the line when due; always for the last trial."""
        finished = study.get_trials(deepcopy=False, states=FINISHED)
        done = len(finished)
        if self.done_before is None:
            self.done_before = done - 1
        if self.line.due(force=done >= self.total):
            self.line.show(self.text(finished))

    def text(self, finished: list[FrozenTrial]) -> str:
        """Return the line for these finished trials."""
        done = len(finished)
        failed = sum(t.state == TrialState.FAIL for t in finished)
        parts = [f'tune {bar(done, self.total)} trials']
        if failed:
            parts.append(f'{failed} failed')
        complete = [t for t in finished if t.state == TrialState.COMPLETE]
        if complete:
            best = min(complete, key=lambda t: t.values[0])
            metric = best.user_attrs.get('metric', 'score')
            parts.append(f'best {metric} {best.values[0]:.4g} at {best.values[1]:.3g} ms/frame')
        here = done - (self.done_before or 0)
        if 0 < here and done < self.total:
            pace = (self.clock() - self.started) / here
            parts.append(f'{duration(pace * (self.total - done))} left')
        return ', '.join(parts)

    def finish(self) -> None:
        """End the line (on a terminal); call once the study has run."""
        self.line.finish()
