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

"""`cl-vision demo` (what `make demo` runs): three nodes over DDS, status lines, outputs."""
import json

from cliutil import cl_vision
from rosbags.rosbag2 import Reader


def test_demo_runs_the_three_nodes_and_names_its_outputs(tmp_path):
    out = tmp_path / 'demo'
    result = cl_vision('demo', '--frames', '4', '--out', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    status = [line for line in result.stdout.splitlines() if line.startswith('[')]
    assert status and all(k in status[-1] for k in ('flow', 'surf', 'disparity', 'D1'))
    assert f'demo outputs: {out.resolve()}' in result.stdout
    report = json.loads((out / 'report.json').read_text())
    assert {k: v['answered'] for k, v in report['nodes'].items()} == \
        {'flow': 3, 'surf': 4, 'disparity': 4}
    assert report['nodes']['disparity']['accuracy']['d1'] < 0.3
    for picture in ('camera_disparity_color.png', 'camera_left_flow_color.png',
                    'camera_left_keypoints_image.png'):
        assert (out / picture).stat().st_size > 0
    with Reader(out / 'bag') as bag:
        topics = {c.topic: c.msgcount for c in bag.connections}
    assert topics['/camera/disparity'] == 4 and topics['/camera/left/flow'] == 3
