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
Parameter schemas: the single source for ROS declaration, validation, YAML files, CLI and docs.

Each node owns one ``ParameterSchema``. The ROS layer turns it into ``ParameterDescriptor``s and a
set-parameters callback; the CLI parses ``--param name=value`` against the same schema; the YAML
files in ``config/`` and the README tables are generated from it and a test compares them, so a
parameter can never be declared under one name and handled under another.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
import math
from typing import Any, Callable, Collection, Iterable, Mapping, TypeVar, Union

from cl_vision_nodes.errors import ParameterError
import yaml

Value = Union[bool, int, float, str]
SettingsT = TypeVar('SettingsT')


@dataclass(frozen=True)
class ParamSpec:
    """One tunable: its default fixes the type (bool, int, float or str)."""

    name: str
    default: Value
    description: str
    min: float | int | None = None  # noqa: A003 (the schemas' keyword, a field only)
    max: float | int | None = None  # noqa: A003
    choices: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # (other spelling, choice): image_proc's numbers
    read_only: bool = False
    step: int = 1  # int parameters: valid values are min + k * step (e.g. odd sizes: 3, 2)

    def __post_init__(self) -> None:
        if self.step > 1 and (self.type is not int or self.min is None):
            raise ValueError(f'{self.name}: a step needs an int parameter with a minimum')

    @property
    def type(self) -> type:  # noqa: A003
        return type(self.default)

    def validate(self, value: Any) -> Value:
        """Return ``value`` if it is acceptable, else raise ParameterError with the reason."""
        expected = self.type
        if expected is float and type(value) is int:
            value = float(value)  # CLI and YAML may write 2 for 2.0; ROS itself is stricter
        if expected is str and type(value) is int:
            value = str(value)  # YAML, -p and ros2 param set read device: 3090 as an int
        if self.aliases and type(value) is str:
            value = dict(self.aliases).get(value, value)
        if type(value) is not expected:
            raise ParameterError(
                f'{self.name}: expected {expected.__name__}, got {type(value).__name__} {value!r}')
        if expected is float and not math.isfinite(value):
            raise ParameterError(f'{self.name}: {value!r} is not a finite number')
        if self.min is not None and value < self.min:
            raise ParameterError(f'{self.name}: {value!r} is below the minimum {self.min!r}')
        if self.max is not None and value > self.max:
            raise ParameterError(f'{self.name}: {value!r} is above the maximum {self.max!r}')
        if self.step > 1 and (value - self.min) % self.step:
            odd_or_even = f" (an {('even', 'odd')[self.min % 2]} number)" if self.step == 2 else ''
            raise ParameterError(f'{self.name}: {value!r} is not {self.min} plus a multiple of '
                                 f'{self.step}{odd_or_even}')
        if self.choices and value not in self.choices:
            raise ParameterError(f'{self.name}: {value!r} is not one of {self.range_text()}')
        return value

    def range_text(self) -> str:
        if self.choices:
            spellings = {choice: other for other, choice in self.aliases}
            return ', '.join(choice + (f' ({spellings[choice]})' if choice in spellings else '')
                             for choice in self.choices)
        if self.min is not None or self.max is not None:
            return f'[{self.min}, {self.max}]' + (f' step {self.step}' if self.step > 1 else '')
        return ''


Check = Callable[[Mapping[str, Value]], None]


class ParameterSchema:
    """The parameters of one node, plus cross-parameter checks that see the merged values."""

    def __init__(self, node_name: str, specs: Iterable[ParamSpec], checks: Iterable[Check] = ()):
        self.node_name = node_name
        self.specs: dict[str, ParamSpec] = {}
        for spec in specs:
            if spec.name in self.specs:
                raise ValueError(f'{node_name}: parameter {spec.name} declared twice')
            self.specs[spec.name] = spec
        self.checks = tuple(checks)

    def __iter__(self):
        return iter(self.specs.values())

    def defaults(self) -> dict[str, Value]:
        return {spec.name: spec.default for spec in self}

    def validate(self, current: Mapping[str, Value], changes: Mapping[str, Any],
                 *, allow_read_only: bool = False) -> dict[str, Value]:
        """
        Return ``current`` updated with ``changes``, or raise ParameterError naming the reason.

        ``allow_read_only`` is for start-up (CLI, YAML overrides); a running node passes False.
        """
        merged = dict(current)
        for name, value in changes.items():
            spec = self.specs.get(name)
            if spec is None:
                raise ParameterError(
                    f'unknown parameter {name!r} for {self.node_name}; '
                    f"known: {', '.join(sorted(self.specs))}")
            if spec.read_only and not allow_read_only and value != current.get(name):
                raise ParameterError(f'{name} is read-only: restart the node to change it')
            merged[name] = spec.validate(value)
        for check in self.checks:
            check(merged)
        return merged

    def parse_assignments(self, assignments: Iterable[str],
                          base: Mapping[str, Value] | None = None) -> dict[str, Value]:
        """
        Parse CLI ``name=value`` strings the way ``ros2 param set`` does (YAML scalars).

        Returns ``base`` (default: the defaults) with them applied.
        """
        parsed: dict[str, Value] = {}
        for text in assignments:
            name, sep, raw = text.partition('=')
            if not sep or not name:
                raise ParameterError(f'--param expects name=value, got {text!r}')
            try:
                value = yaml.safe_load(raw) if raw else ''
            except yaml.YAMLError as exc:
                problem = getattr(exc, 'problem', None) or 'not a YAML value'
                raise ParameterError(f'{name}: cannot parse {raw!r} ({problem})') from None
            spec = self.specs.get(name)
            if spec is not None and spec.type is str and not isinstance(value, str):
                value = raw  # e.g. device=0:0 or method=on stay strings
            parsed[name] = value
        return self.validate(self.defaults() if base is None else base, parsed,
                             allow_read_only=True)

    def yaml_document(self, values: Mapping[str, Value] | None = None) -> dict[str, Any]:
        """
        Return the ``config/<node>.yaml`` content: ``{'/**': {ros__parameters: {...}}}``.

        Keyed ``/**`` so that it applies to the node it is loaded for in any namespace and under
        any name (a key ``flow_node:`` matches only ``/flow_node``, not ``/camera/flow_node``).
        """
        params: dict[str, Any] = {}
        for name, value in (self.defaults() if values is None else values).items():
            *namespaces, leaf = name.split('.')  # flow.method -> flow: {method: ...}, as rcl nests
            level = params
            for namespace in namespaces:
                level = level.setdefault(namespace, {})
            level[leaf] = value
        return {'/**': {'ros__parameters': params}}

    def markdown_table(self) -> str:
        rows = ['| parameter | type | default | range | description |',
                '|---|---|---|---|---|']
        for spec in self:
            flag = ' (read-only)' if spec.read_only else ''
            rows.append(f'| `{spec.name}` | {spec.type.__name__} | `{spec.default!r}` | '
                        f'{spec.range_text()} | {spec.description}{flag} |')
        return '\n'.join(rows)


def common_specs() -> list[ParamSpec]:
    """Parameters every node has: device, profiling, queues, diagnostics, executor, warm-up."""
    return [
        ParamSpec('device', 'auto',
                  'OpenCL device: auto (first GPU, else CPU), gpu, cpu, P:D indices or a name '
                  'substring; CL_VISION_DEVICE overrides auto', read_only=True),
        ParamSpec('profile', False,
                  'Time every OpenCL stage with profiling events and report per-stage ms',
                  read_only=True),
        ParamSpec('output_queue_size', 5, 'Depth of the reliable output publishers',
                  min=1, max=100, read_only=True),
        ParamSpec('diagnostics_period', 5.0,
                  'Seconds between timing log lines and /diagnostics messages (0 disables)',
                  min=0.0, max=3600.0),
        ParamSpec('executor', 'auto',
                  "rclpy executor: single_threaded, or events (rclpy.experimental's "
                  'EventsExecutor, Jazzy and later; it gives no message info, so no frames are '
                  'counted as lost before the node); auto: single_threaded',
                  choices=('auto', 'events', 'single_threaded'), read_only=True),
        ParamSpec('image_transport', 'raw',
                  "How image inputs arrive, as image_transport's transports: raw "
                  '(sensor_msgs/Image on the image topic) or compressed '
                  '(sensor_msgs/CompressedImage, JPEG or PNG, on the image topic plus '
                  '/compressed, e.g. image/compressed)',
                  choices=('raw', 'compressed'), read_only=True),
        ParamSpec('warm_up_width', 640,
                  "Width of the frame every kernel runs on once before 'ready' (and after a "
                  'parameter change that may bring new kernels), so the first frame needs no '
                  'compile (PoCL compiles a kernel for its work-group size, which follows the '
                  "image size, when it first runs): the camera's width; 0: no warm-up",
                  min=0, max=16384, read_only=True),
        ParamSpec('warm_up_height', 480,
                  "Height of that frame: the camera's height; 0: no warm-up",
                  min=0, max=16384, read_only=True),
    ]


COMMON_NAMES: frozenset[str] = frozenset(spec.name for spec in common_specs())
"""The common parameters: read by the node (ros/node_base.py) and the CLI, never by algorithms."""


def namespaced(prefix: str, schema: ParameterSchema) -> list[ParamSpec]:
    """
    Return the specs of ``schema`` but the common ones, each named ``<prefix>.<name>``.

    A node that runs several algorithms (the pipeline) declares each one's parameters under its
    own namespace, so ``flow.method`` and ``disparity.disp_max`` nest in a YAML file as
    ``flow: {method: hs}``.
    """
    return [replace(spec, name=f'{prefix}.{spec.name}') for spec in schema
            if spec.name not in COMMON_NAMES]


def section(values: Mapping[str, Value], prefix: str,
            schema: ParameterSchema) -> dict[str, Value]:
    """
    Return the values of ``schema`` in one namespace, without their prefix (common ones shared).

    That is the parameter dict of the algorithm's own schema (``namespaced``'s inverse).
    """
    return {name: values[name if name in COMMON_NAMES else f'{prefix}.{name}']
            for name in schema.specs}


def namespaced_checks(prefix: str, schema: ParameterSchema) -> list[Check]:
    """Return the cross-parameter checks of ``schema``, applied to its namespace's values."""
    def scoped(check: Check) -> Check:
        def run(values: Mapping[str, Value]) -> None:
            try:
                check(section(values, prefix, schema))
            except ParameterError as exc:
                raise ParameterError(f'{prefix}: {exc}') from None
        return run
    return [scoped(check) for check in schema.checks]


def settings_from_values(settings_type: type[SettingsT], values: Mapping[str, Value],
                         node_parameters: Collection[str]) -> SettingsT:
    """
    Return the typed view ``settings_type`` (a dataclass) of a complete, validated parameter dict.

    Every parameter must be a field of ``settings_type`` or one that the node reads itself
    (``node_parameters``): one in neither would be declared, validated and documented but never
    applied, so it is a TypeError (a bug, not bad input) when the algorithm is first built.
    """
    names = {field.name for field in fields(settings_type)}
    unplaced = sorted(set(values) - names - set(node_parameters))
    missing = sorted(names - set(values))
    problems = []
    if unplaced:
        problems.append(f'parameters {unplaced} are neither its fields nor read by the node')
    if missing:
        problems.append(f'fields {missing} have no value')
    if problems:
        raise TypeError(f"{settings_type.__name__}: {'; '.join(problems)}")
    return settings_type(**{name: values[name] for name in names})
