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
Make Fast DDS carry large images: apply the package's participant profile when none is set.

Why: with Fast DDS' defaults, best-effort samples above about 0.5 MB are lost (measured here:
0 of 10 1 MB images arrived; with this profile on the publishing side, 10 of 10 at 6.2 MB). The
nodes publish such samples (flow 32FC2 at 640x480 is 2.4 MB), and `cl-vision replay` / the demo
publish camera frames. A user's own FASTDDS_DEFAULT_PROFILES_FILE (or the older
FASTRTPS_DEFAULT_PROFILES_FILE) is left alone, and other RMWs are not touched.
"""
from __future__ import annotations

from importlib import resources
import os

PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


def profile_path() -> str:
    return str(resources.files('cl_vision_nodes').joinpath('ros', 'fastdds_large_images.xml'))


def use_large_image_profile() -> bool:
    """
    Set FASTDDS_DEFAULT_PROFILES_FILE for this process and its children before rclpy.init.

    Returns True if it was set here.
    """
    if os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp') != 'rmw_fastrtps_cpp':
        return False
    if any(os.environ.get(name) for name in PROFILE_VARIABLES):
        return False
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = profile_path()
    return True
