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
`cl-vision bench node` and `bench transport` run for real, tiny: table, JSON, the profiles.

Real processes over Fast DDS on PoCL; the figures are checked for shape and sense, never for
speed.
"""
import json
import math
import os
from pathlib import Path
import subprocess
import sys

from cl_vision_nodes.benchmarks.transport import Variant, VARIANTS
from cl_vision_nodes.ros.dds_profile import profile_environment, profile_path
from cliutil import assert_one_line_error, cl_vision
import pytest

pytestmark = pytest.mark.ros

TABLE_COLUMNS = ['node', 'size', 'visuals', 'latency p50', 'compute', 'floor', 'overhead']


def table(stdout: str) -> list[list[str]]:
    """Return the rows of the printed table, header first."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('node '))
    return [line.split() for line in lines[start:] if line.strip()]


def test_bench_node_measures_a_node_its_floor_and_compute(tmp_path):
    out = tmp_path / 'rows.json'
    result = cl_vision('bench', 'node', '--sizes', '160x120', '--frames', '3', '--nodes', 'surf',
                       '--rates', '30', '--json', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    header = result.stdout.splitlines()[[line.startswith('node ') for line in
                                         result.stdout.splitlines()].index(True)]
    positions = [header.index(column) for column in TABLE_COLUMNS]
    assert positions == sorted(positions), header
    rows = json.loads(out.read_text())
    assert [(r['node'], r['size'], r['visuals']) for r in rows] == [
        ('surf', '160x120', False), ('surf', '160x120', True)]
    printed = table(result.stdout)[1:]
    assert [row[:3] for row in printed] == [['surf', '160x120', 'no'], ['surf', '160x120', 'yes']]
    for row, line in zip(rows, printed):
        for key in ('latency_p50_ms', 'latency_p90_ms', 'compute_ms', 'floor_in_ms',
                    'floor_out_ms'):
            assert math.isfinite(row[key]) and row[key] > 0, (key, row)
        assert row['latency_p90_ms'] >= row['latency_p50_ms']
        assert row['floor_ms'] == pytest.approx(row['floor_in_ms'] + row['floor_out_ms'])
        assert row['overhead_ms'] == pytest.approx(
            row['latency_p50_ms'] - row['compute_ms'] - row['floor_ms'])
        assert float(line[3]) == pytest.approx(row['latency_p50_ms'], abs=0.01)
        assert row['answered'] == 3 and row['unanswered'] == 0
        assert row['input_bytes'] > 160 * 120  # a mono8 image and its header
    plain, visual = rows
    assert visual['output_bytes'] > plain['output_bytes'] + 160 * 120 * 3  # the bgr8 overlay
    assert 'at 30 Hz' in header
    for row, line in zip(rows, printed):  # beside lockstep: 3 frames at 30 Hz, not waiting
        [rate] = row['rates']
        assert rate['rate_hz'] == 30 and rate['sent'] == 3, rate
        assert 0 <= rate['answered'] <= rate['sent'], rate
        if rate['answered']:
            assert 0 < rate['latency_p50_ms'] <= rate['latency_p95_ms'], rate
        assert line[-2] == f"{rate['answered']}/3", line
        counts = rate['node_counts']  # where the frames went, in the node's /diagnostics
        assert rate['answered'] <= counts['frames'] <= sum(counts.values()) <= 3, rate


@pytest.mark.parametrize('rates', ['0', '30,x', ''])
def test_bench_node_refuses_bad_rates(rates):
    assert_one_line_error(cl_vision('bench', 'node', '--rates', rates), 'argument --rates')


def test_bench_node_refuses_an_unknown_node():
    assert_one_line_error(cl_vision('bench', 'node', '--nodes', 'sruf'), 'sruf')


def test_bench_transport_compares_the_allocators_and_a_variant(tmp_path):
    out = tmp_path / 'rows.json'
    result = cl_vision('bench', 'transport', '--sizes', '64x48', '--encodings', '32FC2',
                       '--frames', '5', '--rate', '50', '--variants', 'history-dynamic',
                       '--json', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(out.read_text())
    assert [(r['variant'], r['reliability'], r['allocator']) for r in rows] == [
        ('package', 'reliable', 'glibc default'), ('package', 'reliable', 'configured'),
        ('package', 'best effort', 'glibc default'), ('package', 'best effort', 'configured'),
        ('history-dynamic', 'reliable', 'configured'),
        ('history-dynamic', 'best effort', 'configured')]
    for row in rows:
        assert row['received'] + row['lost'] == 5
        assert row['bytes'] > 64 * 48 * 8
    assert all(r['received'] == 5 and r['p50_ms'] > 0 for r in rows
               if r['reliability'] == 'reliable')
    assert len(table(result.stdout.replace('profile ', 'node ', 1))) == len(rows) + 1


@pytest.mark.parametrize('name', VARIANTS)
def test_every_profile_variant_is_read_by_fast_dds(tmp_path, name):
    """A variant Fast DDS could not parse would silently measure its defaults instead."""
    variant: Variant = VARIANTS[name]
    path = tmp_path / 'profile.xml'
    path.write_text(variant.profile(Path(profile_path()).read_text()))
    child = ('import rclpy; from std_msgs.msg import String; rclpy.init(); '
             "n = rclpy.create_node('profile_check'); n.create_publisher(String, 'x', 1); "
             "n.create_subscription(String, 'x', print, 1); n.destroy_node(); rclpy.shutdown()")
    env = {**os.environ, **profile_environment(str(path)),
           'RMW_FASTRTPS_USE_QOS_FROM_XML': '1' if variant.from_xml() else '0'}
    result = subprocess.run([sys.executable, '-c', child], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert 'Error' not in result.stderr, result.stderr


def test_the_in_process_compute_runs_the_node_parameters_given(runtime):
    """--node-param reaches the compute column as it reaches the node (a dis preset, say)."""
    from cl_vision_nodes.bags.datasets import Frame
    from cl_vision_nodes.benchmarks.node_latency import flow_compute, node_param_values
    from cl_vision_nodes.errors import ParameterError
    from cl_vision_nodes.processes.nodes import NODE_SPECS
    import numpy as np
    values = node_param_values(NODE_SPECS['flow'], ('method=dis', 'dis_patch_stride=5'))
    assert values == {'method': 'dis', 'dis_patch_stride': 5}
    frames = [Frame(np.zeros((24, 32), np.uint8))] * 2
    flow_compute({**values, 'dis_patch_size': 8}, frames)(runtime)()
    with pytest.raises(ParameterError, match='larger than dis_patch_size'):
        flow_compute({**values, 'dis_patch_size': 4}, frames)(runtime)
