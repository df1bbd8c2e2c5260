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
Large best-effort images reach a node: the Fast DDS profile the package applies.

A 1080p bgr8 frame is 6.2 MB; with Fast DDS' defaults nothing above about 0.5 MB arrives.
"""
import os
import subprocess
import sys

from cl_vision_nodes.ros.dds_profile import (profile_path, profile_variable, PROFILE_VARIABLES,
                                             use_large_image_profile)
import numpy as np
import pytest
from rosutil import image_to_numpy, NodeProcess, numpy_to_image, publish_until_answered, RosHarness
from sensor_msgs.msg import Image

pytestmark = pytest.mark.ros


def test_profile_is_applied_only_when_none_is_configured(monkeypatch):
    for name in PROFILE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('RMW_IMPLEMENTATION', 'rmw_cyclonedds_cpp')
    assert not use_large_image_profile()
    monkeypatch.setenv('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    assert use_large_image_profile()
    name = profile_variable()
    assert os.environ[name] == profile_path()
    for other in PROFILE_VARIABLES:  # a profile under the other name is read under this one
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(next(n for n in PROFILE_VARIABLES if n != name), '/site/other.xml')
    assert not use_large_image_profile() and os.environ[name] == '/site/other.xml'
    monkeypatch.setenv('FASTDDS_DEFAULT_PROFILES_FILE', '/site/profile.xml')
    assert not use_large_image_profile()


def test_the_profile_variable_is_the_one_this_fast_dds_reads(tmp_path):
    """
    Fast DDS 3 (Kilted) reads FASTDDS_..., Fast DDS 2 (Humble, Jazzy) FASTRTPS_... only.

    (Kilted's rmw also reads the older name, with a deprecation warning.) A broken profile
    under the chosen name shows that Fast DDS read it.
    """
    broken = tmp_path / 'broken.xml'
    broken.write_text('<dds><profiles><participant profile_name=')
    env = {k: v for k, v in os.environ.items() if k not in PROFILE_VARIABLES}
    child = "import rclpy; rclpy.init(); rclpy.create_node('profile_check').destroy_node()"
    result = subprocess.run([sys.executable, '-c', child],
                            env={**env, profile_variable(): str(broken)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=60)
    assert 'XMLPARSER' in result.stdout and 'deprecated' not in result.stdout, result.stdout


def test_full_hd_bgr8_frame_through_a_node():
    ros = RosHarness('large_image_harness')
    proc = NodeProcess('cl_vision_nodes.ros.convert_node',
                       ['-r', 'image:=/large/in', '-r', 'image_out:=/large/out'])
    try:
        pub = ros.publisher(Image, '/large/in')
        out = ros.collect(Image, '/large/out')
        assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()
        frame = np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
        msg = numpy_to_image(frame, 'bgr8')
        got = publish_until_answered(lambda: pub.publish(msg), out, lambda _: True, tries=5,
                                     log=proc.output)
        assert image_to_numpy(got).shape == (1080, 1920)
    finally:
        assert proc.stop() == 0, proc.output()
        ros.close()
