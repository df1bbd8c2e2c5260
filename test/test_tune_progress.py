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
The tune's progress line, fed by a real Optuna study as run_study's on_trial callback.

A clock the test moves stands in for time (the line's pacing and its time left), and the stream
says whether it is a terminal: in place there, plain lines elsewhere.
"""
from __future__ import annotations

import io

from cl_vision_nodes.evaluation.progress_bar import bar, duration, StatusLine
from cl_vision_nodes.tuning.progress import TuneProgress
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
import pytest


class Clock:
    """time.monotonic as the test sets it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def tell(study: optuna.Study, progress: TuneProgress, score: float | None, ms: float = 2.0):
    """Ask a trial and tell it (None: failed) with its metric, then call the progress."""
    trial = study.ask({'x': FloatDistribution(0.0, 1.0)})
    if score is None:
        study.tell(trial, state=TrialState.FAIL)
    else:
        trial.set_user_attr('metric', 'D1')
        study.tell(trial, [score, ms])
    progress(study, study.trials[-1])


@pytest.fixture
def study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(directions=['minimize', 'minimize'])


def test_plain_lines_every_few_seconds_with_best_and_time_left(study):
    clock, stream = Clock(), io.StringIO()
    progress = TuneProgress(5, stream=stream, clock=clock)
    clock.now += 10
    tell(study, progress, 0.4, 3.0)  # the first line is shown at once
    clock.now += 1
    tell(study, progress, None)  # within the period: not shown
    clock.now += 9
    tell(study, progress, 0.2, 5.5)
    clock.now += 1
    tell(study, progress, 0.3)
    clock.now += 1
    tell(study, progress, None)  # the last trial: always shown
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert lines == [
        f'tune {bar(1, 5)} trials, best D1 0.4 at 3 ms/frame, 40 s left',
        f'tune {bar(3, 5)} trials, 1 failed, best D1 0.2 at 5.5 ms/frame, 13 s left',
        f'tune {bar(5, 5)} trials, 2 failed, best D1 0.2 at 5.5 ms/frame',
    ]


def test_in_place_on_a_terminal_and_a_resumed_study(study):
    clock, stream = Clock(), Terminal()
    for score in (0.5, None, 0.25):  # an earlier run's trials
        tell(study, TuneProgress(10, stream=io.StringIO(), clock=clock), score)
    progress = TuneProgress(10, stream=stream, clock=clock)
    clock.now += 60
    tell(study, progress, 0.3)
    clock.now += 60
    tell(study, progress, 0.1, 1.0)
    progress.finish()
    progress.finish()  # once is enough: the interrupted tune finishes it too
    text = stream.getvalue()
    first = f'tune {bar(4, 10)} trials, 1 failed, best D1 0.25 at 2 ms/frame, 6 min 00 s left'
    second = f'tune {bar(5, 10)} trials, 1 failed, best D1 0.1 at 1 ms/frame, 5 min 00 s left'
    assert text == f'\r{first}\r{second.ljust(len(first))}\n'


def test_status_line_without_trials_and_durations():
    stream = Terminal()
    line = StatusLine(stream)
    line.finish()  # nothing shown: no newline either
    assert stream.getvalue() == ''
    assert [duration(s) for s in (0.4, 59.6, 61, 3599, 3600, 7620)] == [
        '0 s', '1 min 00 s', '1 min 01 s', '59 min 59 s', '1 h 00 min', '2 h 07 min']
    assert bar(0, 0, 4) == '[....] 0/0' and bar(3, 2, 4) == '[####] 3/2'
