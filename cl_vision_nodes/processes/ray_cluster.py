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
A Ray cluster for ``--ray ADDRESS``: the connection, and the slot each worker takes.

The one Ray layer: eval over a folder of bags (evaluation/ray_eval.py: a task per bag) and
tune (tuning/ray_pool.py: an actor per worker, trial after trial) schedule on top of it. A
worker takes one GPU where the cluster has GPUs (Ray then shows it only that GPU through
CUDA_VISIBLE_DEVICES, which NVIDIA's OpenCL honours: its ``gpu`` device is its own card), else
one CPU slot. ``ray.init`` waits minutes for an address where no cluster answers, so the
address is first tried with a plain TCP connection that fails in seconds. Ray is imported only
here, when ``--ray`` is given: the rest of the package runs without it.
"""
from __future__ import annotations

from dataclasses import dataclass
import socket
from types import ModuleType
from typing import Any

from cl_vision_nodes.errors import ParameterError

PROBE_TIMEOUT_S = 5.0


def _probe(address: str) -> None:
    """Refuse, in one line, an address where nothing listens (``auto`` is Ray's own search)."""
    if address == 'auto':
        return
    host, _, port = address.removeprefix('ray://').rpartition(':')
    if not host or not port.isdigit():
        raise ParameterError(f'--ray {address}: expected HOST:PORT (the head: ray start --head '
                             'prints it), ray://HOST:PORT or auto')
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise ParameterError(f'--ray {address}: no Ray cluster answers there ({exc}); start one '
                             'with ray start --head') from None


def connect(address: str) -> tuple[ModuleType, bool]:
    """Return the ray module connected to the cluster at ``address``, and whether this call did."""
    try:
        import ray
    except ImportError:
        raise ParameterError('--ray needs Ray: pip install ray (requirements.txt pins the '
                             'version)') from None
    if ray.is_initialized():
        return ray, False
    _probe(address)
    try:
        ray.init(address=address, logging_level='WARNING', configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ParameterError(f'--ray {address}: cannot join the Ray cluster '
                             f'({first_line(exc)})') from None
    return ray, True


@dataclass(frozen=True)
class Slots:
    """What one worker asks of the cluster, and how many such workers the cluster holds."""

    gpus: bool
    count: int

    @property
    def resources(self) -> dict[str, Any]:
        """Return the Ray options of a worker: one GPU (no CPU slot counted) or one CPU slot."""
        return {'num_gpus': 1, 'num_cpus': 0} if self.gpus else {'num_gpus': 0, 'num_cpus': 1}

    def __str__(self) -> str:
        return f'{self.count} GPUs' if self.gpus else f'{self.count} CPU slots'

    @property
    def device(self) -> str:
        """Return the OpenCL device a worker runs on: its GPU, or the CPU."""
        return 'gpu' if self.gpus else 'cpu'


def slots(ray: ModuleType) -> Slots:
    """Return the cluster's worker slots: its GPUs, or its CPUs where it has none."""
    resources = ray.cluster_resources()
    gpus = int(resources.get('GPU', 0))
    return Slots(gpus > 0, gpus or max(int(resources.get('CPU', 1)), 1))


def first_line(exc: BaseException) -> str:
    """Return the first line of a Ray error (its tracebacks follow), or the error's type."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
