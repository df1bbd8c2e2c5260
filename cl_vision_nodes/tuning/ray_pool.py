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
Trials on a Ray cluster: one actor per GPU (per CPU slot on a cluster without GPUs).

The bag is read here once and its frames go to the actors through Ray's object store (no shared
file system needed; the pool keeps the reference while it lives, so that a restarted actor finds
them: Ray warns once that a lost argument would stop a restart); each actor builds its Evaluator
on its own device in its constructor (uploading the frames once), then evaluates trial after
trial. ``submit`` gives a trial to an
idle actor (the driver keeps at most ``workers`` in flight; more wait here in order) and returns
a concurrent.futures.Future, as the other pools do.

An actor whose process dies (killed, out of memory, its machine gone) fails the trial it was
running with ``WorkerLost``, a CLVisionError, so the driver records that trial as failed; Ray
starts the actor again (``max_restarts``: no limit) with the same frames, and trials submitted
meanwhile wait here until its ``ready`` answers, never run twice (``max_task_retries`` 0). A
value the algorithms refuse comes back as the Evaluator's own error.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import Future
import functools
from pathlib import Path
import threading
from typing import Any, Mapping

from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.params import Value
from cl_vision_nodes.processes.ray_cluster import connect, first_line, slots
from cl_vision_nodes.tuning.evaluator import Evaluator, TrialResult
from cl_vision_nodes.tuning.frames import load_frames, TuneFrames

RESTART_FOREVER = -1
RESTART_TRIES = 60  # asks whether a lost actor is back, RESTART_POLL_S apart, before giving up
RESTART_POLL_S = 1.0


class WorkerLost(CLVisionError):
    """The Ray worker evaluating a trial died before it answered."""


class EvaluatorActor:
    """One Ray actor: an Evaluator on the actor's device, for every trial it is given."""

    def __init__(self, device: str, frames: TuneFrames):
        self.error: CLVisionError | None = None
        try:
            self.evaluator = Evaluator(device, frames)
        except CLVisionError as exc:  # kept for ready(): Ray would hide it in an ActorDiedError
            self.error = exc

    def ready(self) -> None:
        """Raise the constructor's error, if it had one (the pool waits for every actor)."""
        if self.error is not None:
            raise self.error

    def evaluate(self, values: Mapping[str, Value], part: str) -> TrialResult:
        return self.evaluator.evaluate(values, part)


class RayPool:
    """The EvaluatorPool of ``--ray ADDRESS``: ``workers`` actors (default: one per slot)."""

    def __init__(self, address: str, bag: Path, node: str, max_frames: int | None,
                 workers: int | None = None):
        frames = load_frames(Path(bag), node, max_frames)
        self._lock = threading.Lock()
        self._closed = False
        self._waiting: deque[tuple[Future[TrialResult], dict[str, Value], str]] = deque()
        self.actors: list[Any] = []
        self._ray, self._connected = connect(address)
        cluster = slots(self._ray)
        if workers is not None and workers > cluster.count:
            self.close()
            raise ParameterError(f'--workers {workers}: the Ray cluster at {address} has '
                                 f'{cluster}')
        self.workers = workers or cluster.count
        actor = self._ray.remote(max_restarts=RESTART_FOREVER, max_task_retries=0,
                                 **cluster.resources)(EvaluatorActor)
        self._frames = self._ray.put(frames)  # kept here for the actors' restarts
        self.actors = [actor.remote(cluster.device, self._frames) for _ in range(self.workers)]
        self._idle = list(self.actors)
        try:
            self._ray.get([a.ready.remote() for a in self.actors])
        except self._ray.exceptions.RayError as exc:
            self.close()
            raise _cause(exc) from None

    def submit(self, values: Mapping[str, Value], part: str = 'tuning') -> Future[TrialResult]:
        future: Future[TrialResult] = Future()
        with self._lock:
            self._waiting.append((future, dict(values), part))
        self._dispatch()
        return future

    def _dispatch(self) -> None:
        """Start waiting trials on idle actors (a cancelled trial gives its actor back)."""
        while True:
            with self._lock:
                if not (self._idle and self._waiting):
                    return
                actor, (future, values, part) = self._idle.pop(), self._waiting.popleft()
            if not future.set_running_or_notify_cancel():
                with self._lock:
                    self._idle.append(actor)
                continue
            answer = actor.evaluate.remote(values, part).future()
            answer.add_done_callback(functools.partial(self._finished, actor, future))

    def _finished(self, actor: Any, future: Future[TrialResult], answer: Future) -> None:
        try:
            result = answer.result()
        except self._ray.exceptions.RayError as exc:
            error = _cause(exc)
            if isinstance(error, WorkerLost):
                self._when_back(actor)
            else:
                self._give_back(actor)
            future.set_exception(error)
        except BaseException as exc:  # noqa: B902 (the caller sees it through the future)
            self._give_back(actor)
            future.set_exception(exc)
        else:
            self._give_back(actor)
            future.set_result(result)

    def _give_back(self, actor: Any) -> None:
        with self._lock:
            self._idle.append(actor)
        self._dispatch()

    def _when_back(self, actor: Any, tries: int = RESTART_TRIES) -> None:
        """
        Give a lost actor back once its restart answers.

        A trial sent before Ray knows the actor is restarting would reach the dead process and
        fail too, so the actor stays out of the idle list until ``ready`` answers.
        """
        if self._closed:
            return

        def answered(ready: Future) -> None:
            if ready.exception() is not None and tries > 1:
                threading.Timer(RESTART_POLL_S, self._when_back, (actor, tries - 1)).start()
            else:  # back, or never: then its next trial fails with WorkerLost instead of waiting
                self._give_back(actor)
        actor.ready.remote().future().add_done_callback(answered)

    def close(self) -> None:
        """Cancel the trials not started, end the actors, and leave a cluster this pool joined."""
        with self._lock:
            waiting, self._waiting = list(self._waiting), deque()
            self._closed = True
        for future, _, _ in waiting:
            future.cancel()
        for actor in self.actors:
            self._ray.kill(actor)
        if self._connected:
            self._ray.shutdown()


def _cause(exc: Exception) -> Exception:
    """
    Return what a Ray error means for a trial.

    The evaluator's own exception where it raised one, else (the worker died) WorkerLost.
    """
    cause = getattr(exc, 'cause', None)
    if isinstance(cause, Exception):
        return cause
    return WorkerLost(f'the Ray worker died during the trial ({first_line(exc)})')
