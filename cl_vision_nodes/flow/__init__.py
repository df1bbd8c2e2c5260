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
Dense optical flow in OpenCL (no ROS).

Pyramidal Lucas-Kanade, robust Horn-Schunck, block matching; plus the evaluation metrics and the
Middlebury colour wheel.
"""
from cl_vision_nodes.flow.colorwheel import flow_to_color
from cl_vision_nodes.flow.estimator import FlowEstimator
from cl_vision_nodes.flow.metrics import flow_errors, FlowErrors
from cl_vision_nodes.flow.schema import FLOW_SCHEMA, FlowSettings, METHODS

__all__ = ['FLOW_SCHEMA', 'METHODS', 'FlowErrors', 'FlowEstimator', 'FlowSettings',
           'flow_errors', 'flow_to_color']
