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
publish camera frames. Fast DDS 3 (Kilted) reads FASTDDS_DEFAULT_PROFILES_FILE, Fast DDS 2
(Humble, Jazzy) only FASTRTPS_DEFAULT_PROFILES_FILE, so both are set (on Jazzy the first alone was
ignored: 4 of 10 640x480 stereo pairs arrived at 1 Hz, 10 of 10 with both). A user's own profile
under either name is left alone, and other RMWs are not touched.
"""
from __future__ import annotations

from importlib import resources
import os

PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


def profile_path() -> str:
    return str(resources.files('cl_vision_nodes').joinpath('ros', 'fastdds_large_images.xml'))


def profile_environment(path: str) -> dict[str, str]:
    """Return the variables that make every Fast DDS version read the profile at ``path``."""
    return dict.fromkeys(PROFILE_VARIABLES, path)


def use_large_image_profile() -> bool:
    """
    Set the profile variables for this process and its children before rclpy.init.

    Returns True if it was set here.
    """
    if os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp') != 'rmw_fastrtps_cpp':
        return False
    if any(os.environ.get(name) for name in PROFILE_VARIABLES):
        return False
    os.environ.update(profile_environment(profile_path()))
    return True
