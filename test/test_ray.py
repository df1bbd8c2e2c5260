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
Ray on this machine: a local cluster of two CPU slots (PoCL), shared by the tests of the module.

The cluster is started by this process (``ray.init``) and joined by address: `cl-vision eval
FOLDER --ray ADDRESS` runs as a separate process, as on a real cluster, and must give the numbers
the same eval gives without Ray (timing aside), and `cl-vision tune --ray ADDRESS` must finish a
small study; RayPool (which finds this process connected) must give the in-process evaluator's
results, and a worker killed mid-trial must fail only that trial. The ROS domains of the eval
runs (200 and up, one per bag) lie outside the range other test sessions pick theirs from
(conftest: 1..101).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import signal
import threading

from cliutil import assert_one_line_error, cl_vision
import pytest

DEVICE = 'cpu'
DOMAINS = {'here': '200', 'ray': '210'}
FIGURES = ('frames_due', 'answered', 'dropped', 'accuracy', 'quality')
"""The figures of a bag's row that do not depend on timing."""

ray = pytest.importorskip('ray')


@pytest.fixture(scope='module')
def cluster() -> str:
    """Start a local cluster of two CPU slots; return its address."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level='WARNING')
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope='module')
def bags(tmp_path_factory) -> dict[str, Path]:
    """Make a folder of two small flow bags, one nested, and a broken one; a flow bag to tune."""
    root = tmp_path_factory.mktemp('ray_bags')
    made = {'a': ('folder/a', 'synthetic:flow:3:64x64', '1'),
            'b': ('folder/sub/b', 'synthetic:flow:3:64x64', '2'),
            'tune': ('flow8', 'synthetic:flow:8:120x160', '0')}
    for where, source, seed in made.values():
        result = cl_vision('make-bag', source, '--seed', seed, '--out', str(root / where))
        assert result.returncode == 0, result.stderr
    (root / 'folder' / 'broken').mkdir()  # a bag whose metadata is not a bag's
    (root / 'folder' / 'broken' / 'metadata.yaml').write_text('not: a bag\n')
    return {'folder': root / 'folder', 'tune': root / 'flow8'}


def eval_folder(folder: Path, out: Path, *args: str) -> dict:
    result = cl_vision('eval', str(folder), '--out', str(out), '--device', DEVICE, '--nodes',
                       'flow', '--domain-id', DOMAINS[out.name], '--timeout', '60', *args)
    assert result.returncode == 1, result.stdout + result.stderr  # the folder's broken bag
    assert 'cl-vision eval: 1 of 3 bags failed: broken' in result.stderr, result.stderr
    return json.loads((out / 'report.json').read_text())


@pytest.mark.ros
def test_eval_of_a_folder_on_ray_gives_the_numbers_of_a_run_here(cluster, bags, tmp_path):
    folder = bags['folder']
    here = eval_folder(folder, tmp_path / 'here')
    spread = eval_folder(folder, tmp_path / 'ray', '--ray', cluster)

    assert spread['ray'] == cluster and here['ray'] is None
    for combined in (here, spread):
        assert [row['bag'] for row in combined['bags']] == ['a', 'broken', 'sub/b']
        assert 'cannot read the bag' in combined['bags'][1]['error']
        assert combined['totals']['bags'] == 3 and combined['totals']['failed'] == 1
        assert combined['totals']['frames_sent'] == 6
        assert combined['totals']['nodes']['flow']['answered'] == 4
    for row_here, row_ray in zip(here['bags'], spread['bags']):
        for key, node in row_here['nodes'].items():
            for figure in FIGURES:
                assert node[figure] == pytest.approx(row_ray['nodes'][key][figure], rel=1e-9)
    totals = here['totals']['nodes']['flow'], spread['totals']['nodes']['flow']
    assert totals[0]['accuracy'] == pytest.approx(totals[1]['accuracy'], rel=1e-9)
    assert totals[0]['accuracy']['epe'] < 0.5

    domains = set()
    for name in ('a', 'sub/b'):  # each bag's own eval folder, its report at this machine's paths
        report = json.loads((tmp_path / 'ray' / name / 'report.json').read_text())
        assert report['bag'] == str(folder / name)
        assert report['output_bag'] == str(tmp_path / 'ray' / name / 'bag')
        assert (tmp_path / 'ray' / name / 'bag' / 'metadata.yaml').is_file()
        assert (tmp_path / 'ray' / name / 'report.md').read_text().startswith(
            f'# cl-vision eval: {folder / name}')
        domains.add(report['domain_id'])
    assert domains == {210, 212}  # bags that may run at once on one machine do not share DDS
    table = (tmp_path / 'ray' / 'report.md').read_text()
    assert '| **total** | 4 | 4 | 0 |' in table and '[report](sub/b/report.md)' in table


@pytest.mark.parametrize('command, target, ray_address, words', [
    ('eval', 'folder', '127.0.0.1:9', '--ray 127.0.0.1:9: no Ray cluster answers there'),
    ('eval', 'folder', 'head', '--ray head: expected HOST:PORT'),
    ('eval', 'tune', '127.0.0.1:9', 'is not a folder of bags (run one bag without --ray)'),
    ('tune', 'tune', '127.0.0.1:9', '--ray 127.0.0.1:9: no Ray cluster answers there'),
])
def test_bad_ray_input_is_one_line_and_exit_2(bags, tmp_path, command, target, ray_address,
                                              words):
    node = ['--node', 'flow'] if command == 'tune' else []
    assert_one_line_error(cl_vision(command, str(bags[target]), *node, '--out',
                                    str(tmp_path / 'out'), '--ray', ray_address), words)


def test_ray_pool_gives_the_in_process_results(cluster, bags):
    from cl_vision_nodes.tuning.frames import load_frames
    from cl_vision_nodes.tuning.pool import InProcessPool
    from cl_vision_nodes.tuning.ray_pool import RayPool
    trials = [{}, {'alpha': 5.0}, {'method': 'hs', 'iterations': 20}, {'method': 'lk'}]
    local = InProcessPool(DEVICE, load_frames(bags['tune'], 'flow', 8))
    expected = [local.submit(values, 'held_out').result() for values in trials]
    pool = RayPool(cluster, bags['tune'], 'flow', 8)
    try:
        assert pool.workers == 2
        got = [future.result(timeout=300)
               for future in [pool.submit(values, 'held_out') for values in trials]]
        refused = pool.submit({'iterations': -1}).exception(timeout=300)
    finally:
        pool.close()
    assert [(r.score, r.metric, r.metrics) for r in got] == \
        [(r.score, r.metric, r.metrics) for r in expected]
    assert type(refused).__name__ == 'ParameterError' and 'iterations' in str(refused)


def test_a_ray_worker_killed_mid_trial_fails_only_that_trial(cluster, bags, tmp_path):
    """Horn-Schunck with hundreds of sweeps: a trial lasts long enough to be killed 0.2 s in."""
    from cl_vision_nodes.tuning.ray_pool import RayPool
    from cl_vision_nodes.tuning.space import search_space
    from cl_vision_nodes.tuning.study import run_study
    from optuna.trial import TrialState
    pool = RayPool(cluster, bags['tune'], 'flow', 8, workers=1)
    (pid,) = ray.get([actor.__ray_call__.remote(lambda _: os.getpid()) for actor in pool.actors])

    def kill(study, trial):
        if trial.number == 0:  # the next trial starts as this returns
            threading.Timer(0.2, os.kill, (pid, signal.SIGKILL)).start()
    try:
        study = run_study(pool, search_space('flow', ['iterations'], {'iterations': (300, 400)}),
                          tmp_path / 'study.journal', 3, 0, False, kill,
                          base={'method': 'hs', 'tolerance': 0.0})
        after = pool.submit({}, 'held_out').result(timeout=300)
    finally:
        pool.close()
    assert [t.state for t in study.trials] == \
        [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    assert 'the Ray worker died during the trial' in study.trials[1].user_attrs['error']
    assert after.metric == 'EPE' and after.score < 0.5


def test_tune_on_ray_finishes_a_small_study(cluster, bags, tmp_path):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState
    import yaml
    result = cl_vision('tune', str(bags['tune']), '--node', 'flow', '--params',
                       'dis_iterations,dis_alpha', '--frames', '8', '--trials', '4', '--out',
                       str(tmp_path), '--ray', cluster)
    assert result.returncode == 0, result.stdout + result.stderr
    storage = JournalStorage(JournalFileBackend(str(tmp_path / 'flow.journal')))
    study = optuna.load_study(study_name='tune', storage=storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 4
    tuned = yaml.safe_load((tmp_path / 'flow.yaml').read_text())['/**']['ros__parameters']
    assert tuned['dis_iterations'] in [t.params['dis_iterations'] for t in study.trials]
