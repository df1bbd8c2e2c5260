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
Test-session set-up: an isolated ROS 2 domain, the ament index of the venv, shared data paths.

The environment is fixed here, before any test imports rclpy, so every node started by a test
(in this process or as a subprocess) joins the same private DDS domain on localhost only.
"""
import ast
import importlib.util
import os
from pathlib import Path
import random
import sys

from cl_vision_nodes.ros.dds_profile import profile_environment
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / 'shared' / 'data'

# A domain of its own per run, and per pytest-xdist worker of one run (its id: gw0, gw1, ...).
_worker = int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0')[2:])
_run = os.environ.get('PYTEST_XDIST_TESTRUNUID')
os.environ['ROS_DOMAIN_ID'] = str(1 + (random.Random(_run).randrange(101) + 17 * _worker) % 101)
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
os.environ['AMENT_PREFIX_PATH'] = os.pathsep.join(
    p for p in (sys.prefix, os.environ.get('AMENT_PREFIX_PATH', '')) if p)
# Large images over Fast DDS in this process and every node it starts (see ros/dds_profile.py).
# Under the name this ROS's Fast DDS reads (FASTRTPS_... on Fast DDS 2: Humble, Jazzy).
for _name in ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE'):
    os.environ.pop(_name, None)
os.environ.update(profile_environment(
    str(REPO / 'cl_vision_nodes' / 'ros' / 'fastdds_large_images.xml')))
# Subprocesses (nodes, the CLI) import this checkout, not a stale installed copy.
os.environ['PYTHONPATH'] = os.pathsep.join(
    p for p in (str(REPO), os.environ.get('PYTHONPATH', '')) if p)


ROS_INSTALLED = importlib.util.find_spec('rclpy') is not None


def marked_ros_as_a_whole(path: Path) -> bool:
    """Whether the module's ``pytestmark`` holds ``pytest.mark.ros`` (read from its source)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                getattr(target, 'id', None) == 'pytestmark' for target in node.targets):
            return any(isinstance(mark, ast.Attribute) and mark.attr == 'ros'
                       for mark in ast.walk(node.value))
    return False


class NeedsRos(pytest.Module):
    """A test module of ROS tests only, on a stack without ROS: skipped without importing it."""

    def collect(self):
        pytest.skip('every test here needs ROS 2 (marked ros) and rclpy is not installed')


def pytest_pycollect_makemodule(module_path: Path, parent):
    """
    Skip the modules marked ros as a whole where rclpy is missing (STACK=oldest).

    They import rclpy or message packages at the top, so importing them would be a collection
    error; a module with tests that need no ROS imports ROS inside its ros-marked tests instead.
    """
    if not ROS_INSTALLED and marked_ros_as_a_whole(module_path):
        return NeedsRos.from_parent(parent, path=module_path)
    return None


@pytest.fixture(scope='module')
def ros(request):
    """Give the test module its own ROS node (``rosutil.RosHarness``), spun in the background."""
    from rosutil import RosHarness  # imports rclpy: absent on the oldest stack (no ros tests)
    harness = RosHarness(f'{request.module.__name__}_harness')
    yield harness
    harness.close()


@pytest.fixture(scope='session')
def shared_data():
    """
    Locate a path under ../shared/data, or skip with the reason.

    Use as ``shared_data('flow', ...)``.
    """
    def locate(*parts: str) -> Path:
        path = SHARED_DATA.joinpath(*parts)
        if not path.exists():
            pytest.skip(f'{path} not found: the shared test data sits beside the project '
                        'checkout (../shared/data)')
        return path
    return locate


@pytest.fixture(scope='session')
def runtime():
    """Open one OpenCL runtime for the kernel tests of the whole session (PoCL in CI)."""
    from cl_vision_nodes.opencl.runtime import ClRuntime
    return ClRuntime(os.environ.get('CL_VISION_TEST_DEVICE', 'auto'))
