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
Evaluation: the nodes as ROS processes on a rosbag2, played in lockstep, scored, reported.

By concern: ``frames`` (a bag's frames by stamp), ``cameras`` (which topics are the camera),
``wiring`` (which nodes run on it), ``player`` (lockstep playback and recording), ``scorers``
(accuracy against ground truth), ``quality`` and ``quality_scorers`` (quality without it),
``strip`` (the picture strip), ``report`` (report.json, report.md, pictures), ``compare`` (two
runs side by side), ``one_bag`` (one bag's run), ``bag_folder``, ``folder_run`` and ``ray_eval``
(a folder of bags, here or on a Ray cluster), ``progress_bar`` (the progress line of eval and
tune).
"""
