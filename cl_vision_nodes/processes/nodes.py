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
The node processes eval and the benches run: what each subscribes and publishes, start and stop.

Topics come from the nodes' own declarations (``ros.topics.node_topics``) for the parameters
they run with, so eval never restates them: a node's inputs, in declaration order, are bound to
the played camera's topics (``ROLES``), image inputs by their image_transport base name (a
compressed input ``image/compressed`` is remapped as ``image``). Eval subscribes the first
``RECORDED_OUTPUTS`` outputs of a node, its answer and its picture; depth and points are
computed only for subscribers and stay off.

Flow and SURF run in ``/camera/left`` and disparity_node in ``/camera`` (bag_layout's output
names); on raw images a rectify_node in ``/cl_vision_eval/left`` feeds flow and SURF (which nodes
run on a bag's camera: ``evaluation.wiring``).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
import functools
import importlib.util
import os
from pathlib import Path
import subprocess
import sys
from typing import Any, Iterator, Mapping

import cl_vision_nodes
from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.storage import TRANSPORT
from cl_vision_nodes.elas.schema import ELAS_SCHEMA
from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.flow.schema import FLOW_SCHEMA
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.processes import child_processes
from cl_vision_nodes.surf.schema import SURF_SCHEMA
import yaml

STOP_TIMEOUT_S = 15.0
DIAGNOSTICS_PERIOD_S = 1.0  # eval's default: the report's per-stage timing comes from these
RECORDED_OUTPUTS = 2
LOCKSTEP_DEPTH = 2  # the most frames lockstep has in flight (reliable_inputs)
HELPER_NAMESPACE = '/cl_vision_eval'
SCHEMAS = {'flow': FLOW_SCHEMA, 'surf': SURF_SCHEMA, 'disparity': ELAS_SCHEMA}
"""The nodes eval scores, in scoring order (flow first: other scorers may use its answer)."""
NEEDS_PREVIOUS_FRAME = frozenset({'flow'})  # nothing for the first frame of a size
ROLES = {'flow_node': ('left',), 'surf_node': ('left',),
         'disparity_node': ('left', 'right', 'left_info', 'right_info'),
         'rectify_node': ('left', 'left_info'), 'convert_node': ('left',),
         'vision_pipeline': ('left', 'right', 'left_info', 'right_info')}
"""What each declared input of a node is, in declaration order."""


@dataclass(frozen=True)
class NodeSpec:
    """How the evaluator runs one node: where it lives in the graph and what it answers."""

    key: str
    module: str
    schema: ParameterSchema
    namespace: str
    remaps: tuple[str, ...]
    inputs: tuple[str, ...]  # the topics it subscribes, resolved
    outputs: dict[str, str]  # topic -> message type; the first is the node's main answer
    needs_previous_frame: bool = False
    parameters: dict[str, Value] = field(default_factory=dict)  # set by eval for this wiring
    sources: tuple[str, ...] = ()  # bag topics a frame needs for an answer (default: inputs)

    @property
    def main_output(self) -> str:
        return next(iter(self.outputs))

    @property
    def needs(self) -> tuple[str, ...]:
        return self.sources or self.inputs

    @property
    def name(self) -> str:
        """Return the node's fully qualified name, as its diagnostics name it."""
        return f'{self.namespace}/{self.schema.node_name}'

    def available(self) -> bool:
        return importlib.util.find_spec(self.module) is not None


def _resolve(namespace: str, name: str) -> str:
    return name if name.startswith('/') else f'{namespace}/{name}'


def wired(key: str, schema: ParameterSchema, namespace: str, bindings: Mapping[str, str],
          values: Mapping[str, Value], parameters: dict[str, Value] | None = None,
          sources: tuple[str, ...] = ()) -> NodeSpec:
    """
    Return the spec of node ``schema`` with its declared inputs bound to ``bindings``.

    ``bindings`` maps a role (``ROLES``) to the topic played or published for it; ``values``
    are the parameters the node runs with (they decide its topics).
    """
    # topics imports sensor_msgs: tools import without ROS (test_layers).
    from cl_vision_nodes.ros.topics import node_topics
    executable = schema.node_name
    declared = node_topics(executable, {**schema.defaults(), **values})
    remaps, inputs = [], []
    for topic, role in zip(declared.inputs, ROLES[executable], strict=True):
        target, name = bindings[role], topic.name
        if topic.type_name == 'sensor_msgs/msg/CompressedImage':
            name, target = name[:-len(TRANSPORT)], target[:-len(TRANSPORT)]
        inputs.append(bindings[role])
        if _resolve(namespace, name) != target:
            remaps.append(f'{name}:={target}')
    outputs = {_resolve(namespace, t.name): t.type_name
               for t in declared.outputs[:RECORDED_OUTPUTS]}
    return NodeSpec(key, f'cl_vision_nodes.ros.{executable}', schema, namespace, tuple(remaps),
                    tuple(inputs), outputs, key in NEEDS_PREVIOUS_FRAME, parameters or {},
                    sources)


LAYOUT_BINDINGS = {'left': layout.LEFT_IMAGE, 'right': layout.RIGHT_IMAGE,
                   'left_info': layout.LEFT_INFO, 'right_info': layout.RIGHT_INFO}


@functools.cache
def _layout_spec(key: str) -> NodeSpec:
    namespace = layout.CAMERA_NAMESPACE if key == 'disparity' else layout.LEFT_NAMESPACE
    return wired(key, SCHEMAS[key], namespace, LAYOUT_BINDINGS, {})


class _LayoutSpecs(Mapping[str, NodeSpec]):
    """The specs built on first use: the nodes' topic declarations import ROS."""

    def __getitem__(self, key: str) -> NodeSpec:
        return _layout_spec(key)

    def __iter__(self) -> Iterator[str]:
        return iter(SCHEMAS)

    def __len__(self) -> int:
        return len(SCHEMAS)


NODE_SPECS: Mapping[str, NodeSpec] = _LayoutSpecs()
"""The nodes on a dataset bag of bag_layout, raw images (what ``cl-vision bench node`` runs)."""


def parse_nodes(text: str) -> list[str]:
    """Parse ``--nodes`` (argparse type)."""
    names = [n.strip() for n in text.split(',') if n.strip()]
    unknown = [n for n in names if n not in SCHEMAS]
    if unknown or not names:
        named = ', '.join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(f'unknown node {named}; choose from '
                                         f"{','.join(SCHEMAS)}")
    return names


def node_parameters(specs: list[NodeSpec], assignments: list[str],
                    device: str) -> dict[str, dict[str, Value]]:
    """
    Return the explicitly set parameters per node key, validated against the node's schema.

    So a bad value fails here in one line instead of in a node's log. ``assignments`` are
    ``NODE.NAME=VALUE`` for the scored nodes; ``device`` applies to every spec.
    """
    by_node: dict[str, list[str]] = {key: [] for key in SCHEMAS}
    for text in assignments:
        key, dot, assignment = text.partition('.')
        if not dot or key not in SCHEMAS:
            raise ParameterError(f'--param expects NODE.NAME=VALUE with NODE one of '
                                 f"{', '.join(SCHEMAS)}; got {text!r}")
        by_node[key].append(assignment)
    explicit = {}
    for spec in specs:
        mine = by_node.get(spec.key, [])
        values = spec.schema.parse_assignments(mine)
        chosen = {name: values[name] for name in {a.partition('=')[0] for a in mine}}
        if device != 'auto':
            chosen['device'] = spec.schema.validate(values, {'device': device},
                                                    allow_read_only=True)['device']
        explicit[spec.key] = chosen
    return explicit


@dataclass
class NodeProcess:
    spec: NodeSpec
    process: subprocess.Popen
    log: Path

    def check_alive(self) -> None:
        """Raise if the node died: it must end the run with its own last words, not a timeout."""
        code = self.process.poll()
        if code is not None:
            lines = self.log.read_text(errors='replace').strip().splitlines()
            raise CLVisionError(f'{self.spec.key} node exited with code {code}: '
                                f"{lines[-1] if lines else 'no output'} (log: {self.log})")


def reliable_inputs(spec: NodeSpec) -> dict[str, Any]:
    """
    Return the QoS overrides that make the node's input subscriptions reliable, two deep.

    Lockstep queues at most two frames, so best effort buys nothing here, and Fast DDS drops
    best-effort samples larger than its shared-memory segment (a KITTI frame, ~0.5 MB per view,
    rarely arrives): a lost input would be misreported as the node dropping a frame. Two: a frame
    no node answers (flow's first) is followed at once by the next, and with the nodes' depth of
    1 the second replaced the first when the node was slow to take it (a loaded machine), so the
    node missed a frame and the run waited out the timeout for its answer.
    """
    return {'qos_overrides': {topic: {'subscription': {'reliability': 'reliable',
                                                       'depth': LOCKSTEP_DEPTH}}
                              for topic in spec.inputs}}


def start_node(spec: NodeSpec, parameters: dict[str, Value], logs: Path,
               env: dict[str, str], reliable: bool = True) -> NodeProcess:
    """
    Start the node as ``python -m``; ``parameters`` beside the spec's own (which win).

    Its inputs reliable (``reliable_inputs``), unless ``reliable`` is false.
    """
    params_file = logs / f'{spec.key}_params.yaml'
    params_file.write_text(yaml.safe_dump(
        {'/**': {'ros__parameters': {**parameters, **spec.parameters,
                                     **(reliable_inputs(spec) if reliable else {})}}}))
    command = [sys.executable, '-m', spec.module, '--ros-args', '-r', f'__ns:={spec.namespace}',
               *(arg for remap in spec.remaps for arg in ('-r', remap)),
               '--params-file', str(params_file)]
    log = logs / f'{spec.key}.log'
    with log.open('w') as stream:
        # A session of its own: Ctrl-C reaches only the tool, which stops the nodes after
        # recording what they answered so far (and whatever ends it: child_processes).
        process = child_processes.start(command, stdout=stream, stderr=subprocess.STDOUT,
                                        env=env)
    return NodeProcess(spec, process, log)


def stop_nodes(nodes: list[NodeProcess]) -> dict[str, int]:
    """SIGINT (Ctrl-C) to all at once, then their exit codes; a node ignoring it is killed."""
    codes = child_processes.stop([node.process for node in nodes],
                                 child_processes.grace_s(STOP_TIMEOUT_S))
    return {node.spec.key: code for node, code in zip(nodes, codes)}


def node_environment(domain_id: int) -> dict[str, str]:
    """
    Return this process's environment for the nodes.

    Same domain, localhost discovery, and this copy of the package first on the path (a source
    checkout works without installing).
    """
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    root = str(Path(cl_vision_nodes.__file__).resolve().parents[1])
    env['PYTHONPATH'] = os.pathsep.join(p for p in (root, env.get('PYTHONPATH')) if p)
    return env
