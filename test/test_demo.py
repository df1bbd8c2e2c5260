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
`cl-vision demo` (what `make demo` runs): three nodes over DDS, status lines, outputs.

The demo drives through the Middlebury Motorcycle scene (dataio.motorcycle), so its accuracy
figures are measured on real imagery against exact truth. Bounds are twice the errors measured on
PoCL (half the repeatability) for the 4 frames run here: flow EPE 0.127 px (flow_node's method
auto is dis on PoCL; hs scored 0.058; a zero flow scores 4.4 px), D1 16.4 %, SURF repeatability
between consecutive frames under the true flow 0.79 to 0.85.
"""
import json

from bagutil import pixels, read_bag, stamp_ns
from cl_vision_nodes.bags import layout
from cl_vision_nodes.evaluation.quality import flow_repeatability
from cl_vision_nodes.surf.keypoints import DESCRIPTOR_OFFSET, Keypoints, point_dtype
from cliutil import cl_vision
import numpy as np
import pytest

pytestmark = pytest.mark.ros  # three nodes over DDS

MAX_FLOW_EPE_PX = 0.25
MAX_D1 = 0.33
MIN_REPEATABILITY = 0.4


def keypoints(msg) -> Keypoints:
    """Decode a keypoints PointCloud2 by its documented point layout (surf.keypoints)."""
    length = (msg.point_step - DESCRIPTOR_OFFSET) // 4
    return Keypoints.from_structured(np.frombuffer(msg.data.tobytes(), point_dtype(length)))


def test_demo_runs_the_three_nodes_and_names_its_outputs(tmp_path):
    out = tmp_path / 'demo'
    result = cl_vision('demo', '--frames', '4', '--out', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Middlebury Motorcycle drive' in result.stdout
    status = [line for line in result.stdout.splitlines() if line.startswith('[')]
    assert status and all(k in status[-1] for k in ('flow', 'surf', 'disparity', 'D1'))
    assert f'demo outputs: {out.resolve()}' in result.stdout
    report = json.loads((out / 'report.json').read_text())
    nodes = report['nodes']
    assert {k: v['answered'] for k, v in nodes.items()} == {'flow': 3, 'surf': 4, 'disparity': 4}
    assert nodes['flow']['accuracy']['epe'] < MAX_FLOW_EPE_PX
    assert nodes['flow']['accuracy']['density'] == 1.0
    assert nodes['disparity']['accuracy']['d1'] < MAX_D1
    for picture in ('camera_disparity_color.png', 'camera_left_flow_color.png',
                    'camera_left_keypoints_image.png'):
        assert (out / picture).stat().st_size > 0
    answers, inputs = read_bag(out / 'bag'), read_bag(out / 'input_bag')
    assert len(answers.messages['/camera/disparity']) == 4
    flows = [pixels(msg) for _, msg in answers.messages['/camera/left/flow']]
    assert len(flows) == 3 and all(np.median(np.hypot(f[..., 0], f[..., 1])) > 2.0 for f in flows)
    # SURF has no homography truth in a 3-D scene: repeatability under the true flow instead.
    found = {stamp_ns(msg): keypoints(msg) for _, msg in answers.messages[layout.KEYPOINTS_OUTPUT]}
    stamps = sorted(found)
    for (_, truth), (before, after) in zip(inputs.messages[layout.GT_FLOW],
                                           zip(stamps, stamps[1:]), strict=True):
        assert stamp_ns(truth) == after
        repeatability = flow_repeatability(found[before], found[after], pixels(truth))
        assert repeatability.rate > MIN_REPEATABILITY and repeatability.n1 > 300
