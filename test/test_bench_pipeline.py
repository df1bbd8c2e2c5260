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

"""`cl-vision bench pipeline`: one queue against a queue per capability, same outputs."""
from cl_vision_nodes.benchmarks.pipeline_speed import pipeline_frame
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.opencl.runtime import ClRuntime
from cliutil import cl_vision


def test_queues_per_capability_give_the_outputs_of_one_queue():
    pair = stereo_pair(96, 128, seed=3, max_disparity=16.0)
    runtime = ClRuntime('auto')
    frames = [pipeline_frame(runtime, concurrent, pair.left, pair.right, 'robotics')
              for concurrent in (False, True)]
    for _ in range(3):  # flow from the second frame on
        outputs = [frame() for frame in frames]
    for got, want in zip(*outputs):
        assert got.tobytes() == want.tobytes()
    assert len(outputs[0][2]) > 0 and outputs[0][1].size > 0


def test_the_command_prints_both_rows():
    result = cl_vision('bench', 'pipeline', '--sizes', '128x96', '--repeats', '1')
    assert result.returncode == 0, result.stderr
    assert 'sequential' in result.stdout and 'concurrent' in result.stdout
