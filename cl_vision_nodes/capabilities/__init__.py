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
What a node kind does with its frames, without ROS: the one frame-level capability of each.

``flow`` (a stream of frames: each frame's flow from the one before, the stream restarted where
a frame does not continue it, the spans), ``surf`` (each frame's keypoints). Each runs on a
runtime, times its stages on a ``StageClock`` (``stages``: the node's port, or ``StageTimes``
for tune and the benches) and hands back answers as arrays; the nodes (``ros/*_capability``)
publish them, tune scores them, the benches time them.
"""
