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
What a tune searches: the node's parameters as Optuna distributions, from its schema only.

Ranges, types and choices are the schema's (``ParamSpec``); a narrower range may be asked for
(``--params name=LOW:HIGH``) but never a wider one. Numeric ranges spanning two decades or more
from a positive minimum are searched on a log scale. A range from 0 over such a span (e.g.
``speckle_size`` 0..10^7, ``hessian_threshold`` 0..10^9) whose default is not 0 is searched on a
log scale from 1 (int) or from a hundredth of the default (float), so the default stays inside
and 0 (usually "off") is reached only with an explicit range; with a default of 0 it is searched
linearly. bool is a choice of (False, True). Tunable are the
algorithm's parameters: not the common ones (device, ...), not those the node reads itself
(synchronisation, pictures), not the pipeline's ``*.enabled``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from cl_vision_nodes.elas import schema as elas_schema
from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.flow import schema as flow_schema
from cl_vision_nodes.params import ParameterSchema, ParamSpec
from cl_vision_nodes.schemas import CAPABILITIES, PIPELINE_SCHEMA
from cl_vision_nodes.surf import schema as surf_schema
from optuna.distributions import (BaseDistribution, CategoricalDistribution, FloatDistribution,
                                  IntDistribution)

Distribution = BaseDistribution
LOG_SPAN = 100.0
"""max / min from which a range is searched on a log scale."""

NODES: tuple[str, ...] = ('disparity', 'flow', 'surf', 'vision_pipeline')
SCHEMAS: dict[str, ParameterSchema] = {**CAPABILITIES, 'vision_pipeline': PIPELINE_SCHEMA}
_NODE_PARAMETERS: dict[str, frozenset[str]] = {
    'disparity': elas_schema.NODE_PARAMETERS, 'flow': flow_schema.NODE_PARAMETERS,
    'surf': surf_schema.NODE_PARAMETERS}

_ELAS_TUNED = ('support_threshold', 'support_texture', 'candidate_stepsize', 'incon_window_size',
               'incon_threshold', 'incon_min_support', 'grid_size', 'beta', 'gamma', 'sigma',
               'sradius', 'match_texture', 'lr_threshold', 'speckle_sim_threshold',
               'speckle_size', 'ipol_gap_width', 'filter_median', 'filter_adaptive_mean')
FLOW_TUNED_BY_METHOD: dict[str, tuple[str, ...]] = {
    'lk': ('pyramid_levels', 'window_size', 'window_sigma', 'lk_iterations', 'min_eigenvalue'),
    'hs': ('pyramid_levels', 'alpha', 'warps', 'iterations', 'data_epsilon', 'smooth_epsilon',
           'median_filter'),
    'bm': ('block_size', 'search_radius', 'subpixel'),
    'dis': ('dis_patch_size', 'dis_patch_stride', 'dis_iterations', 'dis_finest_level',
            'dis_refine_iterations', 'dis_alpha', 'dis_gamma', 'dis_delta'),
}
"""Flow's parameters tuned without ``--params``: those of the method that runs (``auto``'s is
the device's choice, ``flow.schema.resolve_method``); the others would change nothing."""
_FLOW_TUNED = tuple(dict.fromkeys(FLOW_TUNED_BY_METHOD['hs'] + FLOW_TUNED_BY_METHOD['dis']))
_SURF_TUNED = ('hessian_threshold', 'n_octaves', 'n_octave_layers', 'upright', 'max_keypoints')

DEFAULT_TUNED: dict[str, tuple[str, ...]] = {
    'disparity': _ELAS_TUNED,
    'flow': _FLOW_TUNED,
    'surf': _SURF_TUNED,
    'vision_pipeline': tuple(f'{prefix}.{name}' for prefix, names in (
        ('flow', _FLOW_TUNED), ('surf', _SURF_TUNED), ('disparity', _ELAS_TUNED))
        for name in names),
}
"""Parameters tuned without ``--params``: those that change the answers, not the node's I/O.
Flow: without a device to tell the method (``search_space``'s ``flow_method``), the parameters
of hs (GPUs) and dis (CPUs), the methods ``auto`` picks; ``method`` itself only when named."""


AT_MOST: dict[str, str] = {'dis_patch_stride': 'dis_patch_size',
                           'flow.dis_patch_stride': 'flow.dis_patch_size'}
"""Parameters the schema refuses above another's value (a DIS patch stride above the patch size
leaves pixels without flow): a trial searches them up to that value, so none is wasted."""


def node_schema(node: str) -> ParameterSchema:
    """Return the schema of a tunable node; ParameterError naming the valid nodes."""
    if node not in SCHEMAS:
        raise ParameterError(f"unknown node {node!r}; tunable: {', '.join(NODES)}")
    return SCHEMAS[node]


def tunable_names(node: str) -> tuple[str, ...]:
    """Return the parameters of ``node`` a tune may search (see the module's docstring)."""
    if node == 'vision_pipeline':
        return tuple(f'{prefix}.{name}' for prefix in CAPABILITIES
                     for name in tunable_names(prefix))
    schema = node_schema(node)
    return tuple(spec.name for spec in schema
                 if spec.name not in _NODE_PARAMETERS[node] and not spec.read_only)


def distribution(spec: ParamSpec, low: float | None = None,
                 high: float | None = None) -> Distribution:
    """Return the distribution of one parameter over its schema range or [low, high] within it."""
    if spec.type is bool:
        return CategoricalDistribution((False, True))
    if spec.choices:
        return CategoricalDistribution(spec.choices)
    explicit = low is not None
    low = spec.min if low is None else low
    high = spec.max if high is None else high
    if low is None or high is None:
        raise ParameterError(f'{spec.name}: the schema gives no range to search')
    for bound in (low, high):
        spec.validate(spec.type(bound))
    if low >= high:
        raise ParameterError(f'{spec.name}: range {low}:{high} is empty')
    if not explicit and low == 0 and high >= LOG_SPAN and spec.default != 0:
        low = 1 if spec.type is int else spec.default / LOG_SPAN  # a log scale from above 0
    if spec.type is int:
        if spec.step > 1:
            return IntDistribution(int(low), int(high), step=spec.step)
        return IntDistribution(int(low), int(high), log=low > 0 and high / low >= LOG_SPAN)
    return FloatDistribution(float(low), float(high), log=low > 0 and high / low >= LOG_SPAN)


def default_names(node: str, flow_method: str | None = None) -> tuple[str, ...]:
    """Return the parameters tuned by default; flow's those of ``flow_method`` when given."""
    if flow_method is None or node not in ('flow', 'vision_pipeline'):
        return DEFAULT_TUNED[node]
    flow = FLOW_TUNED_BY_METHOD[flow_method]
    if node == 'flow':
        return flow
    return tuple(name for name in DEFAULT_TUNED[node] if not name.startswith('flow.')) + \
        tuple(f'flow.{name}' for name in flow)


def search_space(node: str, names: Sequence[str] | None = None,
                 ranges: Mapping[str, tuple[float, float]] | None = None,
                 flow_method: str | None = None) -> dict[str, Distribution]:
    """
    Return name -> distribution for ``names`` (default ``default_names``).

    ``ranges`` narrows a numeric parameter to [low, high]; ParameterError for an unknown or
    untunable name (listing the valid ones) or a range outside the schema's. ``flow_method``:
    the flow method that runs (explicit, or ``auto`` resolved on the device).
    """
    schema = node_schema(node)
    valid = tunable_names(node)
    chosen = list(default_names(node, flow_method) if not names else names)
    ranges = dict(ranges or {})
    for name in [*chosen, *ranges]:
        if name not in valid:
            raise ParameterError(f'{name!r} is not a tunable parameter of {node}; tunable: '
                                 f"{', '.join(valid)}")
    space = {}
    for name in dict.fromkeys([*chosen, *ranges]):
        spec = schema.specs[name]
        if name in ranges and (spec.type in (bool, str)):
            raise ParameterError(f'{name}: a {spec.type.__name__} takes no range')
        space[name] = distribution(spec, *ranges.get(name, (None, None)))
    return space


def parse_params(text: str) -> tuple[list[str], dict[str, tuple[float, float]]]:
    """Parse ``--params a,b=LOW:HIGH,c``: the names, and the ranges given for some of them."""
    names, ranges = [], {}
    for item in (part.strip() for part in text.split(',')):
        if not item:
            continue
        name, sep, bounds = item.partition('=')
        names.append(name)
        if sep:
            low, colon, high = bounds.partition(':')
            try:
                ranges[name] = (float(low), float(high))
            except ValueError:
                colon = ''
            if not colon:
                raise ParameterError(f'--params {item}: expected NAME or NAME=LOW:HIGH')
    return names, ranges
