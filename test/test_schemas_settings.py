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
Every declared parameter is applied somewhere.

It is a field of its algorithm's Settings, or read by a named node-level consumer. A parameter in
neither would be declared, validated and documented but do nothing; a new one fails here until it
is placed.
"""
import ast
from dataclasses import fields
from pathlib import Path

import cl_vision_nodes
from cl_vision_nodes.elas import schema as elas
from cl_vision_nodes.flow import schema as flow
from cl_vision_nodes.params import COMMON_NAMES, settings_from_values
from cl_vision_nodes.schemas import CAPABILITIES, NODE_SCHEMAS
from cl_vision_nodes.surf import schema as surf
import pytest

PACKAGE = Path(cl_vision_nodes.__file__).parent

# node -> (its algorithm's Settings and the schema module's NODE_PARAMETERS, or None where the
# node has no algorithm settings and reads every parameter itself)
SETTINGS = {
    'flow_node': (flow.FlowSettings, flow.NODE_PARAMETERS),
    'surf_node': (surf.SurfSettings, surf.NODE_PARAMETERS),
    'disparity_node': (elas.ElasSettings, elas.NODE_PARAMETERS),
    'convert_node': None,
    'rectify_node': None,
    'vision_pipeline': None,  # its namespaced parameters: test_pipeline_parameters_are_...
}

COMMON = {**{name: ('ros/node_base.py',) for name in COMMON_NAMES},
          **{name: ('ros/warm_up.py',) for name in ('warm_up_width', 'warm_up_height')}}
# node -> parameter -> the modules (under cl_vision_nodes/) that read it by name
NODE_LEVEL = {
    'flow_node': {**COMMON, 'max_flow': ('capabilities/flow.py', 'tools/flow_cli.py'),
                  'max_span': ('capabilities/flow.py',)},
    'surf_node': COMMON,
    'disparity_node': {**COMMON, **{name: ('ros/stereo_inputs.py',) for name in (
        'approximate_sync', 'queue_size', 'approximate_sync_tolerance_seconds')},
        **{name: ('capabilities/disparity.py',) for name in (
            'use_color', 'avoid_point_cloud_padding', 'dense_points')},
        'rectify': ('ros/stereo_inputs.py', 'capabilities/disparity.py'),
        'interpolation': ('capabilities/disparity.py', 'tools/disparity_cli.py'),
        **{name: ('elas/colormap.py',) for name in ('color_min', 'color_max')}},
    'convert_node': {**COMMON, 'output_encoding': ('ros/convert_node.py',),
                     'gain': ('ros/convert_node.py',)},
    'rectify_node': {**COMMON, 'interpolation': ('ros/rectify_node.py', 'tools/rectify_cli.py')},
    'vision_pipeline': {**COMMON, 'stereo': ('ros/vision_pipeline.py', 'schemas.py')},
}


def test_every_node_is_listed():
    assert set(SETTINGS) == set(NODE_SCHEMAS) == set(NODE_LEVEL)


def test_pipeline_parameters_are_its_capabilities_parameters():
    """
    The pipeline's parameters: its own, then each capability's switch and node's parameters.

    Those are placed by the separate node's entries above; the pipeline hands each capability
    its namespace (params.section), and reads the switches by name.
    """
    own = set(NODE_LEVEL['vision_pipeline'])
    expected = own | {f'{name}.enabled' for name in CAPABILITIES} | {
        f'{name}.{spec.name}' for name, schema in CAPABILITIES.items() for spec in schema
        if spec.name not in COMMON_NAMES}
    assert set(NODE_SCHEMAS['vision_pipeline'].specs) == expected
    assert "f'{name}.enabled'" in (PACKAGE / 'ros' / 'vision_pipeline.py').read_text()


@pytest.mark.parametrize('node', sorted(set(NODE_SCHEMAS) - {'vision_pipeline'}))
def test_every_parameter_is_a_settings_field_or_read_by_the_node(node):
    names, node_level = set(NODE_SCHEMAS[node].specs), set(NODE_LEVEL[node])
    settings_fields: set[str] = set()
    if SETTINGS[node] is not None:
        settings_type, node_parameters = SETTINGS[node]
        settings_fields = {f.name for f in fields(settings_type)}
        assert set(node_parameters) == node_level, 'NODE_PARAMETERS differ from NODE_LEVEL'
    assert not settings_fields & node_level, 'placed twice'
    unplaced, stale = (names - settings_fields - node_level,
                       (settings_fields | node_level) - names)
    assert not unplaced, f'{sorted(unplaced)}: neither a Settings field nor in NODE_LEVEL'
    assert not stale, f'{sorted(stale)}: not parameters of {node}'


@pytest.mark.parametrize('node', sorted(NODE_SCHEMAS))
def test_node_level_parameters_are_read_by_their_consumers(node):
    """Each named consumer uses the parameter's name as a string (params['name'])."""
    for name, modules in NODE_LEVEL[node].items():
        for module in modules:
            source = (PACKAGE / module).read_text()
            assert f"'{name}'" in source or f'"{name}"' in source, f'{module} never reads {name}'


@pytest.mark.parametrize('node', [n for n, s in SETTINGS.items() if s is not None])
def test_every_settings_field_is_read_by_its_algorithm(node):
    """
    A static guard: some module of the algorithm's package reads every Settings field.

    Some module (its NumPy reference aside) reads an attribute of the field's name, as the stages
    read ``settings.window_size``.
    """
    settings_type, _ = SETTINGS[node]
    folder = settings_type.__module__.split('.')[-2]  # cl_vision_nodes.<folder>.schema
    read = {n.attr for path in (PACKAGE / folder).glob('*.py') if path.name != 'reference.py'
            for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)}
    unread = {f.name for f in fields(settings_type)} - read
    assert not unread, f'{sorted(unread)} never read in cl_vision_nodes/{folder}/'


@pytest.mark.parametrize('node', [n for n, s in SETTINGS.items() if s is not None])
def test_from_values_refuses_a_parameter_placed_nowhere(node):
    settings_type, node_parameters = SETTINGS[node]
    defaults = NODE_SCHEMAS[node].defaults()
    assert isinstance(settings_type.from_values(defaults), settings_type)
    with pytest.raises(TypeError, match=r"\['forgotten'\] are neither its fields"):
        settings_type.from_values({**defaults, 'forgotten': 1})
    missing = next(f.name for f in fields(settings_type))
    with pytest.raises(TypeError, match=rf"fields \['{missing}'\] have no value"):
        settings_from_values(settings_type, {k: v for k, v in defaults.items() if k != missing},
                             node_parameters)
