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

"""ROS side of a ParameterSchema: descriptors, declaration and the set-parameters callbacks."""
from __future__ import annotations

import difflib
from typing import Any, Callable, Mapping, MutableMapping, Sequence

from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.params import COMMON_NAMES, ParameterSchema, ParamSpec, Value
from cl_vision_nodes.ros.input_qos import ADAPTED_OVERRIDES
from cl_vision_nodes.ros.rclpy_compat import add_set_parameters_callbacks
from cl_vision_nodes.ros.start_parameters import (file_parameters, files_for_other_nodes,
                                                  nothing_for, override_sources, section_files,
                                                  SectionFile, split_arguments)
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

ROS_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
             float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}


def descriptor(spec: ParamSpec) -> ParameterDescriptor:
    """
    Describe a parameter as `ros2 param describe` shows it.

    Type, description, range, choices, read-only.
    """
    desc = ParameterDescriptor(name=spec.name, type=ROS_TYPES[spec.type],
                               description=spec.description, read_only=spec.read_only)
    if spec.choices:
        desc.additional_constraints = f'one of: {spec.range_text()}'
    if spec.type is int and spec.min is not None and spec.max is not None:
        desc.integer_range = [IntegerRange(from_value=int(spec.min), to_value=int(spec.max),
                                           step=spec.step)]
    elif spec.type is float and spec.min is not None and spec.max is not None:
        desc.floating_point_range = [FloatingPointRange(from_value=float(spec.min),
                                                        to_value=float(spec.max), step=0.0)]
    return desc


class ParameterBinding:
    """
    Declares a schema on a node and keeps ``values`` equal to the accepted parameters.

    The pre-set callback sees a change before rclpy's own type and range checks, whose reasons
    are cryptic (``Wrong parameter type, expected '3' got '2'``): it checks each value against
    its spec, widens an int for a float parameter (as the CLI and YAML do) and swaps a refused
    value for the current one, keeping the schema's reason for the set-parameters callback. That
    callback refuses with it, or validates the whole merged set (cross-parameter checks) and
    calls ``on_change`` so the node applies it before its next frame: a change the algorithm
    cannot take (a CLVisionError, e.g. a window too large for the device's local memory or a
    kernel that does not build) is refused with its reason instead of being accepted and then
    failing. The post-set callback publishes the new snapshot (callbacks of one node run on one
    executor thread, one after another for each set request). Humble's rclpy has no pre- and
    post-set callbacks: ``add_set_parameters_callbacks`` runs them there.
    """

    def __init__(self, node: Node, schema: ParameterSchema,
                 on_change: Callable[[dict[str, Value], set[str]], None] | None = None,
                 argv: Sequence[str] = (), sections: Mapping[str, ParameterSchema] | None = None):
        """
        Declare ``schema`` with the start values of ``argv`` (the process's arguments).

        ``sections``: the separate nodes' schemas of a node that runs several (the pipeline),
        by namespace; their files come as ``--<section>-params FILE`` before ``--ros-args``.
        """
        self.node = node
        self.schema = schema
        self.on_change = on_change
        self.sections = sections or {}
        self.values = self._declare(argv)
        self._refusal: str | None = None
        add_set_parameters_callbacks(node, self._screen, self._check, self._accept)

    def _declare(self, argv: Sequence[str]) -> dict[str, Value]:
        """
        Declare every parameter with its start value: rcl's overrides, screened first.

        rcl merges the ``--params-file`` and ``-p`` values (``Node._parameter_overrides``, also
        on Humble) and rclpy refuses an int for a double there, where ``ros2 param set`` takes
        it: each override is checked and widened by its spec before it is declared, a misspelt
        key gets a warning naming the closest parameter, a file keyed for other nodes only one
        saying how to key it, and ``start_lines`` say what the files set (logged with 'ready':
        a start that fails is one FATAL line).
        """
        node: Node = self.node
        overrides: MutableMapping[str, Parameter] = node._parameter_overrides
        own, ros_args = split_arguments(argv)
        fqn = node.get_fully_qualified_name()
        sources = override_sources(ros_args, fqn)
        for path in files_for_other_nodes(ros_args, fqn):
            node.get_logger().warning(nothing_for(path, fqn))
        for file in section_files(own, list(self.sections)) if self.sections else []:
            self._take_section_file(file, overrides, sources)
        for name in list(overrides):
            spec = self.schema.specs.get(name)
            if spec is not None:
                value = start_value(spec, overrides[name].value, sources.get(name))
                overrides[name] = Parameter(name, value=value)
            elif not self._ros_own(name):
                self._warn_unknown(name, self.schema, sources.get(name))
        declared: dict[str, Value] = {}
        for spec in self.schema:
            try:
                param = node.declare_parameter(spec.name, spec.default, descriptor(spec))
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise ParameterError(f'{self.schema.node_name}: {exc}') from None
            declared[spec.name] = param.value
        # Overrides from YAML/launch may be valid one by one but not together.
        values = self.schema.validate(self.schema.defaults(), declared, allow_read_only=True)
        changed = [f'{spec.name}={values[spec.name]!r}'
                   + (f' ({sources[spec.name]})' if spec.name in sources else '')
                   for spec in self.schema if values[spec.name] != spec.default]
        self.start_lines = ['set at start: ' + ', '.join(changed)] if changed else []
        """What the start-up sources set, for the node to log once it is ready."""
        return values

    def _ros_own(self, name: str) -> bool:
        """Return whether rclpy declares ``name`` itself (use_sim_time, QoS overrides)."""
        return self.node.has_parameter(name) or name.startswith('qos_overrides.')

    def _take_section_file(self, file: SectionFile, overrides: MutableMapping[str, Parameter],
                           sources: dict[str, str]) -> None:
        """
        Put the values of a separate node's file into its section of the overrides.

        Those other than the node's defaults: a shipped or tuned file lists every parameter,
        and its defaults must not undo the pipeline's own file. Parameters the node and the
        pipeline share (device...) stay the pipeline's own.
        """
        schema = self.sections[file.section]
        node_name = f"{self.node.get_namespace().rstrip('/')}/{schema.node_name}"
        source = f'{file.option} {file.path}'
        values = file_parameters(file.path, node_name)
        not_taken = []
        for name, value in values.items():
            spec = self.schema.specs.get(f'{file.section}.{name}')
            if name in COMMON_NAMES or self._ros_own(name):
                if self._not_own_value(name, value, overrides):
                    not_taken.append(f'{name}={value!r}')
            elif spec is None:
                self._warn_unknown(name, schema, source)
            elif (value := start_value(spec, value, source)) != spec.default:
                overrides[spec.name] = Parameter(spec.name, value=value)
                sources[spec.name] = source
        log = self.node.get_logger()
        if not values:
            log.warning(nothing_for(source, node_name))
        elif not_taken:
            log.warning(f"{source}: {', '.join(not_taken)} not taken: {self.schema.node_name}'s "
                        'own, one for all its capabilities (its file: pipeline_params in the '
                        'launch files)')

    def _not_own_value(self, name: str, value: Value,
                       overrides: Mapping[str, Parameter]) -> bool:
        """
        Whether a shared or ROS parameter in a node's file says other than the node has.

        The node has its own file's value, or ROS's, or its default; a default in the file
        undoes nothing (a shipped or dumped file lists every parameter). A dumped file (``ros2
        param dump``) lists ROS's own too: use_sim_time, the input subscriptions' QoS overrides as
        they adapted (their depth follows the node's own parameters), noise unless changed.
        """
        spec = self.schema.specs.get(name)
        if spec is not None and value == spec.default:
            return False
        if name in overrides:
            own = overrides[name].value
        elif self.node.has_parameter(name):
            own = self.node.get_parameter(name).value
        elif name.startswith('qos_overrides.'):
            own = ADAPTED_OVERRIDES.get(name.rsplit('.', 1)[-1], value)
        elif spec is not None:
            own = spec.default
        else:
            return True
        return value != own

    def _warn_unknown(self, name: str, schema: ParameterSchema, source: str | None) -> None:
        """Warn about a key no parameter has, naming the closest (a misspelling, a section)."""
        names = list(schema.specs)
        same_leaf = [known for known in names if known.rsplit('.', 1)[-1] == name]
        closest = same_leaf or difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {' or '.join(closest)}?" if closest else \
            f'ros2 run cl_vision_nodes {schema.node_name} --help lists them'
        self.node.get_logger().warning(
            f'{source or "a parameter file or -p"}: {schema.node_name} has no parameter '
            f'{name!r}, ignored ({hint})')

    def _own(self, params: list[Parameter]) -> dict[str, Value]:
        return {p.name: p.value for p in params if p.name in self.schema.specs}

    def _screen(self, params: list[Parameter]) -> list[Parameter]:
        self._refusal = None
        screened = []
        for param in params:
            spec = self.schema.specs.get(param.name)
            if spec is not None:
                try:
                    param = Parameter(param.name, value=spec.validate(param.value))
                except ParameterError as exc:
                    self._refusal = self._refusal or str(exc)
                    param = Parameter(param.name, value=self.values[param.name])
            screened.append(param)
        return screened

    def _check(self, params: list[Parameter]) -> SetParametersResult:
        refusal, self._refusal = self._refusal, None
        if refusal is not None:
            return SetParametersResult(successful=False, reason=refusal)
        changes = self._own(params)
        try:
            values = self.schema.validate(self.values, changes)
            if changes and self.on_change is not None:
                self.on_change(values, set(changes))
        except CLVisionError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _accept(self, params: list[Parameter]) -> None:
        changes = self._own(params)
        if not changes:
            return
        self.values = {**self.values, **changes}
        self.node.get_logger().info(
            'parameters set: ' + ', '.join(f'{k}={v!r}' for k, v in changes.items()))


def start_value(spec: ParamSpec, value: Any, source: str | None) -> Value:
    """
    Return a start value as the spec takes it, or raise ParameterError naming its source.

    As at run time, an int is widened for a float; an int for a string is its digits (a YAML
    ``device: 3090``, ``-p device:=3090``, image_proc's ``interpolation: 1``).
    """
    try:
        return spec.validate(value)
    except ParameterError as exc:
        raise ParameterError(f'{exc} (from {source or "a parameter file or -p"})') from None
