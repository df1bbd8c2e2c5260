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
`cl-vision tune BAG --node NODE --out DIR`: search the node's parameters on a bag's frames.

The algorithms run in this process (or ``--workers`` processes, or the workers of the Ray
cluster at ``--ray ADDRESS``: tuning/ray_pool.py) on the OpenCL device over the bag's frames
(cl_vision_nodes.tuning says how). The first half of the frames tunes, the second is held out:
the start values (the schema's defaults with ``--param``) and the tuned ones are compared there.
The tuned values are those of the Pareto trial (score against ms per frame) with the best score
within 1.5x the start values' ms per frame; they are written as ``DIR/<node>.yaml``, the node's
parameter file. The study is stored in ``DIR/<node>.journal``:
``--resume`` continues it after an interruption.
"""
from __future__ import annotations

import argparse
from pathlib import Path
import shlex
import sys
from typing import Any, Mapping

from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.flow.schema import resolve_method
from cl_vision_nodes.opencl.devices import list_devices, resolve_spec, select_device
from cl_vision_nodes.tools import tune_apply
from cl_vision_nodes.tools.cli_common import add_device_option, integer_in, output_folder
from cl_vision_nodes.tuning.frames import load_frames
from cl_vision_nodes.tuning.pictures import strip_answers

EXIT_INTERRUPTED = 130


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


def _changed(start: Mapping[str, Any], tuned: Mapping[str, Any]) -> str:
    changes = [f'{name} {start[name]!r} -> {value!r}' for name, value in tuned.items()
               if start.get(name) != value]
    return ', '.join(changes) or 'none'


def _trial_line(trials: int) -> Any:
    def show(study: Any, trial: Any) -> None:
        from cl_vision_nodes.tuning.study import finished_trials
        from optuna.trial import TrialState
        if trial.state == TrialState.COMPLETE:
            text = (f"{trial.user_attrs['metric']} {trial.values[0]:.4g}, "
                    f'{trial.values[1]:.1f} ms per frame')
        else:
            text = f"failed: {trial.user_attrs.get('error', trial.state.name)}"
        print(f'[{finished_trials(study)}/{trials}] trial {trial.number}: {text}', flush=True)
    return show


def summary(outcome: Any, held_out_frames: int) -> list[str]:
    """Return the lines that say what the search found and how it did on the held-out frames."""
    from cl_vision_nodes.tuning.study import TIME_BUDGET
    from optuna.trial import TrialState
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
    return [f'{len(states)} trials: {states.count(TrialState.COMPLETE)} complete, {failed} '
            f'failed, {states.count(TrialState.FAIL) - failed} interrupted; Pareto front of '
            f'{len(outcome.study.best_trials)}', choice,
            f'held-out frames ({held_out_frames}): {reference.metric} {before.score:.4g} -> '
            f'{after.score:.4g} ({ratio:.2f}x), ms per frame {before.ms_per_frame:.1f} -> '
            f'{after.ms_per_frame:.1f}',
            f'changed: {_changed(outcome.start, outcome.tuned)}']


def _on_trial(trials: int) -> tuple[Any, Any]:
    """
    Return run_study's callback and the progress line it feeds (to finish at the end).

    The progress line goes to stderr; a line per trial goes to stdout as well unless stdout is a
    terminal, where it would break the line rewritten in place.
    """
    from cl_vision_nodes.tuning.progress import TuneProgress
    progress = TuneProgress(trials)
    if sys.stdout.isatty():
        return progress, progress
    line = _trial_line(trials)

    def both(study: Any, trial: Any) -> None:
        line(study, trial)
        progress(study, trial)
    return both, progress


def evaluator_pool(args: argparse.Namespace, frames: Any) -> Any:
    """Return where the trials run: on the Ray cluster, in worker processes or in this one."""
    from cl_vision_nodes.tuning.pool import InProcessPool, ProcessPool
    if args.ray:
        from cl_vision_nodes.tuning.ray_pool import RayPool
        return RayPool(args.ray, Path(args.bag), args.node, args.frames, args.workers)
    if args.workers is None or args.workers == 1:
        return InProcessPool(args.device, frames)
    return ProcessPool(worker_devices(args.device, args.workers), Path(args.bag), args.node,
                       args.frames)


def run(args: argparse.Namespace) -> int:
    """Search, compare on the held-out frames, write the parameter file and say what happened."""
    if args.apply:
        return tune_apply.run(args)
    if args.bag is None or args.node is None or args.out is None:
        raise ParameterError('tune needs BAG, --node and --out (or --apply NODE_NAME to set a '
                             "tune's values on a running node)")
    # optuna (optional: `cl-vision` runs without it) comes in with these
    from cl_vision_nodes.tuning.evaluator import Evaluator
    from cl_vision_nodes.tuning.output import write_params
    from cl_vision_nodes.tuning.pool import InProcessPool
    from cl_vision_nodes.tuning.report import write_report
    from cl_vision_nodes.tuning.space import node_schema, parse_params, search_space
    from cl_vision_nodes.tuning.study import held_out_comparison, run_study
    schema = node_schema(args.node)
    start = schema.parse_assignments(args.param)
    names, ranges = parse_params(args.params) if args.params else (None, {})
    space = search_space(args.node, names, ranges, flow_method(args.node, start, args.device))
    frames = load_frames(Path(args.bag), args.node, args.frames)
    print(f'cl-vision tune: {frames.description}; {len(frames.tuning)} frames to tune on, '
          f'{len(frames.held_out)} held out; searching {", ".join(space)}', flush=True)
    pool = evaluator_pool(args, frames)
    on_trial, progress = _on_trial(args.trials)
    out = Path(args.out)
    storage = out / f'{args.node}.journal'
    try:
        out.mkdir(parents=True, exist_ok=True)
        study = run_study(pool, space, storage, args.trials, args.seed, args.resume,
                          on_trial, base=start)
        outcome = held_out_comparison(pool, study, start)
    except KeyboardInterrupt:
        again = shlex.join(['cl-vision', *(a for a in sys.argv[1:] if a != '--resume'),
                            '--resume'])
        print(f'cl-vision tune: interrupted; the finished trials are kept in {storage}: '
              f'resume with {again}', file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    finally:
        progress.finish()
        pool.close()
    lines = summary(outcome, len(frames.held_out))
    path = write_params(out, args.node, outcome.tuned, str(args.bag), lines[2])
    evaluator = pool.evaluator if isinstance(pool, InProcessPool) else \
        Evaluator(args.device, frames)
    strip = strip_answers(lambda values: evaluator.answers(values, 'held_out'),
                          [frame.left_gray for frame in frames.held_out])
    report = write_report(out, outcome.study, args.node, outcome.start_held_out,
                          outcome.tuned_held_out, outcome.tuned, outcome.start, strip)
    for line in (*lines, f'wrote {path} and {report}'):
        print(f'cl-vision tune: {line}', flush=True)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser('tune', help="search a node's parameters on a bag's frames",
                            description=__doc__.strip().splitlines()[0])
    parser.add_argument('bag', nargs='?', help='rosbag2 folder (mcap or sqlite3) with a camera')
    parser.add_argument('--node', help='disparity, flow, surf or vision_pipeline')
    parser.add_argument('--params', help='comma-separated parameters to search, each NAME or '
                        'NAME=LOW:HIGH within its schema range (default: those that matter for '
                        'the node); vision_pipeline names are flow.*, surf.*, disparity.*')
    parser.add_argument('--param', action='append', default=[], metavar='NAME=VALUE',
                        help='a start value (repeatable): the untuned values the tuned ones are '
                             'compared with, and the value of every parameter not searched')
    parser.add_argument('--trials', type=integer_in(1), default=100,
                        help='trials to finish, failed ones included (default 100)')
    parser.add_argument('--frames', type=integer_in(4), default=20,
                        help='first frames of the bag to use, half to tune, half held out '
                             '(default 20)')
    parser.add_argument('--workers', type=integer_in(1),
                        help='trials at a time, one process each; with --device auto spread '
                             'over the GPUs (default 1: in this process); with --ray, Ray '
                             'workers (default: one per GPU of the cluster, or per CPU slot)')
    parser.add_argument('--ray', metavar='ADDRESS',
                        help='run the trials on the Ray cluster at ADDRESS (HEAD:6379, or '
                             'auto), one per GPU, each on its own GPU (--device is then not '
                             'used), or one per CPU slot on a cluster without GPUs')
    parser.add_argument('--seed', type=int, default=0, help="the sampler's seed (default 0)")
    parser.add_argument('--resume', action='store_true',
                        help='continue the study in --out; finished trials are not repeated')
    parser.add_argument('--out', type=output_folder,
                        help='folder for <node>.yaml, report.md and the study (<node>.journal)')
    add_device_option(parser)
    tune_apply.add_arguments(parser)
    parser.set_defaults(run=run)
