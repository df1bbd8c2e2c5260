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
``cl-vision tune`` end to end with its report, progress line and ``--apply``, on PoCL.

A generated stereo bag with ground truth (make-bag synthetic:stereo) is tuned from a bad start;
report.md's figures are checked against the tune's own Evaluator on the held-out frames, and the
written parameter file is applied to a running disparity_node over Fast DDS.
"""
from __future__ import annotations

from pathlib import Path
import re

from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.evaluation.progress_bar import bar
from cl_vision_nodes.evaluation.strip import LABEL_HEIGHT, spread
from cliutil import assert_one_line_error, cl_vision
import pytest
import yaml

DEVICE = 'cpu'
FRAMES = 8
TRIALS = 8
START = {'support_texture': 300, 'speckle_size': 5000}
SEARCHED = 'support_texture,speckle_size,ipol_gap_width'


@pytest.fixture(scope='module')
def tuned(tmp_path_factory) -> Path:
    """Tune the disparity of a generated bag from a bad start; return the output folder."""
    root = tmp_path_factory.mktemp('tune_report')
    made = cl_vision('make-bag', f'synthetic:stereo:{FRAMES}:120x160', '--out', str(root / 'bag'))
    assert made.returncode == 0, made.stderr
    result = cl_vision('tune', str(root / 'bag'), '--node', 'disparity', '--device', DEVICE,
                       '--frames', str(FRAMES), '--trials', str(TRIALS), '--out',
                       str(root / 'out'), '--params', SEARCHED,
                       *(a for n, v in START.items() for a in ('--param', f'{n}={v}')))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stderr.splitlines()  # not a terminal: plain progress lines
    assert lines[-1].startswith(f'tune {bar(TRIALS, TRIALS)} trials'), result.stderr
    assert re.search(r', best D1 [0-9.e-]+ at [0-9.e-]+ ms/frame', lines[-1]), result.stderr
    assert f'wrote {root / "out" / "disparity.yaml"} and {root / "out" / "report.md"}' \
        in result.stdout
    return root


def test_report_figures_are_the_evaluators(tuned):
    from cl_vision_nodes.tuning.evaluator import Evaluator
    from cl_vision_nodes.tuning.frames import load_frames
    out = tuned / 'out'
    text = (out / 'report.md').read_text()
    written = yaml.safe_load((out / 'disparity.yaml').read_text())['/**']['ros__parameters']
    evaluator = Evaluator(DEVICE, load_frames(tuned / 'bag', 'disparity', FRAMES))
    start, tuned_result = (evaluator.evaluate(v, 'held_out') for v in (START, written))
    row = re.search(r'^\| D1 \(score, lower is better\) \| (\S+) \| (\S+) \|', text, re.M)
    assert row and row.groups() == (f'{start.score:.4g}', f'{tuned_result.score:.4g}'), text
    for name in ('support_texture', 'speckle_size'):  # the bad start is what the search left
        if written[name] != START[name]:
            assert f'| `{name}` | `{START[name]!r}` | `{written[name]!r}` |' in text
    counts = re.search(r'^(\d+) complete trials, (\d+) failed', text, re.M)
    assert counts and sum(map(int, counts.groups())) == TRIALS, text
    for picture in ('pareto.png', 'importance.png', 'strip.png'):
        assert f']({picture})' in text and (out / picture).stat().st_size > 0
    strip = read_image(out / 'strip.png', gray=False)
    rows = len(spread(4, FRAMES // 2))
    assert strip.shape[0] == rows * (120 + LABEL_HEIGHT) + (rows - 1) * 4
    assert strip.shape[1] == 3 * 160 + 2 * 4  # input, disparity default and tuned


@pytest.mark.ros
def test_apply_the_written_file_to_a_running_node(tuned):
    from rosutil import NodeProcess, RosHarness
    ros = RosHarness('tune_report_cli_harness')
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       ['-r', '__node:=applied', '-p', f'device:={DEVICE}', '-p', 'queue_size:=9'])
    written = yaml.safe_load((tuned / 'out' / 'disparity.yaml').read_text())['/**'][
        'ros__parameters']
    try:
        assert ros.get_parameters('applied', ['queue_size']) == {'queue_size': 9}
        result = cl_vision('tune', '--apply', '/applied', '--out', str(tuned / 'out'), '--node',
                           'disparity')
        assert result.returncode == 1, result.stdout + result.stderr
        refused = [line.split(': ')[1] for line in result.stderr.splitlines()]
        # device and queue_size are read-only (the node started with others): a restart's.
        assert refused == ['refused device', 'refused queue_size'], result.stderr
        names = [n for n in written if n not in ('device', 'queue_size')]
        assert ros.get_parameters('applied', names) == {n: written[n] for n in names}
    finally:
        ros.close()
        assert proc.stop() == 0, proc.output()


def test_bad_use_is_one_line_and_exit_2():
    assert_one_line_error(cl_vision('tune', '--node', 'disparity'), 'tune needs BAG')
    assert_one_line_error(cl_vision('tune', '--apply', '/nobody'), '--from FILE')


@pytest.mark.ros
def test_applying_to_a_node_that_does_not_answer_is_one_line_and_exit_2(tuned):
    assert_one_line_error(cl_vision('tune', '--apply', '/nobody', '--out', str(tuned / 'out'),
                                    '--node', 'disparity', '--apply-timeout', '0.5'),
                          'node /nobody does not answer')
