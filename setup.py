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

"""ament_python build of cl_vision_nodes (colcon, rosdep) and pip install of the same tree."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'cl_vision_nodes'

# Every node is an executable in lib/cl_vision_nodes (for ros2 run / launch) and on PATH for pip
# installs; `cl-vision` is the command-line tool.
NODES = {
    'convert_node': 'cl_vision_nodes.ros.executables:convert_node',
    'flow_node': 'cl_vision_nodes.ros.executables:flow_node',
    'surf_node': 'cl_vision_nodes.ros.executables:surf_node',
    'disparity_node': 'cl_vision_nodes.ros.executables:disparity_node',
    'rectify_node': 'cl_vision_nodes.ros.executables:rectify_node',
    'vision_pipeline': 'cl_vision_nodes.ros.executables:vision_pipeline',
}

# The oldest versions supported: Ubuntu 22.04's (Humble); requirements/oldest.txt pins them and
# `make test STACK=oldest` runs on them. They are the `pypi` extra (`pip install .[pypi]`), not
# install_requires: on a robot numpy, OpenCV, pyopencl and scipy come from apt through rosdep, and
# python3-opencv has no dist-info under any OpenCV wheel's name, so requiring
# opencv-python-headless would make pip install a second OpenCV over the distribution's, and
# script wrappers that check install_requires through pkg_resources (setuptools' develop and
# easy_install templates, as colcon builds may write them) stop with DistributionNotFound. PyYAML
# 6.0 is the oldest with a Python 3.10 wheel to test; Ubuntu 22.04's python3-yaml is 5.4.1.
OLDEST = {'numpy': '1.21.5', 'opencv-python-headless': '4.5.4', 'pyopencl': '2022.1',
          'scipy': '1.8.1', 'PyYAML': '6.0'}

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={PACKAGE: ['kernels/*/*.cl', 'ros/*.xml']},
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
        (f'share/{PACKAGE}/launch', glob('launch/*.launch.xml')),
        (f'share/{PACKAGE}/config', glob('config/*.yaml')),
        # the Fast DDS profile for large images, for the launch files' processes (set_env)
        (f'share/{PACKAGE}/config', [f'{PACKAGE}/ros/fastdds_large_images.xml']),
    ],
    python_requires='>=3.10',
    install_requires=['setuptools'],
    extras_require={'pypi': [f'{name}>={version}' for name, version in OLDEST.items()]},
    zip_safe=False,
    maintainer='cl_vision_nodes maintainers',
    maintainer_email='maintainers@cl-vision-nodes.invalid',
    description='GPU-accelerated vision nodes in OpenCL: optical flow, SURF, ELAS stereo.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [f'{name} = {target}' for name, target in NODES.items()]
        + ['cl-vision = cl_vision_nodes.tools.cli:main'],
    },
)
