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

from typing import Callable

from cl_vision_nodes.errors import CLVisionError, ParameterError
from cl_vision_nodes.params import ParameterSchema, ParamSpec, Value
from cl_vision_nodes.ros.rclpy_compat import add_set_parameters_callbacks
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
        desc.additional_constraints = f"one of: {', '.join(spec.choices)}"
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
                 on_change: Callable[[dict[str, Value], set[str]], None] | None = None):
        self.node = node
        self.schema = schema
        self.on_change = on_change
        self.values = self._declare()
        self._refusal: str | None = None
        add_set_parameters_callbacks(node, self._screen, self._check, self._accept)

    def _declare(self) -> dict[str, Value]:
        declared: dict[str, Value] = {}
        for spec in self.schema:
            try:
                param = self.node.declare_parameter(spec.name, spec.default, descriptor(spec))
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise ParameterError(f'{self.schema.node_name}: {exc}') from None
            declared[spec.name] = param.value
        # Overrides from YAML/launch may be valid one by one but not together.
        return self.schema.validate(self.schema.defaults(), declared, allow_read_only=True)

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
