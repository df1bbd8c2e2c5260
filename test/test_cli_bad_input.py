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
Bad command lines of every `cl-vision` subcommand: one line on stderr, exit code 2, no output.

The line names the problem, and nothing is written (the output paths are checked before any work
starts).
"""
from pathlib import Path

from bagutil import write_truncated_bag
from cl_vision_nodes.dataio.formats import write_png
from cliutil import assert_one_line_error, cl_vision
import numpy as np
import pytest

NAN_FLOW_PARAMS = ('alpha', 'sor_omega', 'smooth_epsilon', 'min_eigenvalue', 'window_sigma')

CASES = [
    # unreadable bags
    (['replay', 'GARBAGE'], 'cannot read the bag (File magic is invalid.)'),
    (['replay', 'TRUNCATED'], 'cannot read the bag (File end magic is invalid.)'),
    (['eval', 'TRUNCATED', '--out', 'TMP/eval'], 'cannot read the bag (File end magic'),
    (['tune', 'TRUNCATED', '--node', 'flow', '--out', 'TMP/tune'],
     'cannot read the bag (File end magic'),
    (['tune', 'TRUNCATED', '--node', 'flow', '--params', 'alpha=1:1e9', '--out', 'TMP/tune'],
     'alpha: 1000000000.0 is above the maximum 10000.0'),
    # output paths
    (['surf', 'IMAGE', '--out', 'TMP/missing/k.npz'], 'folder TMP/missing does not exist'),
    (['surf', 'IMAGE', '--out', 'TMP/k.npz', '--draw', 'FILE/k.png'],
     'FILE/k.png: FILE is a file, not a folder'),
    (['flow', 'IMAGE', 'IMAGE', '--out', 'TMP/missing/f.flo'], 'does not exist'),
    (['flow', 'IMAGE', 'IMAGE', '--out', 'TMP/f.flo', '--color', 'TMP/missing/c.png'],
     'does not exist'),
    (['disparity', 'IMAGE', 'IMAGE', '--out', 'FILE/d.pfm'], 'is a file, not a folder'),
    (['make-bag', 'synthetic:flow:2:64x64', '--out', 'FILE/bag'], 'is a file, not a folder'),
    (['eval', 'TRUNCATED', '--out', 'FILE/eval'], 'TMP/file is a file, not a folder'),
    (['demo', '--out', 'FILE'], 'is a file, not a folder'),
    (['bench', 'flow', '--json', 'TMP/missing/rows.json'], 'folder TMP/missing does not exist'),
    # numbers
    (['bench', 'flow', '--repeats', '-1'], "argument --repeats: must be >= 1, got '-1'"),
    (['bench', 'flow', '--repeats', '0'], "argument --repeats: must be >= 1, got '0'"),
    (['bench', 'flow', '--sizes', '64x8'], 'expected WIDTHxHEIGHT[,WIDTHxHEIGHT...] of at least'),
    (['make-bag', 'synthetic:flow:2:64x64', '--rate', 'nan', '--out', 'TMP/bag'],
     "argument --rate: expected a finite number, got 'nan'"),
    (['make-bag', 'synthetic:flow:2:64x64', '--disparity-scale', '0', '--out', 'TMP/bag'],
     "argument --disparity-scale: must be > 0, got '0'"),
    (['make-bag', 'synthetic:flow:2:100000x100000', '--out', 'TMP/bag'],
     'is more than the 1e+08 a generated sequence may hold'),
    (['replay', 'TRUNCATED', '--start-offset', 'nan'], 'argument --start-offset: expected a'),
    (['replay', 'TRUNCATED', '--wait-subscribers', '-1'],
     "argument --wait-subscribers: must be >= 0, got '-1'"),
    (['replay', 'TRUNCATED', '--rate', 'inf'], 'argument --rate: expected a finite number'),
    (['eval', 'TRUNCATED', '--out', 'TMP/eval', '--domain-id', '300'],
     "argument --domain-id: must be in 0..232, got '300'"),
    (['eval', 'TRUNCATED', '--out', 'TMP/eval', '--timeout', 'nan'],
     "argument --timeout: expected a finite number, got 'nan'"),
    (['demo', '--frames', '0'], "argument --frames: must be >= 2, got '0'"),
    (['demo', '--timeout', '-5'], "argument --timeout: must be > 0, got '-5'"),
    # parameters
    (['flow', 'IMAGE', 'IMAGE', '--out', 'TMP/f.flo', '--param', 'alpha=[1'],
     "alpha: cannot parse '[1' (expected ',' or ']', but got '<stream end>')"),
    *[(['flow', 'IMAGE', 'IMAGE', '--out', 'TMP/f.flo', '--param', f'{name}=.nan'],
       f'{name}: nan is not a finite number') for name in NAN_FLOW_PARAMS],
    (['disparity', 'IMAGE', 'IMAGE', '--out', 'TMP/d.pfm', '--param', 'beta=.inf'],
     'beta: inf is not a finite number'),
    (['surf', 'IMAGE', '--out', 'TMP/k.npz', '--param', 'hessian_threshold=-.inf'],
     'hessian_threshold: -inf is not a finite number'),
    # option combinations
    (['bench', 'elas', '--left', 'IMAGE'], '--left and --right name the two images of one pair'),
]


@pytest.fixture(scope='module')
def inputs(tmp_path_factory) -> dict[str, Path]:
    """Stand-ins for the placeholders of CASES, in a folder of their own."""
    folder = tmp_path_factory.mktemp('inputs')
    image = folder / 'image.png'
    write_png(image, np.random.default_rng(0).integers(0, 255, (32, 48), np.uint8))
    garbage = folder / 'garbage.mcap'
    garbage.write_bytes(np.random.default_rng(1).bytes(4096))
    write_truncated_bag(folder / 'truncated')
    return {'IMAGE': image, 'GARBAGE': garbage, 'TRUNCATED': folder / 'truncated'}


def files_under(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in folder.rglob('*')}


@pytest.mark.parametrize('args, words', CASES, ids=lambda v: ' '.join(v)
                         if isinstance(v, list) else None)
def test_bad_input_is_one_line_exit_2_and_nothing_written(inputs, tmp_path, args, words):
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'file').write_text('in the way')
    names = {**{k: str(v) for k, v in inputs.items()}, 'TMP': str(out), 'FILE': str(out / 'file')}

    def resolve(text: str) -> str:
        for name, value in names.items():
            text = text.replace(name, value)
        return text
    before = files_under(out)
    assert_one_line_error(cl_vision(*map(resolve, args)), resolve(words))
    assert files_under(out) == before
