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
`cl-vision eval --compare A B`: two eval folders side by side, on small reports written here.

The two reports differ in known figures (latency, accuracy, a quality figure, a node only B ran),
so each row of the table is checked for both values and B - A.
"""
import json
from pathlib import Path

from cliutil import assert_one_line_error, cl_vision


def node(p50: float, epe: float, fb: float | None, answered: int = 9) -> dict:
    return {'frames_due': 9, 'answered': answered, 'dropped': 9 - answered,
            'latency_ms': {'mean': p50 + 1, 'p50': p50, 'p95': 2 * p50, 'max': 3 * p50},
            'throughput_fps': 1000.0 / p50,
            'stages': {'frames': answered, 'stage_ms': {'compute': p50 / 2}},
            'accuracy': {'frames_scored': answered, 'epe': epe, 'per_frame': []},
            'quality': {'frames_scored': answered, 'fb_error': fb, 'per_frame': []}}


def write_report(folder: Path, nodes: dict, device: str) -> Path:
    folder.mkdir()
    (folder / 'report.json').write_text(json.dumps({
        'bag': 'in', 'device': device, 'frames_sent': 10, 'wall_fps': 2.5, 'nodes': nodes}))
    return folder


def rows(table: str) -> dict[tuple[str, str], list[str]]:
    """Map (node, figure) to the other cells of each table row."""
    found = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip('|').split('|')]
        if line.startswith('|') and len(cells) == 5 and cells[0] not in ('node', '---'):
            found[cells[0], cells[1]] = cells[2:]
    return found


def test_two_folders_in_one_table_with_the_differences(tmp_path):
    a = write_report(tmp_path / 'a', {'flow': node(20.0, 0.5, 0.25)}, 'cpu')
    b = write_report(tmp_path / 'b', {'flow': node(10.0, 0.4, None, answered=8),
                                      'surf': node(5.0, 0.0, 0.1)}, 'gpu')
    result = cl_vision('eval', '--compare', str(a), str(b))
    assert result.returncode == 0, result.stderr
    written = (b / 'compare.md').read_text()
    assert written in result.stdout
    assert f'| node | figure | A: {a} | B: {b} | B - A |' in written
    table = rows(written)
    assert table['run', 'device'] == ['cpu', 'gpu', '']
    assert table['flow', 'frames answered'] == ['9', '8', '-1 (-11.1%)']
    assert table['flow', 'latency p50 ms'] == ['20.0', '10.0', '-10.0 (-50.0%)']
    assert table['flow', 'latency p95 ms'] == ['40.0', '20.0', '-20.0 (-50.0%)']
    assert table['flow', 'stage compute ms'] == ['10.00', '5.00', '-5.00 (-50.0%)']
    assert table['flow', 'accuracy: epe'] == ['0.500', '0.400', '-0.100 (-20.0%)']
    assert table['flow', 'quality: fb_error'] == ['0.250', 'n/a', '']
    assert table['surf', 'latency p50 ms'] == ['n/a', '5.0', '']
    assert ('flow', 'accuracy: per_frame') not in table


def test_the_table_goes_to_out_when_given(tmp_path):
    a = write_report(tmp_path / 'a', {'flow': node(20.0, 0.5, 0.25)}, 'cpu')
    b = write_report(tmp_path / 'b', {'flow': node(20.0, 0.5, 0.25)}, 'cpu')
    result = cl_vision('eval', '--compare', str(a), str(b), '--out', str(tmp_path / 'cmp'))
    assert result.returncode == 0, result.stderr
    table = rows((tmp_path / 'cmp' / 'compare.md').read_text())
    assert table['flow', 'accuracy: epe'] == ['0.500', '0.500', '+0.000 (+0.0%)']
    assert not (b / 'compare.md').exists()


def test_bad_folders_are_refused_in_one_line(tmp_path):
    good = write_report(tmp_path / 'good', {'flow': node(20.0, 0.5, 0.25)}, 'cpu')
    empty = tmp_path / 'empty'
    empty.mkdir()
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / 'report.json').write_text('{"nodes": ')
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'report.json').write_text('[1, 2]')
    for folder, words in ((tmp_path / 'missing', 'no such folder'), (empty, 'no report.json'),
                          (broken, 'not JSON'), (other, 'not a cl-vision eval report')):
        assert_one_line_error(cl_vision('eval', '--compare', str(good), str(folder)), words)
        assert_one_line_error(cl_vision('eval', '--compare', str(folder), str(good)), words)
    assert not (good / 'compare.md').exists()
