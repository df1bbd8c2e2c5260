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
The report of a tune: report.md, with pareto.png, importance.png and strip.png beside it.

The table and the strip compare the start values (the node's defaults, with the tune's
``--param`` values) with the tuned values on the held-out frames, which the search never saw, so
they show what carries over to new frames. The Pareto front shows every
trial on the tuning frames (score against ms per frame, both lower is better) with the trials no
other beats on both, the start and the tuned values marked where they were trials. Importances
are Optuna's PED-ANOVA over the first objective (the score): how far each parameter's values
among the best trials stray from those of all trials (deterministic, and it needs no scikit-learn,
which Optuna's default fANOVA does); they need at least two complete trials that differ, else
the report says why not.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, TYPE_CHECKING
import warnings

from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.evaluation.strip import compose
from cl_vision_nodes.params import Value
from cl_vision_nodes.tuning.pictures import drawn_pair, StripAnswers, TITLES
import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

if TYPE_CHECKING:
    from cl_vision_nodes.tuning.evaluator import TrialResult

PARETO_FILE = 'pareto.png'
IMPORTANCE_FILE = 'importance.png'
STRIP_FILE = 'strip.png'
TOP_SHARE = 0.1
TOP_TRIALS = 5
MAX_TOP_SHARE = 0.5
"""The best trials PED-ANOVA compares with all: the top 10 %, at least 5 trials (at most half)."""


def changed_values(start_values: Mapping[str, Value],
                   tuned_values: Mapping[str, Value]) -> list[tuple[str, Value | None, Value]]:
    """Return (name, start, tuned) for every tuned value that is not the start value, by name."""
    return [(name, start_values.get(name), value) for name, value in sorted(tuned_values.items())
            if start_values.get(name) != value]


def trial_with(study: optuna.Study, values: Mapping[str, Value]) -> FrozenTrial | None:
    """Return the first complete trial whose parameters all have these values, if any."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if trial.params and all(values.get(k) == v for k, v in trial.params.items()):
            return trial
    return None


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    return pyplot


def pareto_plot(out_dir: Path, study: optuna.Study, metric: str,
                marked: Mapping[str, FrozenTrial | None]) -> str:
    """Plot every complete trial, the Pareto front and the ``marked`` trials; return the file."""
    plt = _pyplot()
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    front = sorted(study.best_trials, key=lambda t: t.values[1])
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=100)
    axes.scatter([t.values[1] for t in trials], [t.values[0] for t in trials], s=14,
                 color='0.6', label=f'trials ({len(trials)})')
    axes.plot([t.values[1] for t in front], [t.values[0] for t in front], '-o', markersize=5,
              color='tab:blue', label=f'Pareto front ({len(front)})', drawstyle='steps-post')
    for (label, trial), style in zip(marked.items(), (('*', 'tab:red'), ('D', 'tab:green'))):
        if trial is not None:
            axes.plot(trial.values[1], trial.values[0], style[0], color=style[1], markersize=12,
                      label=f'{label} (trial {trial.number + 1})')  # as tune prints it
    axes.set_xlabel('ms per frame (tuning frames)')
    axes.set_ylabel(f'{metric} (tuning frames, lower is better)')
    axes.grid(alpha=0.3)
    axes.legend(fontsize='small')
    figure.tight_layout()
    figure.savefig(out_dir / PARETO_FILE)
    plt.close(figure)
    return PARETO_FILE


def importances(study: optuna.Study) -> dict[str, float]:
    """
    Return each parameter's importance for the score (PED-ANOVA, summing to 1), largest first.

    Raise ValueError with the reason where the study cannot tell (too few or identical trials).
    """
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len({tuple(sorted(t.params.items())) for t in complete}) < 2:
        raise ValueError(f'{len(complete)} complete trial(s) with distinct values: at least two '
                         'are needed')
    quantile = min(MAX_TOP_SHARE, max(TOP_SHARE, TOP_TRIALS / len(complete)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # "assumes low target values are better": it is so
        try:
            return optuna.importance.get_param_importances(
                study, target=lambda t: t.values[0],
                evaluator=optuna.importance.PedAnovaImportanceEvaluator(
                    target_quantile=quantile))
        except (RuntimeError, ValueError) as exc:
            raise ValueError(str(exc)) from None


def importance_plot(out_dir: Path, shares: Mapping[str, float], metric: str) -> str:
    """Plot the importances as horizontal bars, largest on top; return the file name."""
    plt = _pyplot()
    names = list(shares)[::-1]
    figure, axes = plt.subplots(figsize=(7, 0.6 + 0.35 * len(names)), dpi=100)
    axes.barh(names, [shares[n] for n in names], color='tab:blue')
    axes.set_xlabel(f'importance for {metric} (PED-ANOVA, normalised)')
    axes.set_xlim(0, 1)
    axes.grid(axis='x', alpha=0.3)
    figure.tight_layout()
    figure.savefig(out_dir / IMPORTANCE_FILE)
    plt.close(figure)
    return IMPORTANCE_FILE


def strip_picture(out_dir: Path, strip: StripAnswers, start_values: Mapping[str, Value],
                  tuned_values: Mapping[str, Value]) -> str | None:
    """
    Write the strip: a row per frame, its input then each answer with the start and the tuned.

    Return the file name, None when ``strip`` gives no frame.
    """
    rows = []
    for (index, gray, before), (_, _, after) in zip(strip(start_values), strip(tuned_values)):
        picture = np.clip(gray, 0, 255).astype(np.uint8)
        row = [(_bgr(picture), f'held-out frame {index}: input')]
        for key in before:
            start, tuned, scale = drawn_pair(key, before[key], after[key], gray)
            title = TITLES[key]
            row += [(start, f'{title} start ({scale})'), (tuned, f'{title} tuned')]
        rows.append(row)
    if not rows:
        return None
    write_png(out_dir / STRIP_FILE, compose(rows))
    return STRIP_FILE


def _bgr(picture: np.ndarray) -> np.ndarray:
    return np.repeat(picture[..., None], 3, axis=2) if picture.ndim == 2 else picture


def _number(value: float) -> str:
    return f'{value:.4g}' if np.isfinite(value) else 'n/a'


def _ratio(new: float, old: float) -> str:
    return f'{new / old:.2f}x' if old and np.isfinite(old) and np.isfinite(new) else 'n/a'


def comparison_lines(start: TrialResult, tuned: TrialResult) -> list[str]:
    """
    Return the table start against tuned on the held-out frames: score, ms, other metrics.

    A metric that is the score under another case (``d1`` beside ``D1``) is not repeated.
    """
    rows = [(f'{start.metric} (score, lower is better)', start.score, tuned.score),
            ('ms per frame', start.ms_per_frame, tuned.ms_per_frame)]
    rows += [(name, start.metrics[name], tuned.metrics[name])
             for name in sorted(set(start.metrics) & set(tuned.metrics))
             if name.lower() != start.metric.lower()]
    return ['| held-out frames | start | tuned | tuned / start |', '|---|---|---|---|'] + [
        f'| {name} | {_number(before)} | {_number(after)} | {_ratio(after, before)} |'
        for name, before, after in rows]


def _trial_counts(study: optuna.Study) -> str:
    counts = {state: len(study.get_trials(deepcopy=False, states=(state,)))
              for state in (TrialState.COMPLETE, TrialState.FAIL)}
    return (f'{counts[TrialState.COMPLETE]} complete trials, {counts[TrialState.FAIL]} failed '
            '(values a kernel refused, or a worker lost)')


def write_report(out_dir: Path, study: optuna.Study, node: str, start: TrialResult,
                 tuned: TrialResult, tuned_values: Mapping[str, Value],
                 start_values: Mapping[str, Value], strip: StripAnswers | None) -> Path:
    """
    Write ``out_dir/report.md`` and its pictures; return the report's path.

    ``start`` and ``tuned`` are the results of ``start_values`` and ``tuned_values`` on the
    held-out frames; ``strip`` runs the node on the strip's held-out frames (``strip_answers``;
    None: no strip).
    """
    metric = start.metric
    lines = [f'# cl-vision tune: {node}', '',
             f'{_trial_counts(study)}; the search minimised {metric} and ms per frame on the '
             'tuning frames; the figures below the table come from the held-out frames unless '
             'they say otherwise.', '',
             '## Start against tuned (held-out frames)', '',
             "Start: the node's defaults with the tune's --param values.", '',
             *comparison_lines(start, tuned), '']
    changed = changed_values(start_values, tuned_values)
    lines += ['## Tuned values that differ from the start values', '']
    lines += (['| parameter | start | tuned |', '|---|---|---|']
              + [f'| `{name}` | `{before!r}` | `{after!r}` |' for name, before, after in changed]
              if changed else ['None: the tune kept the start values.'])
    lines += ['', '## Pareto front (tuning frames)', '']
    if study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        marked = {'start': trial_with(study, start_values),
                  'tuned': trial_with(study, tuned_values)}
        lines += [f'Every complete trial, {metric} against ms per frame; the front holds the '
                  'trials no other beats on both.', '',
                  f'![Pareto front: {metric} against ms per frame]'
                  f'({pareto_plot(out_dir, study, metric, marked)})', '']
    else:
        lines += ['No complete trial: nothing to plot.', '']
    lines += ['## Parameter importances', '']
    try:
        shares = importances(study)
        lines += [f'How much each parameter sets the trials with the best {metric} apart from '
                  "all trials (Optuna's PED-ANOVA, normalised to sum to 1).", '',
                  f'![parameter importances]({importance_plot(out_dir, shares, metric)})', '']
    except ValueError as exc:
        lines += [f'Not computed: {exc}.', '']
    picture = strip_picture(out_dir, strip, start_values, tuned_values) if strip else None
    if picture:
        lines += ['## Pictures (held-out frames)', '',
                  'Each row: a held-out frame, then each answer with the start and with the '
                  'tuned values, both on the scale in the first label.', '',
                  f'![held-out frames: input, then each answer start and tuned]({picture})', '']
    path = out_dir / 'report.md'
    path.write_text('\n'.join(lines) + '\n')
    return path
