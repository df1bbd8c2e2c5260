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
The benchmarks: what `cl-vision bench` measures, below its command faces.

In process: ``flow_speed``, ``surf_speed``, ``elas_speed``, ``pipeline_speed`` (ms per frame
against OpenCV and libelas). Through DDS: ``node_latency`` (a node against its compute and the
transport floor), ``transport`` (the floor under allocator and profile variants), ``soak``
(memory and files over a long run). Shared: ``timing`` (warm-up, repeats, device stages),
``frame_work`` (one frame's device work of each capability), ``scene`` (the synthetic stereo
scene a camera process sends).
"""
