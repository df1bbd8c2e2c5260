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
A transport link: a publisher process and a subscriber process, DDS (or a node) between them.

The publisher and the subscriber (``python -m cl_vision_nodes.processes.transport_link
publish|subscribe``) are driven by the calling process over their stdin and stdout. The
publisher sends named sets of stored CDR messages, each set under one fresh header stamp; the
subscriber takes every message raw (no Python deserialisation) and reports each arrival. The
latency of a set runs from the publisher's clock just before its first publish to the
subscriber's callback for its last message: when a consumer has it in hand (same host clock).
The stamp is a sequence number, not the send time itself: writing the time into a message would
put a copy of it inside the measured interval. Nodes keep their input's stamp on their outputs,
so `cl-vision bench node` matches a node's answers to the frame sent the same way, with a node
between the two processes instead of nothing; with nothing between, the link measures the
transport floor (`cl-vision bench transport`, benchmarks/transport.py).

Both processes configure the allocator (unless told to keep glibc's defaults) and apply the
package's Fast DDS profile unless the environment names one, as the nodes do. A publisher on
``dds_defaults`` is a user's camera instead: no profile of ours (none in its environment
either), Fast DDS' defaults.
"""
from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass, field
import json
from pathlib import Path
import queue
import resource
import subprocess
import sys
import threading
import time
from typing import Sequence

from cl_vision_nodes.bags.storage import message_class
from cl_vision_nodes.errors import CLVisionError
from cl_vision_nodes.processes import child_processes
from cl_vision_nodes.ros.allocator import configure_allocator, SETTINGS
from cl_vision_nodes.ros.cdr import read_stamp, with_stamp
from cl_vision_nodes.ros.dds_profile import PROFILE_VARIABLES, use_large_image_profile
import numpy as np

# rclpy is imported inside the functions that use it: tools import without ROS (test_layers).

MATCH_SETTLE_S = 0.3  # the other side of a DDS match lands right after ours
POLL_S = 0.05
PRIME_WAIT_S = 5.0  # for one priming set's answers before the next is sent
STOP_TIMEOUT_S = 15.0
INTERRUPTED_WAIT_S = 1.0  # for the end of input to end a process, once the tool is interrupted
FIRST_STAMP_NS = 1_000_000_000  # a zero stamp reads as "unset" to many tools
LOG_TAIL_LINES = 5
DIAGNOSTICS_TOPIC = '/diagnostics'
DIAGNOSTICS_DEPTH = 50  # a window per node and period: none dropped while the subscriber is busy


@dataclass(frozen=True)
class Message:
    """One message of a set: its topic, type and serialized CDR (header first)."""

    topic: str
    msgtype: str
    data: bytes


# --- the two processes -------------------------------------------------------------------------


def qos_profile(best_effort: bool, depth: int):
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=depth, reliability=(ReliabilityPolicy.BEST_EFFORT if best_effort
                                                else ReliabilityPolicy.RELIABLE))


def start_ros(default_allocator: bool, dds_defaults: bool = False):
    """Configure the process as the package's processes are (or a camera: ``dds_defaults``)."""
    if not default_allocator:
        configure_allocator()
    if not dds_defaults:
        use_large_image_profile()
    import rclpy
    rclpy.init()
    return rclpy


def say(line: str) -> None:
    sys.stdout.write(line + '\n')
    sys.stdout.flush()


def publisher_process(args: argparse.Namespace) -> int:
    """
    Publish message sets on command.

    Commands on stdin: ``send SET STAMP``, and ``pace SETS COUNT PERIOD_NS FIRST_STAMP`` for
    sets at a rate, cycling through SETS (comma-separated). Prints ``ready`` once every topic has
    a subscriber, ``sent STAMP NS`` per set.
    """
    manifest = json.loads(Path(args.manifest).read_text())
    rclpy = start_ros(args.default_allocator, args.dds_defaults)
    node = rclpy.create_node('cl_vision_floor_publisher')
    qos = qos_profile(args.best_effort, args.depth)
    publishers = {topic: node.create_publisher(message_class(msgtype), topic, qos)
                  for topic, msgtype in manifest['topics'].items()}
    sets = {name: [(publishers[topic], Path(path).read_bytes()) for topic, path in entries]
            for name, entries in manifest['sets'].items()}
    while any(p.get_subscription_count() < 1 for p in publishers.values()):
        time.sleep(POLL_S)
    time.sleep(MATCH_SETTLE_S)
    say('ready')

    def send(name: str, stamp: int) -> None:
        stamped = [(publisher, with_stamp(data, stamp)) for publisher, data in sets[name]]
        sent = time.time_ns()
        for publisher, data in stamped:
            publisher.publish(data)
        say(f'sent {stamp} {sent}')

    for line in sys.stdin:
        command, name, *numbers = line.split()
        if command == 'send':
            send(name, int(numbers[0]))
        else:  # pace
            count, period_ns, first = (int(n) for n in numbers)
            cycle = name.split(',')
            start = time.monotonic_ns()
            for k in range(count):
                time.sleep(max(0, start + k * period_ns - time.monotonic_ns()) / 1e9)
                send(cycle[k % len(cycle)], first + k)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def said_diagnostics(array) -> None:
    for status in array.status:
        say('diagnostics ' + json.dumps({'name': status.name,
                                         **{v.key: v.value for v in status.values}}))


def subscriber_process(args: argparse.Namespace) -> int:
    """
    Take every message raw and print ``arrived TOPIC STAMP RECEIVED_NS DDS_NS BYTES``.

    Prints ``ready`` once every topic has a publisher. With ``--diagnostics``, also prints
    ``diagnostics JSON`` per /diagnostics status (name and key/values: the nodes' frame counts
    by cause). Commands on stdin: ``save DIR`` writes the
    next message of each topic there (then prints ``saved``): no message is held otherwise, as
    holding the last one would change what the allocator does. End of input ends the process,
    after ``rss MAX_KB NOW_KB FAULTS`` (resident memory, peak and at the end; minor page faults).
    """
    from cl_vision_nodes.ros.rclpy_compat import publisher_count, with_message_info
    rclpy = start_ros(args.default_allocator)
    node = rclpy.create_node('cl_vision_floor_subscriber')
    qos = qos_profile(args.best_effort, args.depth)
    names = [topic for topic, _ in args.topic]
    saving: dict[str, Path] = {}

    def arrived(topic: str, data: bytes, info: dict | None) -> None:
        now = time.time_ns()
        dds_ns = (info or {}).get('received_timestamp', 0)  # no MessageInfo on Humble
        say(f'arrived {topic} {read_stamp(data)} {now} {dds_ns} '
            f'{len(data)}')
        folder = saving.pop(topic, None)
        if folder is not None:
            (folder / f'{names.index(topic)}.cdr').write_bytes(data)
            if not saving:
                say('saved')

    subscriptions = [node.create_subscription(
        message_class(msgtype), topic,
        with_message_info(lambda data, info, t=topic: arrived(t, data, info)), qos, raw=True)
        for topic, msgtype in args.topic]
    if args.diagnostics:
        from diagnostic_msgs.msg import DiagnosticArray
        node.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, said_diagnostics,
                                 DIAGNOSTICS_DEPTH)
    done = threading.Event()

    def commands() -> None:
        for line in sys.stdin:
            saving.update(dict.fromkeys(names, Path(line.split(maxsplit=1)[1].strip())))
        done.set()

    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor()  # holds the node, as rclpy.spin in a node process does
    executor.add_node(node)
    ready = False
    threading.Thread(target=commands, daemon=True).start()
    while not done.is_set():
        executor.spin_once(timeout_sec=POLL_S)
        if not ready and all(publisher_count(node, s) >= 1 for s in subscriptions):
            ready = True
            say('ready')
    with open('/proc/self/status') as status:
        now_kb = next(int(line.split()[1]) for line in status if line.startswith('VmRSS'))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    say(f'rss {usage.ru_maxrss} {now_kb} {usage.ru_minflt}')
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


# --- driving them ------------------------------------------------------------------------------


def camera_environment(env: dict[str, str]) -> dict[str, str]:
    """Return ``env`` without a Fast DDS profile: a camera driver started on its own."""
    return {k: v for k, v in env.items() if k not in PROFILE_VARIABLES}


class Child:
    """One of the two processes: commands to its stdin, its stdout lines in a queue."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path):
        self.log = log
        with log.open('w') as stream:
            self.process = child_processes.start(command, stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, stderr=stream,
                                                 env=env, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip('\n'))

    def command(self, text: str) -> None:
        self.process.stdin.write(text + '\n')
        self.process.stdin.flush()

    def line(self, timeout_s: float) -> str | None:
        """Return the next line, or None after ``timeout_s`` (raises if the process died)."""
        try:
            return self.lines.get(timeout=timeout_s)
        except queue.Empty:
            self.check_alive()
            return None

    def check_alive(self) -> None:
        code = self.process.poll()
        if code is not None and self.lines.empty():
            tail = self.log.read_text(errors='replace').strip().splitlines()[-LOG_TAIL_LINES:]
            raise CLVisionError(f'{self.log.stem} exited with code {code}: '
                                + (' | '.join(tail) or 'no output') + f' (log: {self.log})')

    def expect(self, word: str, timeout_s: float, alive: Sequence = ()) -> list[str]:
        """
        Wait for a line starting with ``word``; return its fields (other lines are kept).

        ``alive``: processes (evaluate.NodeProcess) whose death ends the wait.
        """
        deadline = time.monotonic() + timeout_s
        skipped = []
        try:
            while time.monotonic() < deadline:
                for process in alive:
                    process.check_alive()
                line = self.line(min(POLL_S * 4, max(deadline - time.monotonic(), 0.0)))
                if line is None:
                    continue
                if line.split()[0] == word:
                    return line.split()[1:]
                skipped.append(line)
        finally:
            for line in skipped:
                self.lines.put(line)
        raise CLVisionError(f'{self.log.stem}: no "{word}" within {timeout_s:g} s '
                            f'(log: {self.log})')

    def stop(self) -> list[str]:
        """End its input, wait for it; return its remaining lines."""
        if self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
            try:  # a publisher pacing many frames reads its input only when done
                self.process.wait(INTERRUPTED_WAIT_S if child_processes.interruption()
                                  else STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child_processes.stop([self.process])  # SIGINT, then SIGKILL
        remaining = []
        while not self.lines.empty():
            remaining.append(self.lines.get())
        return remaining


@dataclass
class Series:
    """Latencies of the sets sent: to the last callback and to DDS' reception, and losses."""

    latency_ms: list[float] = field(default_factory=list)
    dds_ms: list[float] = field(default_factory=list)
    lost: int = 0

    def p(self, q: float, dds: bool = False) -> float:
        values = self.dds_ms if dds else self.latency_ms
        return float(np.percentile(values, q)) if values else float('nan')

    def summary(self) -> dict[str, float | int]:
        return {'p50_ms': self.p(50), 'p90_ms': self.p(90), 'dds_p50_ms': self.p(50, dds=True),
                'received': len(self.latency_ms), 'lost': self.lost}


@dataclass(frozen=True)
class Arrival:
    topic: str
    stamp: int
    received_ns: int
    dds_ns: int


class Link:
    """
    A publisher process and a subscriber process, with DDS (or a node) between them.

    ``sets`` are what the publisher may send, by name; ``outputs`` what the subscriber takes
    (topic -> type): the same topics for a floor, a node's outputs when a node sits between.
    """

    def __init__(self, sets: dict[str, list[Message]], outputs: dict[str, str], workdir: Path,
                 env: dict[str, str], best_effort: bool = False, depth: int = 5,
                 default_allocator: bool = False, dds_defaults: bool = False,
                 diagnostics: bool = False):
        workdir.mkdir(parents=True, exist_ok=True)
        topics: dict[str, str] = {}
        manifest_sets: dict[str, list[tuple[str, str]]] = {}
        # The processes' commands name a set by number: names may hold spaces.
        self.set_ids = {name: str(index) for index, name in enumerate(sets)}
        for name, messages in sets.items():
            entries = manifest_sets[self.set_ids[name]] = []
            for k, message in enumerate(messages):
                path = workdir / f'set{self.set_ids[name]}_{k}.cdr'
                path.write_bytes(message.data)
                topics[message.topic] = message.msgtype
                entries.append((message.topic, str(path)))
        (workdir / 'manifest.json').write_text(json.dumps({'topics': topics,
                                                           'sets': manifest_sets}))
        options = ['--depth', str(depth)] + (['--best-effort'] if best_effort else []) + (
            ['--default-allocator'] if default_allocator else [])
        if default_allocator:
            env = {k: v for k, v in env.items() if k not in {s.variable for s in SETTINGS}}
        module = [sys.executable, '-m', __name__]
        self.outputs = outputs
        watch = ['--diagnostics'] if diagnostics else []
        self.subscriber = Child(module + ['subscribe', *options, *watch] + [
            arg for topic, msgtype in outputs.items() for arg in ('--topic', topic, msgtype)],
            env, workdir / 'subscriber.log')
        camera = ['--dds-defaults'] if dds_defaults else []
        self.publisher = Child(module + ['publish', *options, *camera, '--manifest',
                                         str(workdir / 'manifest.json')],
                               camera_environment(env) if dds_defaults else env,
                               workdir / 'publisher.log')
        self.stamp = FIRST_STAMP_NS
        self.arrivals: dict[int, list[Arrival]] = {}
        self.statuses: list[tuple[float, dict[str, str]]] = []  # (arrived, status) ``diagnostics``
        self.saved = False

    def wait_ready(self, timeout_s: float, alive: Sequence = ()) -> None:
        """Wait until both processes matched their topics (and a moment more)."""
        self.subscriber.expect('ready', timeout_s, alive)
        self.publisher.expect('ready', timeout_s, alive)

    def _take(self, timeout_s: float) -> None:
        """Move the subscriber's arrival lines into ``arrivals`` (waiting up to ``timeout_s``)."""
        line = self.subscriber.line(timeout_s)
        while line is not None:
            kind, *fields = line.split()
            if kind == 'arrived':
                arrival = Arrival(fields[0], int(fields[1]), int(fields[2]), int(fields[3]))
                self.arrivals.setdefault(arrival.stamp, []).append(arrival)
            elif kind == 'diagnostics':
                self.statuses.append((time.monotonic(), json.loads(line.split(maxsplit=1)[1])))
            self.saved |= kind == 'saved'
            try:
                line = self.subscriber.lines.get_nowait()
            except queue.Empty:
                line = None

    def _complete(self, stamp: int, expected: set[str]) -> bool:
        return expected <= {a.topic for a in self.arrivals.get(stamp, [])}

    def send(self, name: str) -> tuple[int, int]:
        """Send one set; return its stamp and send time."""
        stamp, self.stamp = self.stamp, self.stamp + 1
        self.publisher.command(f'send {self.set_ids[name]} {stamp}')
        fields = self.publisher.expect('sent', STOP_TIMEOUT_S)
        return stamp, int(fields[1])

    def wait_for(self, stamp: int, expected: set[str], timeout_s: float,
                 alive: Sequence = ()) -> bool:
        """Wait until every expected topic arrived with ``stamp``; ``alive`` are node processes."""
        deadline = time.monotonic() + timeout_s
        while not self._complete(stamp, expected):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for process in alive:
                process.check_alive()
            self._take(min(POLL_S, remaining))
        return True

    def prime(self, names: Sequence[str], outputs: set[str], timeout_s: float,
              alive: Sequence = ()) -> None:
        """
        Send the sets in turn, one at a time, until every output answered one of them.

        A set sent as the match completes can be lost (volatile durability), and a node's first
        frame of a size builds kernels: counting starts once every node answered.
        """
        deadline = time.monotonic() + timeout_s
        answered: set[str] = set()
        sent = 0
        while answered < outputs:
            if time.monotonic() > deadline:
                raise CLVisionError(f'no answer on {", ".join(sorted(outputs - answered))} '
                                    f'within {timeout_s:g} s of frames')
            stamp, _ = self.send(names[sent % len(names)])
            sent += 1
            self.wait_for(stamp, outputs, PRIME_WAIT_S, alive)
            answered |= {arrival.topic for arrival in self.arrivals.pop(stamp, [])}

    def record(self, series: Series, stamp: int, sent_ns: int, expected: set[str]) -> None:
        got = [a for a in self.arrivals.pop(stamp, []) if a.topic in expected]
        if {a.topic for a in got} < expected or not got:
            series.lost += 1
            return
        series.latency_ms.append((max(a.received_ns for a in got) - sent_ns) / 1e6)
        series.dds_ms.append((max(a.dds_ns for a in got) - sent_ns) / 1e6)

    def lockstep(self, names: list[str], count: int, expected: set[str], timeout_s: float,
                 alive: Sequence = ()) -> Series:
        """Send ``count`` sets, cycling through ``names``, each once the previous one arrived."""
        series = Series()
        for k in range(count):
            stamp, sent = self.send(names[k % len(names)])
            self.wait_for(stamp, expected, timeout_s, alive)
            self.record(series, stamp, sent, expected)
        return series

    def paced(self, names: Sequence[str], count: int, rate_hz: float, expected: set[str],
              linger_s: float = 1.0) -> Series:
        """
        Send ``count`` sets at ``rate_hz``, cycling through ``names``, without waiting.

        Late or lost ones are counted.
        """
        first = self.stamp
        self.stamp += count
        cycle = ','.join(str(self.set_ids[name]) for name in names)
        self.publisher.command(f'pace {cycle} {count} {round(1e9 / rate_hz)} {first}')
        sent = {}
        for _ in range(count):
            fields = self.publisher.expect('sent', STOP_TIMEOUT_S + 1.0 / rate_hz)
            sent[int(fields[0])] = int(fields[1])
            self._take(0.0)
        deadline = time.monotonic() + linger_s
        while time.monotonic() < deadline and not all(self._complete(s, expected) for s in sent):
            self._take(POLL_S)
        series = Series()
        for stamp, sent_ns in sent.items():
            self.record(series, stamp, sent_ns, expected)
        return series

    def settle(self, seconds: float) -> float:
        """Take what arrives for ``seconds``; return the time after (for ``frame_counts``)."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self._take(min(POLL_S, remaining))
        return time.monotonic()

    def frame_counts(self, since: float, keys: Sequence[str]) -> dict[str, int]:
        """Sum ``keys`` of the /diagnostics windows (every node) arrived after ``since``."""
        return {key: sum(int(status.get(key, 0)) for t, status in self.statuses if t > since)
                for key in keys}

    def save(self, folder: Path, name: str, expected: set[str], timeout_s: float,
             alive: Sequence = ()) -> dict[str, bytes]:
        """Send set ``name`` once more and return what arrived on each output topic for it."""
        folder.mkdir(parents=True, exist_ok=True)
        self.saved = False
        self.subscriber.command(f'save {folder}')
        stamp, _ = self.send(name)
        if not self.wait_for(stamp, expected, timeout_s, alive):
            raise CLVisionError(f'no answer to the last {name} within {timeout_s:g} s')
        self.arrivals.pop(stamp)
        deadline = time.monotonic() + timeout_s
        while not self.saved and time.monotonic() < deadline:
            self._take(POLL_S)
        if not self.saved:
            raise CLVisionError(f'the subscriber saved no answer within {timeout_s:g} s '
                                f'(log: {self.subscriber.log})')
        topics = list(self.outputs)
        return {topics[int(p.stem)]: p.read_bytes() for p in folder.glob('*.cdr')}

    def close(self) -> dict[str, int]:
        """
        Stop both processes; return the subscriber's memory and page faults.

        Resident kB at its peak and at the end, minor page faults over its life.
        """
        self.publisher.stop()
        rss = next((line.split()[1:] for line in self.subscriber.stop()
                    if line.startswith('rss ')), None)
        return dict(zip(('rss_max_kb', 'rss_end_kb', 'page_faults'), map(int, rss or ())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('role', choices=['publish', 'subscribe'])
    parser.add_argument('--topic', nargs=2, action='append', default=[],
                        metavar=('TOPIC', 'TYPE'), help='subscribe: a topic to take')
    parser.add_argument('--manifest', help='publish: JSON of the topics and sets')
    parser.add_argument('--best-effort', action='store_true')
    parser.add_argument('--depth', type=int, default=5)
    parser.add_argument('--default-allocator', action='store_true',
                        help="keep glibc's malloc defaults (for comparison)")
    parser.add_argument('--diagnostics', action='store_true',
                        help='subscribe: print the /diagnostics statuses too')
    parser.add_argument('--dds-defaults', action='store_true',
                        help="publish: as a camera driver on Fast DDS' defaults (no profile)")
    args = parser.parse_args(argv)
    return publisher_process(args) if args.role == 'publish' else subscriber_process(args)


if __name__ == '__main__':
    sys.exit(main())
