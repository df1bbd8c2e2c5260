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
`cl-vision tune`: a search over a node's parameters on a bag's frames, in-process on the device.

By concern: ``space`` (what is searched, from the node's schema), ``frames`` (the bag's frames,
tuning and held-out halves), ``evaluator`` (one parameter set scored and timed on the device),
``pool`` (evaluators in this process or in worker processes), ``study`` (the Optuna search, in a
journal file), ``progress`` (the trials line on stderr), ``output`` (the node's parameter file),
``report`` (report.md and its pictures) and ``session`` (one tune from start to end). No rclpy
anywhere in it.
"""
