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
The tune's report.md and pictures, from a real study of ELAS on PoCL.

The study's objective runs the library's ElasMatcher on a crop of the KITTI pair in ../shared/data
(tuning) and scores D1 against its ground truth and the time per frame; the defaults (the start
values) and the tuned values are then run on another crop (held out), as the tune does with the
halves of a bag.
"""
from __future__ import annotations

from dataclasses import dataclass
import re
import time

from cl_vision_nodes.dataio.formats import read_image, read_kitti_disparity
from cl_vision_nodes.elas import ElasMatcher
from cl_vision_nodes.elas.metrics import d1_errors
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.evaluation.strip import LABEL_HEIGHT
from cl_vision_nodes.tuning.pictures import strip_answers
from cl_vision_nodes.tuning.report import changed_values, importances, write_report
import numpy as np
import optuna
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.trial import TrialState
import pytest

TUNING = (slice(180, 308), slice(300, 620))  # rows, columns of the 375x1242 pair
HELD_OUT = (slice(180, 308), slice(700, 1020))
SEARCHED = {'support_threshold': (0.8, 0.99), 'lr_threshold': (0, 8), 'ipol_gap_width': (0, 30)}
"""Ranges within the schema's, as the tune's ``--params NAME=LOW:HIGH`` narrows them."""
DISP_MAX = 96


@dataclass(frozen=True)
class Result:
    """The fields of the evaluator's TrialResult that the report reads."""

    score: float
    metric: str
    ms_per_frame: float
    metrics: dict[str, float]


class Elas:
    """ElasMatcher on the crops of one KITTI pair."""

    def __init__(self, runtime, shared_data):
        kitti = shared_data('stereo', 'kitti2015_000001')
        self.left = read_image(kitti / 'image_2_000001_10.png')
        self.right = read_image(kitti / 'image_3_000001_10.png')
        self.truth = read_kitti_disparity(kitti / 'disp_occ_0_000001_10.png')
        self.matcher = ElasMatcher(runtime, {'disp_max': DISP_MAX})

    def disparity(self, values, crop) -> np.ndarray:
        self.matcher.configure({**values, 'disp_max': DISP_MAX})
        return self.matcher.compute_gray(self.left[crop], self.right[crop])

    def evaluate(self, values, crop) -> Result:
        self.disparity(values, crop)  # untimed: plans for new values
        start = time.perf_counter()
        estimate = self.disparity(values, crop)
        ms = (time.perf_counter() - start) * 1e3
        errors = d1_errors(estimate, self.truth[crop])
        return Result(errors.all, 'D1', ms, {'d1': errors.all, 'density': errors.density})

    def held_out_answers(self, values) -> dict:
        """Return the answers to the held-out frames (one crop here) by capability."""
        return {'disparity': [self.disparity(values, HELD_OUT)]}


def space() -> dict:
    """Return the searched parameters: type from the schema, range checked against it."""
    distributions = {}
    for name, (low, high) in SEARCHED.items():
        spec = ELAS_SCHEMA.specs[name]
        assert spec.min <= low < high <= spec.max
        kind = FloatDistribution if spec.type is float else IntDistribution
        distributions[name] = kind(low, high)
    return distributions


@pytest.fixture(scope='module')
def elas(runtime, shared_data):
    return Elas(runtime, shared_data)


def run_trials(elas: Elas, trials: int, bad: int = 0) -> optuna.Study:
    """Tell ``trials`` trials of a seeded study (the defaults first) and ``bad`` failed ones."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=['minimize', 'minimize'],
                                sampler=optuna.samplers.TPESampler(seed=3))
    defaults = ELAS_SCHEMA.defaults()
    study.enqueue_trial({name: defaults[name] for name in SEARCHED})
    for _ in range(trials):
        trial = study.ask(space())
        result = elas.evaluate(trial.params, TUNING)
        trial.set_user_attr('metric', result.metric)
        study.tell(trial, [result.score, result.ms_per_frame])
    for _ in range(bad):
        study.tell(study.ask(space()), state=TrialState.FAIL)
    return study


def test_report_of_a_real_study(elas, tmp_path):
    study = run_trials(elas, trials=8, bad=1)
    defaults = ELAS_SCHEMA.defaults()
    # The tune's choice is study.py's; here the best trial that is not the defaults (trial 0).
    best = min((t for t in study.best_trials if t.number), key=lambda t: t.values[0])
    tuned_values = {**defaults, **best.params}
    default, tuned = (elas.evaluate(v, HELD_OUT) for v in (defaults, tuned_values))

    strip = strip_answers(elas.held_out_answers, [elas.left[HELD_OUT]])
    path = write_report(tmp_path, study, 'disparity', default, tuned, tuned_values, defaults,
                        strip)
    text = path.read_text()
    assert path == tmp_path / 'report.md'
    assert '8 complete trials, 1 failed' in text
    row = re.search(r'^\| D1 \(score, lower is better\) \| (\S+) \| (\S+) \| (\S+)x \|$', text,
                    re.M)
    assert row, text
    assert row.groups() == (f'{default.score:.4g}', f'{tuned.score:.4g}',
                            f'{tuned.score / default.score:.2f}')
    assert f'| density | {default.metrics["density"]:.4g} | {tuned.metrics["density"]:.4g} |' \
        in text
    changed = changed_values(defaults, tuned_values)
    assert changed and {name for name, _, _ in changed} <= set(SEARCHED)
    for name, before, after in changed:
        assert f'| `{name}` | `{before!r}` | `{after!r}` |' in text
    assert '| d1 |' not in text  # the score, not again under its lower-case name
    for picture in ('pareto.png', 'importance.png', 'strip.png'):
        assert f']({picture})' in text
        assert read_image(tmp_path / picture).size
    picture = read_image(tmp_path / 'strip.png', gray=False)
    # One row: the input and the disparity start and tuned, tiles as wide as the 320 px crop.
    assert picture.shape[0] == 128 + LABEL_HEIGHT
    assert picture.shape[1] == 3 * 320 + 2 * 4
    tuned_tile = picture[LABEL_HEIGHT:, 2 * (320 + 4):]
    assert (tuned_tile.max(axis=2) == 0).mean() == pytest.approx(
        (elas.disparity(tuned_values, HELD_OUT) < 0).mean(), abs=0.01)  # invalid: black
    assert set(importances(study)) == set(SEARCHED)


def test_too_few_trials_for_importances_and_no_strip(elas, tmp_path):
    study = run_trials(elas, trials=1, bad=2)
    defaults = ELAS_SCHEMA.defaults()
    default = elas.evaluate(defaults, HELD_OUT)
    write_report(tmp_path, study, 'disparity', default, default, defaults, defaults, None)
    text = (tmp_path / 'report.md').read_text()
    assert '1 complete trials, 2 failed' in text
    assert 'None: the tune kept the start values.' in text
    assert 'Not computed: 1 complete trial(s) with distinct values: at least two are needed.' \
        in text
    assert not (tmp_path / 'importance.png').exists()
    assert not (tmp_path / 'strip.png').exists() and 'strip.png' not in text
    assert (tmp_path / 'pareto.png').exists()


def test_a_study_whose_every_trial_failed(elas, tmp_path):
    study = run_trials(elas, trials=0, bad=2)
    defaults = ELAS_SCHEMA.defaults()
    start = elas.evaluate(defaults, HELD_OUT)
    write_report(tmp_path, study, 'disparity', start, start, defaults, defaults, None)
    text = (tmp_path / 'report.md').read_text()
    assert '0 complete trials, 2 failed' in text
    assert 'No complete trial: nothing to plot.' in text and 'Not computed: 0 complete' in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ['report.md']
