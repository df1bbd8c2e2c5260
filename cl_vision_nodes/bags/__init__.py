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
rosbag2 files: reading and writing stored CDR, the dataset layout, data sets, replay over DDS.

``storage`` (open, read, write with rosbags), ``layout`` (topics, frames and cameras of the
dataset bags), ``datasets`` (data sets with ground truth recognised and written as bags),
``replay`` (a bag published at its recorded pace, for machines without ros2 bag).
"""
