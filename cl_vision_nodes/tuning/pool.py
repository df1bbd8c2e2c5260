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
Evaluators behind one interface: in this process, or one worker process per device entry.

``ProcessPool`` starts its workers with spawn (an OpenCL context does not survive a fork); each
worker takes one device from the list in its initializer, reads the bag and uploads its frames
once, then evaluates trial after trial. With one GPU, N entries naming it put N workers on it
(their queues overlap on the device). Workers ignore SIGINT: the driver decides what an
interruption means. A worker that dies fails its trial (BrokenProcessPool); the pool is then
started again for the next submissions.
"""
from __future__ import annotations

from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
import multiprocessing
from pathlib import Path
import signal
from typing import Mapping, Protocol

from cl_vision_nodes.params import Value
from cl_vision_nodes.tuning.evaluator import Evaluator, TrialResult
from cl_vision_nodes.tuning.frames import load_frames, TuneFrames


class EvaluatorPool(Protocol):
    """Where trials are evaluated: ``workers`` at a time."""

    workers: int

    def submit(self, values: Mapping[str, Value], part: str = 'tuning') -> Future[TrialResult]:
        ...

    def close(self) -> None:
        ...


class InProcessPool:
    """One evaluator in this process; ``submit`` evaluates at once and returns a done future."""

    workers = 1

    def __init__(self, device: str, frames: TuneFrames):
        self.evaluator = Evaluator(device, frames)

    def submit(self, values: Mapping[str, Value], part: str = 'tuning') -> Future[TrialResult]:
        future: Future[TrialResult] = Future()
        try:
            future.set_result(self.evaluator.evaluate(values, part))
        except Exception as exc:  # noqa: B902 (the caller sees it through the future)
            future.set_exception(exc)
        return future

    def close(self) -> None:
        """Keep nothing to release: the runtime goes with the object."""


_EVALUATOR: Evaluator | None = None


def _start_worker(devices: multiprocessing.Queue, bag: Path, node: str,
                  max_frames: int | None) -> None:
    global _EVALUATOR
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    device = devices.get()
    _EVALUATOR = Evaluator(device, load_frames(bag, node, max_frames))


def _evaluate(values: Mapping[str, Value], part: str) -> TrialResult:
    return _EVALUATOR.evaluate(values, part)


class ProcessPool:
    """One worker process per entry of ``devices``, each with its own evaluator."""

    def __init__(self, devices: list[str], bag: Path, node: str, max_frames: int | None):
        self.devices, self.bag, self.node, self.max_frames = devices, bag, node, max_frames
        self.workers = len(devices)
        self._context = multiprocessing.get_context('spawn')
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        queue = self._context.Queue()
        for device in self.devices:
            queue.put(device)
        return ProcessPoolExecutor(self.workers, self._context, _start_worker,
                                   (queue, self.bag, self.node, self.max_frames))

    def submit(self, values: Mapping[str, Value], part: str = 'tuning') -> Future[TrialResult]:
        try:
            return self._executor.submit(_evaluate, dict(values), part)
        except BrokenProcessPool:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = self._start()
            return self._executor.submit(_evaluate, dict(values), part)

    def close(self) -> None:
        """Cancel what has not started; the workers end after their current trial."""
        self._executor.shutdown(wait=False, cancel_futures=True)
