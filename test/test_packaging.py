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

"""The ament_python package builds with colcon and installs what `ros2 run` / launch need."""
import os
from pathlib import Path
import subprocess
import sys

from cl_vision_nodes.schema_files import config_files, expected_files
from cl_vision_nodes.schemas import NODE_SCHEMAS
from packageutil import flat, REPO, setup_executables
import pytest
import yaml


@pytest.mark.slow
def test_colcon_build_installs_executables_share_and_index(tmp_path):
    colcon = Path(sys.executable).with_name('colcon')
    if not colcon.exists():
        pytest.skip('colcon is not installed in this environment (make test installs it)')
    env = dict(os.environ, PATH=f'{colcon.parent}{os.pathsep}{os.environ["PATH"]}')
    result = subprocess.run(
        [str(colcon), '--log-base', str(tmp_path / 'log'), 'build', '--base-paths', str(REPO),
         '--build-base', str(tmp_path / 'build'), '--install-base', str(tmp_path / 'install')],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    prefix = tmp_path / 'install' / 'cl_vision_nodes'
    for exe in setup_executables():
        assert os.access(prefix / 'lib' / 'cl_vision_nodes' / exe, os.X_OK), exe
    share = prefix / 'share' / 'cl_vision_nodes'
    assert (share / 'package.xml').is_file()
    assert sorted(p.name for p in (share / 'launch').iterdir()) == \
        sorted(p.name for p in (REPO / 'launch').glob('*.launch.xml'))
    assert sorted(p.name for p in (share / 'config').iterdir()) == \
        sorted([*(p.name for p in (REPO / 'config').glob('*.yaml')),
                'fastdds_large_images.xml'])  # the launch files' DDS profile
    assert (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
            / 'cl_vision_nodes').is_file()
    kernels = list(prefix.glob('lib/python3*/site-packages/cl_vision_nodes/kernels/*.cl'))
    assert {k.name for k in kernels} == {k.name for k in (REPO / 'cl_vision_nodes' /
                                                          'kernels').glob('*.cl')}


def installed_executables() -> Path:
    """Return <prefix>/lib/cl_vision_nodes of the installed package, found through the index."""
    from ament_index_python.packages import get_package_prefix, PackageNotFoundError
    try:
        prefix = Path(get_package_prefix('cl_vision_nodes'))
    except PackageNotFoundError:
        pytest.skip('cl_vision_nodes is not installed here (make venv or colcon build does it)')
    return prefix / 'lib' / 'cl_vision_nodes'


def test_the_installed_prefix_has_the_executables_where_ros2_run_looks():
    """
    The venv is a complete ROS prefix: executables are where `ros2 run` looks.

    `ros2 run` and `ros2 launch` take the package's prefix from the ament index and run
    <prefix>/lib/cl_vision_nodes/<exe> (`ros2 pkg executables` lists that folder); `make` puts the
    package in the venv, which must therefore be a complete ROS prefix.
    """
    libexec = installed_executables()
    found = [p.name for p in libexec.iterdir() if p.is_file() and os.access(p, os.X_OK)]
    assert sorted(found) == sorted(setup_executables()), libexec


@pytest.mark.ros
def test_an_installed_executable_starts_its_node():
    libexec = installed_executables()
    result = subprocess.run([str(libexec / 'convert_node'), '--ros-args', '-p',
                             'device:=no-such-gpu'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and 'cannot start' in result.stderr, result.stderr


def test_generated_config_and_readme_tables_are_up_to_date():
    stale = [str(path.relative_to(REPO)) for path, text in expected_files(REPO).items()
             if not path.exists() or path.read_text() != text]
    assert not stale, f'out of date: {stale}; run python -m cl_vision_nodes.tools.gen_config'


@pytest.mark.parametrize('path', sorted((REPO / 'config').glob('*.yaml')), ids=lambda p: p.name)
def test_config_yaml_holds_exactly_the_declared_parameters(path):
    doc = yaml.safe_load(path.read_text())
    (key, section), = doc.items()
    assert key == '/**'  # any namespace, any node name
    schema, _ = config_files(REPO)[path]
    params = flat(section['ros__parameters'])
    assert set(params) == set(schema.specs)
    for name, value in params.items():
        assert type(value) is schema.specs[name].type, name
    schema.validate(schema.defaults(), params, allow_read_only=True)


def test_every_node_has_a_config_file():
    assert all((REPO / 'config' / f'{node}.yaml').is_file() for node in NODE_SCHEMAS)


def test_every_node_has_an_executable_a_schema_and_a_readme_table():
    assert set(setup_executables()) - {'cl-vision'} == set(NODE_SCHEMAS)
    readme = (REPO / 'README.md').read_text()
    assert all(f'<!-- params:{node} -->' in readme for node in NODE_SCHEMAS)
