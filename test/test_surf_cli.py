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

"""`cl-vision surf`: .npz/.json outputs, the drawing, bad input."""
import json

from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.dataio.synthetic import texture
from cliutil import assert_one_line_error, cl_vision
import numpy as np
import pytest


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp('surf_cli')
    write_png(folder / 'img.png', texture(100, 140, seed=2).astype(np.uint8))
    (folder / 'text.png').write_text('not an image')
    return folder


def test_npz_json_and_drawing(folder):
    result = cl_vision('surf', str(folder / 'img.png'), '--out', str(folder / 'k.npz'),
                       '--draw', str(folder / 'k.png'), '--param', 'extended=true')
    assert result.returncode == 0, result.stderr
    data = np.load(folder / 'k.npz')
    assert set(data.files) == {'x', 'y', 'size', 'angle', 'response', 'octave', 'laplacian',
                               'descriptor'}
    n = len(data['x'])
    assert n > 10 and data['descriptor'].shape == (n, 128)
    np.testing.assert_allclose(np.linalg.norm(data['descriptor'], axis=1), 1.0, atol=1e-5)
    assert (folder / 'k.png').stat().st_size > 0
    result = cl_vision('surf', str(folder / 'img.png'), '--out', str(folder / 'k.json'))
    assert result.returncode == 0, result.stderr
    doc = json.loads((folder / 'k.json').read_text())
    assert len(doc['x']) == n and len(doc['descriptor'][0]) == 64


@pytest.mark.parametrize('args, words', [
    (['missing.png', '--out', 'k.npz'], 'missing.png'),
    (['text.png', '--out', 'k.npz'], 'not an image'),
    (['img.png', '--out', 'k.txt'], 'expected a .npz or .json'),
    (['img.png', '--out', 'k.npz', '--param', 'n_octaves=99'], 'above the maximum'),
    (['img.png', '--out', 'k.npz', '--param', 'hessian_threshold=-1'], 'below the minimum'),
])
def test_bad_input_one_line_exit_2(folder, args, words):
    args = [str(folder / a) if a.endswith(('.png', '.npz', '.txt')) else a for a in args]
    assert_one_line_error(cl_vision('surf', *args), words)
