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
The transport floor under allocator and Fast DDS profile settings (`cl-vision bench transport`).

The floor is what DDS alone costs to carry a message from one process to another: images paced
through a transport_link.Link (a publisher process and a subscriber process, nothing between),
fresh processes per image. Cases: glibc's allocator defaults against the package's settings
(ros/allocator.py), reliable and best effort, under the package's Fast DDS profile; then each
variant asked for, the profile changed in one respect (``VARIANTS``), as README and
docs/BENCHMARKS.md quote them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import xml.etree.ElementTree as ET

from cl_vision_nodes.bags.datasets import MessageFactory
from cl_vision_nodes.bags.layout import IMAGE_TYPE, StereoCamera
from cl_vision_nodes.bags.storage import typestore
from cl_vision_nodes.errors import CLVisionError
from cl_vision_nodes.processes.transport_link import FIRST_STAMP_NS, Link, Message
from cl_vision_nodes.ros.dds_profile import profile_environment, profile_path, PROFILE_VARIABLES
import numpy as np

ENCODING_ARRAYS = {'32FC2': (2, np.float32), 'bgr8': (3, np.uint8), 'mono8': (1, np.uint8),
                   '32FC1': (1, np.float32)}
WARMUP = 10
STUDY_FRAMES = 100
MIB = 1 << 20


def image_message(width: int, height: int, encoding: str, topic: str) -> Message:
    """Return an Image of random pixels (sensor_msgs CDR, as a camera driver would send)."""
    channels, dtype = ENCODING_ARRAYS[encoding]
    rng = np.random.default_rng(0)
    shape = (height, width) if channels == 1 else (height, width, channels)
    pixels = (rng.random(shape, np.float32) if dtype == np.float32
              else rng.integers(0, 256, shape, np.uint8))
    store = typestore()
    msg = MessageFactory(store, StereoCamera()).image(pixels, encoding, FIRST_STAMP_NS, 'camera')
    return Message(topic, IMAGE_TYPE, bytes(store.serialize_cdr(msg, IMAGE_TYPE)))


@dataclass(frozen=True)
class Variant:
    """
    The package's Fast DDS profile, changed in one respect, for the study.

    ``history``, ``data_sharing`` and ``publish_mode`` go into default data_writer/data_reader
    profiles, which rmw_fastrtps reads only with RMW_FASTRTPS_USE_QOS_FROM_XML=1 (otherwise it
    forces PREALLOCATED_WITH_REALLOC, data sharing off and asynchronous publishing itself).
    """

    name: str
    segment_size: int = 0  # SHM segment bytes (largest message at most half); 0: the profile's
    history: str = ''  # historyMemoryPolicy
    data_sharing: str = ''  # AUTOMATIC or OFF
    publish_mode: str = 'ASYNCHRONOUS'  # rmw_fastrtps' own choice, kept unless studied
    udp_only: bool = False
    udp_buffer: int = -1  # UDP socket buffers; -1: the profile's, 0: Fast DDS' default
    fastdds_defaults: bool = False  # no profile at all

    def from_xml(self) -> bool:
        return bool(self.history or self.data_sharing)

    def profile(self, base: str) -> str:
        """Return the profile's XML text."""
        ns = 'http://www.eprosima.com'
        ET.register_namespace('', ns)
        root = ET.fromstring(base)
        profiles = root.find(f'{{{ns}}}profiles')
        if self.fastdds_defaults:  # a profile that changes nothing (an empty one is an error)
            for child in list(profiles):
                profiles.remove(child)
            ET.SubElement(ET.SubElement(profiles, f'{{{ns}}}participant', profile_name='defaults',
                                        is_default_profile='true'), f'{{{ns}}}rtps')
        for descriptor in root.iter(f'{{{ns}}}transport_descriptor'):
            kind = descriptor.find(f'{{{ns}}}type').text
            if kind == 'SHM' and self.segment_size:
                descriptor.find(f'{{{ns}}}segment_size').text = str(self.segment_size)
                largest = descriptor.find(f'{{{ns}}}maxMessageSize')  # Fast DDS: <= segment
                largest.text = str(min(int(largest.text), self.segment_size // 2))
            if kind == 'UDPv4' and self.udp_buffer >= 0:
                for tag in ('sendBufferSize', 'receiveBufferSize'):
                    element = descriptor.find(f'{{{ns}}}{tag}')
                    if self.udp_buffer:
                        element.text = str(self.udp_buffer)
                    else:
                        descriptor.remove(element)
        if self.udp_only:
            for transports in root.iter(f'{{{ns}}}userTransports'):
                for entry in list(transports):
                    if entry.text == 'shm_large':
                        transports.remove(entry)
        if self.from_xml():
            for tag in ('data_writer', 'data_reader'):
                endpoint = ET.SubElement(profiles, f'{{{ns}}}{tag}',
                                         profile_name=f'study_{tag}', is_default_profile='true')
                qos = ET.SubElement(endpoint, f'{{{ns}}}qos')
                if tag == 'data_writer':
                    mode = ET.SubElement(ET.SubElement(qos, f'{{{ns}}}publishMode'),
                                         f'{{{ns}}}kind')
                    mode.text = self.publish_mode
                sharing = ET.SubElement(ET.SubElement(qos, f'{{{ns}}}data_sharing'),
                                        f'{{{ns}}}kind')
                sharing.text = self.data_sharing or 'OFF'
                ET.SubElement(endpoint, f'{{{ns}}}historyMemoryPolicy').text = (
                    self.history or 'PREALLOCATED_WITH_REALLOC')
        return ET.tostring(root, encoding='unicode')


VARIANTS = {v.name: v for v in (
    Variant('package'),
    Variant('fastdds-defaults', fastdds_defaults=True),
    Variant('shm-8mib', segment_size=8 * MIB),
    Variant('shm-128mib', segment_size=128 * MIB),
    Variant('history-realloc', history='PREALLOCATED_WITH_REALLOC'),
    Variant('history-dynamic', history='DYNAMIC'),
    Variant('history-reusable', history='DYNAMIC_REUSABLE'),
    Variant('data-sharing', data_sharing='AUTOMATIC'),
    Variant('synchronous', history='PREALLOCATED_WITH_REALLOC', publish_mode='SYNCHRONOUS'),
    Variant('udp-16mib', udp_only=True),
    Variant('udp-default-buffers', udp_only=True, udp_buffer=0),
)}
"""The package's profile (``package``) and one change each: no profile, SHM segment size,
history memory policy from XML (realloc is rmw_fastrtps' own choice, through the XML path), data
sharing on, synchronous publishing, UDP alone with the profile's and with Fast DDS' buffers."""


def variant_environment(variant: Variant, env: dict[str, str], workdir: Path) -> dict[str, str]:
    """Return ``env`` with the variant's profile file (and the XML QoS switch) set."""
    path = workdir / 'profile.xml'
    path.write_text(variant.profile(Path(profile_path()).read_text()))
    env = {k: v for k, v in env.items() if k not in PROFILE_VARIABLES}
    env.update(profile_environment(str(path)))
    if variant.from_xml():
        env['RMW_FASTRTPS_USE_QOS_FROM_XML'] = '1'
    return env


@dataclass(frozen=True)
class StudyCase:
    """One run: a profile variant, reliability and allocator, over every image set."""

    variant: str
    best_effort: bool
    default_allocator: bool


def measure(case: StudyCase, name: str, message: Message, frames: int, rate_hz: float,
            env: dict[str, str], workdir: Path, timeout_s: float) -> dict:
    """
    Pace ``frames`` of one image through a fresh publisher/subscriber pair; return its row.

    Fresh processes per image: glibc raises its mmap threshold after the largest buffer freed,
    so an image measured after a larger one would inherit that allocator state.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    env = variant_environment(VARIANTS[case.variant], env, workdir)
    link = Link({name: [message]}, {message.topic: message.msgtype}, workdir, env,
                best_effort=case.best_effort, default_allocator=case.default_allocator)
    try:
        link.wait_ready(timeout_s)
        link.paced([name], WARMUP, rate_hz, {message.topic})
        series = link.paced([name], frames, rate_hz, {message.topic})
    finally:
        memory = link.close()
    return {'variant': case.variant, 'reliability': 'best effort' if case.best_effort
            else 'reliable', 'allocator': 'glibc default' if case.default_allocator
            else 'configured', 'image': name, 'bytes': len(message.data), **series.summary(),
            **memory}


def study_cases(variants: list[str]) -> list[StudyCase]:
    """Return the allocator comparison under the package profile, then each variant."""
    cases = [StudyCase('package', best_effort, default)
             for best_effort in (False, True) for default in (True, False)]
    return cases + [StudyCase(v, best_effort, False) for v in variants if v != 'package'
                    for best_effort in (False, True)]


def check_choices(variants: list[str], encodings: list[str]) -> None:
    """Raise CLVisionError naming an unknown variant or encoding, and the choices."""
    for what, asked, known in (('variant', variants, VARIANTS),
                               ('encoding', encodings, ENCODING_ARRAYS)):
        unknown = [name for name in asked if name not in known]
        if unknown:
            raise CLVisionError(f"unknown {what} {', '.join(unknown)}; choose from "
                                f"{', '.join(known)}")
