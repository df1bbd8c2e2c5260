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

"""bags/storage.py: bags written with ``open_writer`` read back with ``Bag`` and with rosbags."""
from bagutil import read_bag, write_truncated_bag
from cl_vision_nodes.bags.storage import Bag, message_class, open_writer, topic_counts, typestore
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.ros.cdr import read_stamp
import numpy as np
import pytest

IMAGE = 'sensor_msgs/msg/Image'
INFO = 'sensor_msgs/msg/CameraInfo'


def image_cdr(stamp_ns: int, value: int) -> bytes:
    types = typestore().types
    header = types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9,
                                                   nanosec=stamp_ns % 10**9),
        frame_id='cam')
    msg = types[IMAGE](header=header, height=1, width=2, encoding='mono8', is_bigendian=0,
                       step=2, data=np.full(2, value, np.uint8))
    return bytes(typestore().serialize_cdr(msg, IMAGE))


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_written_messages_read_back_in_order_with_declared_empty_topics(tmp_path, storage):
    path = tmp_path / 'bag'
    with open_writer(path, storage) as writer:
        writer.add_topic('/cam/image', IMAGE)
        writer.add_topic('/cam/image', IMAGE)  # again: no second connection
        writer.add_topic('/cam/info', INFO)  # declared, never written
        for k in range(3):
            writer.write('/cam/image', 2_000_000_000 + k, image_cdr(1_000_000_000 + k, k))
    assert topic_counts(path) == {'/cam/image': (IMAGE, 3), '/cam/info': (INFO, 0)}
    bag = Bag(path, ['/cam/image'])
    assert bag.topics == {'/cam/image': IMAGE} and bag.start_ns == 2_000_000_000
    messages = list(bag.messages())
    assert [(m.timestamp_ns, read_stamp(m.data)) for m in messages] == [
        (2_000_000_000 + k, 1_000_000_000 + k) for k in range(3)]
    assert [m.data for m in messages] == [image_cdr(1_000_000_000 + k, k) for k in range(3)]
    read = read_bag(path)
    assert read.storage == storage and read.types == {'/cam/image': IMAGE, '/cam/info': INFO}
    assert [msg.data.tolist() for _, msg in read.messages['/cam/image']] == [
        [k, k] for k in range(3)]


def test_unreadable_bags_and_unknown_names_are_data_format_errors(tmp_path):
    with pytest.raises(DataFormatError, match='no such bag'):
        Bag(tmp_path / 'missing')
    write_truncated_bag(tmp_path / 'truncated')
    with pytest.raises(DataFormatError, match='cannot read the bag'):
        list(Bag(tmp_path / 'truncated').messages())
    with open_writer(tmp_path / 'one') as writer:
        writer.add_topic('/a', IMAGE)
    with pytest.raises(DataFormatError, match='no topic /b; the bag has /a'):
        Bag(tmp_path / 'one', ['/b'])


@pytest.mark.ros  # the installed message packages
def test_message_classes_are_the_installed_ones_and_unknown_names_are_data_format_errors():
    assert message_class(IMAGE).__name__ == 'Image'
    with pytest.raises(DataFormatError, match='no_such_msgs/msg/Thing is not installed'):
        message_class('no_such_msgs/msg/Thing')
