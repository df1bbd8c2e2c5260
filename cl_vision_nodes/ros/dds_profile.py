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
publish camera frames. Fast DDS 3 (Kilted) reads FASTDDS_DEFAULT_PROFILES_FILE and warns about
the older name; Fast DDS 2 (Humble, Jazzy) reads only FASTRTPS_DEFAULT_PROFILES_FILE (on Jazzy the
first name alone was ignored: 4 of 10 640x480 stereo pairs arrived at 1 Hz, 10 of 10 with the
second). So the name this process's Fast DDS reads is set; a profile set under the other name
(by a launch file, or a user following another distro's docs) is given that name too. A user's
own profile is otherwise left alone, and other RMWs are not touched.
"""
from __future__ import annotations

from importlib import resources
import os
from pathlib import Path

PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
FAST_DDS_2_DISTROS = ('humble', 'jazzy')


def profile_path() -> str:
    return str(resources.files('cl_vision_nodes').joinpath('ros', 'fastdds_large_images.xml'))


def profile_variable() -> str:
    """
    Return the profile variable the Fast DDS of this ROS reads.

    Its library tells (``libfastdds`` is Fast DDS 3, ``libfastrtps`` Fast DDS 2) in the ament
    prefixes and the library path; else ROS_DISTRO, which a sourced ROS sets.
    """
    prefixes = os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
    folders = [Path(p) / 'lib' for p in prefixes if p]
    folders += [Path(p) for p in os.environ.get('LD_LIBRARY_PATH', '').split(os.pathsep) if p]
    for folder in folders:
        if any(folder.glob('libfastdds.so*')):
            return PROFILE_VARIABLES[0]
        if any(folder.glob('libfastrtps.so*')):
            return PROFILE_VARIABLES[1]
    fast_dds_2 = os.environ.get('ROS_DISTRO') in FAST_DDS_2_DISTROS
    return PROFILE_VARIABLES[1] if fast_dds_2 else PROFILE_VARIABLES[0]


def profile_environment(path: str) -> dict[str, str]:
    """Return the variable that makes this ROS's Fast DDS read the profile at ``path``."""
    return {profile_variable(): path}


def use_large_image_profile() -> bool:
    """
    Set the profile variable for this process and its children before rclpy.init.

    Returns True if the package's profile was set here.
    """
    if os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp') != 'rmw_fastrtps_cpp':
        return False
    name = profile_variable()
    if os.environ.get(name):
        return False
    other = next(n for n in PROFILE_VARIABLES if n != name)
    if os.environ.get(other):  # a profile this Fast DDS would not read under that name
        os.environ[name] = os.environ[other]
        return False
    os.environ[name] = profile_path()
    return True
