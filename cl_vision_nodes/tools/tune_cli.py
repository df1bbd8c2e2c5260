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

The face of tuning/session.py (which says how the search runs and what it writes) and, with
``--apply``, of tune_apply.py.
"""
from __future__ import annotations

import argparse
from pathlib import Path
import shlex
import sys
from typing import Any

from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.tools import tune_apply
from cl_vision_nodes.tools.cli_common import add_device_option, integer_in, output_folder

EXIT_INTERRUPTED = 130


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


def _on_trial(trials: int) -> tuple[Any, Any]:
    """
    Return the trials' callback and the progress line it feeds (to finish at the end).

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


def run(args: argparse.Namespace) -> int:
    """Tune (or apply a tune's values); say what happened."""
    if args.apply:
        return tune_apply.run(args)
    if args.bag is None or args.node is None or args.out is None:
        raise ParameterError('tune needs BAG, --node and --out (or --apply NODE_NAME to set a '
                             "tune's values on a running node)")
    # optuna (optional: `cl-vision` runs without it) comes in with the session
    from cl_vision_nodes.tuning.session import TuneOptions, TuneSession
    options = TuneOptions(Path(args.bag), args.node, Path(args.out), args.params,
                          tuple(args.param), args.trials, args.frames, args.workers, args.ray,
                          args.seed, args.resume, args.device)
    session = TuneSession(options)
    print(f'cl-vision tune: {session.description}', flush=True)
    on_trial, progress = _on_trial(args.trials)
    try:
        result = session.search(on_trial)
    except KeyboardInterrupt:
        result = None
    finally:
        progress.finish()
    if result is None:
        again = shlex.join(['cl-vision', *(a for a in sys.argv[1:] if a != '--resume'),
                            '--resume'])
        print(f'cl-vision tune: interrupted; the finished trials are kept in {options.journal}: '
              f'resume with {again}', file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    for line in (*result.lines, f'wrote {result.parameter_file} and {result.report}'):
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
