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
Real-DDS test harness: nodes under test run as their own processes.

The test talks to them through an rclpy node spinning in a background thread (topics and parameter
services). Images go in and out as sensor_msgs/Image messages (``numpy_to_image``,
``image_to_numpy``), as a camera driver and a user's subscriber see them.
"""
from __future__ import annotations

from collections.abc import Mapping
import contextlib
import functools
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from cl_vision_nodes.imaging.encodings import (array_to_raw, check_array, HOST_IS_BIG_ENDIAN,
                                               raw_to_array, RawImage)
from cl_vision_nodes.ros.rclpy_compat import publisher_count
from cl_vision_nodes.ros.remote_parameters import answered, ParameterServices, to_parameter
import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from rclpy.subscription import Subscription
from sensor_msgs.msg import Image
from std_msgs.msg import Header

REPO = Path(__file__).resolve().parents[1]
PARAMETER_TIMEOUT_S = 20.0


def image_msg_to_raw(msg: Image) -> RawImage:
    """Return the message's fields as a RawImage; ``data`` shares the message buffer."""
    return RawImage(msg.encoding, msg.height, msg.width, msg.step, bool(msg.is_bigendian),
                    np.frombuffer(msg.data, dtype=np.uint8))


def image_to_numpy(msg: Image) -> np.ndarray:
    """Return the HxW / HxWxC array of an Image message (a view of its data)."""
    return raw_to_array(image_msg_to_raw(msg))


def numpy_to_image(array_: np.ndarray, encoding: str, header: Header | None = None) -> Image:
    """Return an Image message of ``array_``: packed rows, host order, the encoding's ROS name."""
    info, pixels = check_array(array_, encoding)
    msg = Image()
    raw = array_to_raw(pixels, info.name, HOST_IS_BIG_ENDIAN, out=msg.data)
    msg.height, msg.width, msg.step = raw.height, raw.width, raw.step
    msg.encoding, msg.is_bigendian = info.name, int(raw.is_bigendian)
    if header is not None:
        msg.header = header
    return msg


def command(argv: list[str], sigint_ignored: bool = False) -> list[str]:
    """
    Return ``argv``, or ``argv`` started with SIGINT ignored as a shell starts background jobs.

    Python then installs no KeyboardInterrupt handler and only rclpy's handler sees Ctrl-C.
    """
    return ['sh', '-c', 'trap "" INT; exec "$@"', 'sh', *argv] if sigint_ignored else argv


class NodeProcess:
    """A node executable started as ``python -m module --ros-args ...``; stopped with SIGINT."""

    def __init__(self, module: str, ros_args: Sequence[str] = (), sigint_ignored: bool = False,
                 parent: Sequence[str] = (), env: Mapping[str, str] | None = None):
        """
        Start the node, under ``parent`` (a command prefix) if given, with ``env`` added.

        Under a parent the processes form a group of their own (``signal_group``), as a
        terminal's foreground job.
        """
        self.log = tempfile.NamedTemporaryFile('w+', suffix='.log', delete=False)
        self.proc = subprocess.Popen(
            command([*parent, sys.executable, '-m', module, '--ros-args', *ros_args],
                    sigint_ignored),
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})}, start_new_session=bool(parent))

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the process group started under a parent, as a terminal does."""
        os.killpg(self.proc.pid, signum)

    def output(self) -> str:
        return Path(self.log.name).read_text()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for_output(self, text: str, timeout: float = 60.0) -> bool:
        """Until ``text`` is in the log (True), or the process ended or the timeout passed."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if not self.alive() or time.monotonic() > deadline:
                return text in self.output()
            time.sleep(0.05)
        return True

    def stop(self, timeout: float = 15.0) -> int:
        """SIGINT (what Ctrl-C sends) and the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f'node did not stop on SIGINT:\n{self.output()}') from None


class Collector:
    """Messages received on one topic, with a wait that returns as soon as enough arrived."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.node: Node | None = None  # the subscription's
        self.messages: list[Any] = []
        self.arrival_times: list[float] = []
        self._cond = threading.Condition()

    def __call__(self, msg: Any) -> None:
        with self._cond:
            self.messages.append(msg)
            self.arrival_times.append(time.monotonic())
            self._cond.notify_all()

    def publisher_count(self) -> int:
        """Return how many publishers the subscription has (Humble's rclpy: on its topic)."""
        assert self.node is not None and self.subscription is not None
        return publisher_count(self.node, self.subscription)

    def wait_for(self, predicate: Callable[[list[Any]], Any], timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = predicate(self.messages)
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)


Wanted = str | Callable[[Any], bool]  # a header.frame_id, or a predicate on one message


def publish_until_answered(publish: Callable[[], Wanted | bool | None],
                           answers: Collector | Mapping[Any, Collector],
                           wanted: Wanted | None = None, *, tries: int = 4,
                           timeout: float = 10.0, log: Callable[[], str] = str) -> Any:
    """
    Publish until the answer arrives: best-effort input may drop a message, so send it again.

    Up to ``tries`` times: ``publish()``, then wait up to ``timeout`` s on each collector of
    ``answers`` (one, or a mapping of them) for a message that answers it: whose header.frame_id
    is ``wanted``, or for which ``wanted(message)`` is true. Where that changes from try to try
    (a new tag or stamp each time), ``publish`` returns it instead; it returns False where it sent
    nothing to answer this try (the next try follows at once).

    Return the answer, or for a mapping the answers by key. Raise AssertionError naming what did
    not answer, followed by ``log()`` (a node's output), after the last try.
    """
    collectors = answers if isinstance(answers, Mapping) else {None: answers}
    got: dict[Any, Any] = {}
    expected = wanted
    for _ in range(tries):
        sent = publish()
        if sent is False:
            continue
        expected = wanted if sent is None else sent
        match = (functools.partial(_has_frame_id, expected) if isinstance(expected, str)
                 else expected)
        got = {key: collector.wait_for(lambda msgs: next((m for m in msgs if match(m)), None),
                                       timeout)
               for key, collector in collectors.items()}
        if all(m is not None for m in got.values()):
            return got if isinstance(answers, Mapping) else got[None]
    to = f' to {expected}' if isinstance(expected, str) else ''
    where = f' on {[k for k in collectors if got.get(k) is None]}' \
        if isinstance(answers, Mapping) else ''
    raise AssertionError(f'no answer{to}{where} in {tries} tries:\n{log()}')


def _has_frame_id(frame_id: str, msg: Any) -> bool:
    return msg.header.frame_id == frame_id


def publish_each(publishers: list[Any], msgs: list[Any]) -> None:
    """Publish the messages, the first on the first publisher and so on."""
    for publisher, msg in zip(publishers, msgs):
        publisher.publish(msg)


class RosHarness:
    """The test's own node, in its own rclpy context, spun by a background thread."""

    def __init__(self, name: str = 'test_harness'):
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def publisher(self, msg_type: type, topic: str, qos: QoSProfile = qos_profile_sensor_data):
        return self.node.create_publisher(msg_type, topic, qos)

    def collect(self, msg_type: type, topic: str, qos: QoSProfile | int = 10) -> Collector:
        collector = Collector()
        collector.node = self.node
        collector.subscription = self.node.create_subscription(msg_type, topic, collector, qos)
        return collector

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return False

    def parameter_services(self, node_name: str) -> ParameterServices:
        """
        Return the parameter services of ``node_name`` once they are there.

        New clients for every use: clients kept from a node that stopped still see its services
        ready until discovery notices, so a request to a node started again under the same name
        went to the old one and was never answered (test_launch, once in a fresh-clone CI run).
        """
        services = ParameterServices(self.node, node_name, answered, PARAMETER_TIMEOUT_S)
        services.wait_for_services()
        return services

    def set_parameters(self, node_name: str, values: dict[str, Any]) -> list[Any]:
        """Call ``<node>/set_parameters``, the service ``ros2 param set`` calls."""
        return self.parameter_services(node_name).set_each(
            [to_parameter(k, v) for k, v in values.items()])

    @contextlib.contextmanager
    def changed_parameters(self, node_name: str, /, **values: Any) -> Iterator[list[Any]]:
        """
        Set ``values`` for the ``with`` block (yielding the results), then restore the old ones.

        The previous values of those the node accepted are put back when the block ends, also when
        it fails, so a module-scoped node leaves every test as it found it. Restored in reverse
        order, undoing the change step by step (each parameter is checked on its own).
        """
        before = self.get_parameters(node_name, list(values))
        results = self.set_parameters(node_name, values)
        try:
            yield results
        finally:
            taken = [name for name, result in zip(values, results) if result.successful]
            restored = self.set_parameters(node_name, {n: before[n] for n in reversed(taken)})
            refused = [r.reason for r in restored if not r.successful]
            assert not refused, f'{node_name}: previous parameters refused: {refused}'

    def get_parameters(self, node_name: str, names: list[str]) -> dict[str, Any]:
        """Return the current values (``ros2 param get``), by name."""
        return self.parameter_services(node_name).values(names)

    def describe_parameters(self, node_name: str) -> dict[str, Any]:
        """Every declared parameter's descriptor (``ros2 param describe``), by name."""
        services = self.parameter_services(node_name)
        return {d.name: d for d in services.descriptors(services.names())}

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self._thread.join(5.0)
