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
Warm first frames, counted in PoCL's own cache on a cold start.

PoCL writes each kernel it compiles for a work-group size (a specialisation) into its cache
directory when the kernel first runs. A node started on an empty cache compiles every one of them
before 'ready' (warm_up_width x warm_up_height) and after a parameter change that brings new
kernels: its first frames of that size add none.
"""
import itertools
from pathlib import Path

import numpy as np
import pytest
from rosutil import NodeProcess, numpy_to_image, publish_until_answered, RosHarness
from sensor_msgs.msg import Image

pytestmark = pytest.mark.ros

WIDTH, HEIGHT = 64, 48


def specialisations(cache: Path) -> set[str]:
    """Return PoCL's compiled work-group functions: '<program>/<kernel>/<local size>-...' dirs."""
    return {str(p.relative_to(cache)) for p in cache.rglob('*-*-*-goffs0*') if p.is_dir()}


def test_first_frames_after_ready_and_after_a_method_change_compile_nothing(tmp_path):
    cache = tmp_path / 'pocl'
    cache.mkdir()
    proc = NodeProcess('cl_vision_nodes.ros.flow_node',
                       ['-p', f'warm_up_width:={WIDTH}', '-p', f'warm_up_height:={HEIGHT}',
                        '-r', 'image:=/warm_test/image', '-r', 'flow:=/warm_test/flow'],
                       env={'POCL_CACHE_DIR': str(cache), 'PYOPENCL_NO_CACHE': '1'})
    ros = RosHarness('warm_test_harness')
    rng = np.random.default_rng(7)
    tags = itertools.count()

    def send(encoding: str = 'mono8') -> str:
        shape = (HEIGHT, WIDTH) if encoding == 'mono8' else (HEIGHT, WIDTH, 3)
        frame = numpy_to_image(rng.integers(0, 256, shape, dtype=np.uint8), encoding)
        frame.header.frame_id = f'frame{next(tags)}'
        pub.publish(frame)
        return frame.header.frame_id

    try:
        pub = ros.publisher(Image, '/warm_test/image')
        flows = ros.collect(Image, '/warm_test/flow')
        assert proc.wait_for_output(' executor\n', 120.0), proc.output()
        assert 'running them on a 64x48 frame' in proc.output()
        warmed = specialisations(cache)
        assert warmed, 'PoCL cached no kernel: is the node on PoCL?'
        assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()
        publish_until_answered(send, flows, tries=8, timeout=5.0, log=proc.output)
        assert specialisations(cache) == warmed  # the first frames compiled nothing
        # a bgr8 camera's frames: decoded to floats, the pyramid's level 1 made from them
        publish_until_answered(lambda: send('bgr8'), flows, tries=8, timeout=5.0,
                               log=proc.output)
        assert specialisations(cache) == warmed

        result, = ros.set_parameters('flow_node', {'method': 'hs'})
        assert result.successful, result.reason
        changed = specialisations(cache)
        assert changed > warmed  # Horn-Schunck's kernels ran with the change, before a frame
        publish_until_answered(send, flows, tries=8, timeout=5.0, log=proc.output)
        assert specialisations(cache) == changed
    finally:
        ros.close()
        assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()
