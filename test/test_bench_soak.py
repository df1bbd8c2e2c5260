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
`cl-vision bench soak` runs for real, tiny: two nodes a few seconds, rows and samples.

Real processes over Fast DDS on PoCL; the figures are checked for shape and sense (memory and
descriptors read, frames counted), never for speed or size.
"""
import json

from cliutil import assert_one_line_error, cl_vision
import pytest

pytestmark = pytest.mark.ros


def test_bench_soak_samples_every_node_and_counts_its_answers(tmp_path):
    out = tmp_path / 'rows.json'
    result = cl_vision('bench', 'soak', '--sizes', '64x48', '--nodes', 'convert,flow',
                       '--node-param', 'method=bm', '--duration', '3', '--sample', '1',
                       '--json', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(out.read_text())
    assert [r['node'] for r in rows] == ['convert', 'flow']
    for row in rows:
        assert row['sent'] == 90, row  # 3 s at 30 Hz
        assert 0 < row['answered'] <= row['sent'], row
        assert len(row['samples']) >= 4, row  # at 0, 1, 2, 3 s and after the last answers
        elapsed = [s['elapsed_s'] for s in row['samples']]
        assert elapsed == sorted(elapsed)
        assert all(s['rss_kb'] > 0 and s['fds'] > 0 for s in row['samples']), row
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('node '))
    assert [line.split()[0] for line in lines[header + 1:]] == ['convert', 'flow']
    assert lines[header + 1].split()[1] == f"{rows[0]['answered']}/90"


def test_bench_soak_refuses_an_unknown_node():
    assert_one_line_error(cl_vision('bench', 'soak', '--nodes', 'fow'), 'fow')


def test_bench_soak_refuses_a_parameter_no_node_has():
    assert_one_line_error(cl_vision('bench', 'soak', '--nodes', 'convert', '--node-param',
                                    'method=bm'), "'method'")
