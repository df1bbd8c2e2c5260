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
The benches' synthetic stereo scene: two frames of one size as the CDR messages of each input.

A stereo rig panning by 2 px over ``dataio.synthetic``'s scene (``bags.datasets``), in mono8 or
the same views in colour, with camera infos: what a camera process sends to a node.
"""
from __future__ import annotations

from dataclasses import dataclass

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.datasets import Frame, MessageFactory, synthetic_stereo
from cl_vision_nodes.bags.storage import typestore
from cl_vision_nodes.processes.nodes import NodeSpec
from cl_vision_nodes.processes.transport_link import Message
import numpy as np


@dataclass(frozen=True)
class Scene:
    """The two frames of one size and their input messages per node input topic."""

    width: int
    height: int
    frames: list[Frame]
    messages: list[dict[str, Message]]  # per frame: topic -> message
    encoding: str = layout.IMAGE_ENCODING

    @property
    def size(self) -> str:
        colour = '' if self.encoding == layout.IMAGE_ENCODING else f' {self.encoding}'
        return f'{self.width}x{self.height}{colour}'

    def inputs(self, spec: NodeSpec, frame: int, prefix: str = '') -> list[Message]:
        return [Message(prefix + t, m.msgtype, m.data) for t, m in self.messages[frame].items()
                if t in spec.inputs]


def make_scene(width: int, height: int, encoding: str = layout.IMAGE_ENCODING) -> Scene:
    """Render two frames of a stereo scene panning by 2 px, with camera infos, as CDR."""
    dataset = synthetic_stereo(2, height, width, seed=0)
    store = typestore()
    factory = MessageFactory(store, dataset.camera)
    frames = list(dataset.frames)
    messages = []
    for frame in frames:
        msgs = dict(factory.frame_messages(frame, layout.START_NS))
        if encoding != layout.IMAGE_ENCODING:  # the same views in colour
            for topic, view, frame_id in ((layout.LEFT_IMAGE, frame.left, layout.LEFT_FRAME),
                                          (layout.RIGHT_IMAGE, frame.right, layout.RIGHT_FRAME)):
                msgs[topic] = factory.image(np.repeat(view[..., None], 3, axis=2), encoding,
                                            layout.START_NS, frame_id)
        messages.append({topic: Message(topic, layout.INPUT_TYPES[topic], bytes(
            store.serialize_cdr(msg, layout.INPUT_TYPES[topic]))) for topic, msg in msgs.items()})
    return Scene(width, height, frames, messages, encoding)
