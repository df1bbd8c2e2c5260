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
`cl-vision bench flow` runs for real, tiny: the table and the ``--json`` rows.

The figures are checked for shape and sense, never for speed. No ROS: like the other offline
subcommands' tests it carries no marker, so it runs with ``-m "not ros and not slow"``.
"""
import json

from cl_vision_nodes.benchmarks.flow_speed import our_cases
from cl_vision_nodes.flow.presets import DIS_PRESETS
from cl_vision_nodes.flow.schema import METHODS
from cliutil import cl_vision

KEYS = {'method', 'preset', 'size', 'ms', 'ms_best', 'ms_p50', 'ms_p95', 'device'}
PRESETS = ('ultrafast', 'fast', 'medium')
OPENCV_CPU = {'opencv-dis-ultrafast': 'ultrafast', 'opencv-dis-fast': 'fast',
              'opencv-dis-medium': 'medium', 'opencv-farneback': None}
NAMES = {*METHODS, *OPENCV_CPU, *(f'{name}-ocl' for name in OPENCV_CPU)}
"""Every method a row may name (OpenCV's ``-ocl`` rows only on a GPU with OpenCV's OpenCL)."""


def test_dis_runs_once_per_preset_with_its_parameters():
    cases = our_cases()
    assert [(m, p) for m, p, _ in cases] == [('lk', None), ('hs', None), ('bm', None),
                                             *(('dis', p) for p in PRESETS)]
    assert all(params == DIS_PRESETS[p] for m, p, params in cases if m == 'dis')


def test_bench_flow_prints_the_table_and_writes_a_row_per_case(tmp_path):
    out = tmp_path / 'rows.json'
    result = cl_vision('bench', 'flow', '--sizes', '64x48,80x48', '--repeats', '2',
                       '--json', str(out))
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())
    assert rows and all(set(row) == KEYS for row in rows), rows
    assert {row['method'] for row in rows} <= NAMES
    assert all(0 < row['ms_best'] <= row['ms'] for row in rows), rows
    assert all(row['ms_best'] <= row['ms_p50'] <= row['ms_p95'] for row in rows), rows
    assert all(isinstance(row['device'], str) and row['device'] for row in rows)
    for size in ('64x48', '80x48'):
        here = [row for row in rows if row['size'] == size]
        ours = [(row['method'], row['preset']) for row in here if row['method'] in METHODS]
        assert ours == [('lk', None), ('hs', None), ('bm', None),
                        *(('dis', p) for p in PRESETS)]
        assert len({row['device'] for row in here if row['method'] in METHODS}) == 1
        cpu = {row['method']: row for row in here if row['method'] in OPENCV_CPU}
        assert {name: row['preset'] for name, row in cpu.items()} == OPENCV_CPU
        assert all(row['device'].startswith('OpenCV CPU (') for row in cpu.values())
        assert all(row['preset'] == OPENCV_CPU[row['method'].removesuffix('-ocl')]
                   for row in here if row['method'].endswith('-ocl'))
    for size in ('64x48', '80x48'):
        table = [line.split() for line in result.stdout.splitlines() if f' {size} ' in line]
        assert len(table) == len([row for row in rows if row['size'] == size])
        assert {line[0] for line in table} >= {*METHODS, 'DIS', 'Farneback'}
        assert sorted(line[2] for line in table if line[0] == 'dis') == sorted(PRESETS)
