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
The topics of each node, declared once: what it subscribes and publishes, with message types.

Each node class answers ``topics(values)`` for its parameter values (inputs change with
``image_transport``, ``rectify`` or ``stereo``); its capabilities create their publishers from
the same declarations, and ``cl-vision eval``, ``cl-vision bench node`` and the launch tests
read them instead of restating topic names. Names are relative to the node's namespace.
"""
from __future__ import annotations

from dataclasses import dataclass
import importlib
from typing import Mapping

from cl_vision_nodes.params import Value
from sensor_msgs.msg import CompressedImage, Image

COMPRESSED_SUFFIX = '/compressed'
"""image_transport's compressed topic of an image topic: its name plus this."""


@dataclass(frozen=True)
class Topic:
    """One topic of a node: its relative name and its message class."""

    name: str
    msg_type: type

    @property
    def type_name(self) -> str:
        """Return the ROS type name, e.g. ``sensor_msgs/msg/Image`` (rosbags' spelling)."""
        package = self.msg_type.__module__.split('.')[0]
        return f'{package}/msg/{self.msg_type.__name__}'


@dataclass(frozen=True)
class NodeTopics:
    """A node's inputs and outputs; the first output is its main answer."""

    inputs: tuple[Topic, ...]
    outputs: tuple[Topic, ...]


def image_input(name: str, values: Mapping[str, Value]) -> Topic:
    """
    Return image input ``name`` as the node subscribes it.

    A sensor_msgs/Image, or with ``image_transport`` compressed the CompressedImage topic
    ``<name>/compressed``, image_transport's convention.
    """
    if values.get('image_transport') == 'compressed':
        return Topic(f'{name}{COMPRESSED_SUFFIX}', CompressedImage)
    return Topic(name, Image)


def other_transport(topic: Topic) -> tuple[Topic, str] | None:
    """Return where an image input's camera would publish the other way, and that transport."""
    if topic.msg_type is Image:
        return Topic(f'{topic.name}{COMPRESSED_SUFFIX}', CompressedImage), 'compressed'
    if topic.msg_type is CompressedImage and topic.name.endswith(COMPRESSED_SUFFIX):
        return Topic(topic.name[:-len(COMPRESSED_SUFFIX)], Image), 'raw'
    return None


def node_topics(executable: str, values: Mapping[str, Value]) -> NodeTopics:
    """Return the topics of node ``executable`` (its module's name) for parameter ``values``."""
    module = importlib.import_module(f'cl_vision_nodes.ros.{executable}')
    node_class = next(value for value in vars(module).values()
                      if getattr(getattr(value, 'SCHEMA', None), 'node_name', None) == executable
                      and hasattr(value, 'topics'))
    return node_class.topics(values)
