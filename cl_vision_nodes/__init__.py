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
GPU-accelerated vision in OpenCL: dense optical flow, SURF features and ELAS stereo.

Layers (checked by test/test_layers.py): the algorithm layer (every package but ``ros`` and
``tools``) never imports ROS and needs numpy, pyopencl and PyYAML; OpenCV only in the modules that
read or write image files or draw pictures (``dataio.formats``, ``dataio.synthetic``,
``elas.colormap``, ``surf.draw``). ``cl_vision_nodes.ros`` is the only package that imports ROS
at module level; ``cl_vision_nodes.tools`` imports it only inside the subcommands that talk to
ROS.
"""

__version__ = '0.1.0'
