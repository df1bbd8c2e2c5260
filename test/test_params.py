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

"""ParameterSchema: validation reasons, CLI parsing like `ros2 param set`, YAML and docs."""
import math

from cl_vision_nodes.camera.schema import RECTIFY_SCHEMA
from cl_vision_nodes.errors import ParameterError
from cl_vision_nodes.params import ParameterSchema, ParamSpec
from cl_vision_nodes.schemas import NODE_SCHEMAS, PIPELINE_SCHEMA
import pytest


def check_order(values):
    if values['low'] > values['high']:
        raise ParameterError(f"low ({values['low']}) must not exceed high ({values['high']})")


SCHEMA = ParameterSchema('demo_node', [
    ParamSpec('low', 1, 'lower bound', min=0, max=10),
    ParamSpec('high', 5, 'upper bound', min=0, max=10),
    ParamSpec('alpha', 0.5, 'weight', min=0.0, max=1.0),
    ParamSpec('method', 'lk', 'method', choices=('lk', 'hs')),
    ParamSpec('upright', False, 'skip orientation'),
    ParamSpec('device', 'auto', 'device', read_only=True),
], checks=[check_order])


@pytest.mark.parametrize('change, reason', [
    ({'low': 11}, 'above the maximum 10'),
    ({'alpha': -0.1}, 'below the minimum 0.0'),
    ({'alpha': 'x'}, 'expected float, got str'),
    ({'low': 2.0}, 'expected int, got float'),
    ({'upright': 1}, 'expected bool, got int'),
    ({'method': 'bm'}, 'not one of lk, hs'),
    ({'device': 'gpu'}, 'read-only'),
    ({'nope': 1}, "unknown parameter 'nope'"),
    ({'low': 7, 'high': 6}, 'must not exceed'),
])
def test_invalid_changes_are_refused_with_the_reason(change, reason):
    with pytest.raises(ParameterError, match=reason):
        SCHEMA.validate(SCHEMA.defaults(), change)


def test_valid_changes_merge_and_int_widens_to_float():
    merged = SCHEMA.validate(SCHEMA.defaults(), {'alpha': 1, 'method': 'hs', 'high': 9})
    assert merged['alpha'] == 1.0 and type(merged['alpha']) is float
    assert (merged['method'], merged['high'], merged['low']) == ('hs', 9, 1)


def test_read_only_may_be_set_at_start_up_and_unchanged_values_pass():
    assert SCHEMA.validate(SCHEMA.defaults(), {'device': 'gpu'},
                           allow_read_only=True)['device'] == 'gpu'
    assert SCHEMA.validate(SCHEMA.defaults(), {'device': 'auto'})['device'] == 'auto'


@pytest.mark.parametrize('value, taken', [(0, 'nearest'), ('1', 'linear'), (2, 'cubic'),
                                          ('cubic', 'cubic')])
def test_image_procs_interpolation_numbers_are_taken_for_their_names(value, taken):
    for schema, name in ((RECTIFY_SCHEMA, 'interpolation'),
                         (PIPELINE_SCHEMA, 'disparity.interpolation')):
        assert schema.validate(schema.defaults(), {name: value})[name] == taken
    with pytest.raises(ParameterError, match=r"'3' is not one of nearest \(0\), linear \(1\), "
                                             r'cubic \(2\)'):
        RECTIFY_SCHEMA.validate(RECTIFY_SCHEMA.defaults(), {'interpolation': 3})  # INTER_AREA
    assert RECTIFY_SCHEMA.parse_assignments(['interpolation=0'])['interpolation'] == 'nearest'


def test_cli_assignments_parse_like_ros2_param_set():
    values = SCHEMA.parse_assignments(['alpha=0.25', 'low=2', 'upright=true', 'device=0:0'])
    assert values['alpha'] == 0.25 and values['low'] == 2 and values['upright'] is True
    assert values['device'] == '0:0'
    with pytest.raises(ParameterError, match='name=value'):
        SCHEMA.parse_assignments(['alpha'])
    with pytest.raises(ParameterError, match='above the maximum'):
        SCHEMA.parse_assignments(['alpha=3'])


def test_yaml_document_and_markdown_table_list_every_parameter():
    doc = SCHEMA.yaml_document()
    assert list(doc) == ['/**']  # matches the node in any namespace
    assert doc['/**']['ros__parameters'] == SCHEMA.defaults()
    table = SCHEMA.markdown_table()
    for spec in SCHEMA:
        assert f'`{spec.name}`' in table
    assert 'lk, hs' in table and '(read-only)' in table


@pytest.mark.parametrize('schema', NODE_SCHEMAS.values(), ids=lambda s: s.node_name)
def test_every_float_parameter_refuses_nan_and_infinity(schema):
    floats = [spec.name for spec in schema if spec.type is float]
    assert floats
    for name in floats:
        for value, yaml_text in ((math.nan, '.nan'), (math.inf, '.inf'), (-math.inf, '-.inf')):
            with pytest.raises(ParameterError, match=f'{name}: {value!r} is not a finite number'):
                schema.validate(schema.defaults(), {name: value}, allow_read_only=True)
            with pytest.raises(ParameterError, match=f'{name}: {value!r} is not a finite number'):
                schema.parse_assignments([f'{name}={yaml_text}'])


STEPPED = ParamSpec('window', 5, 'odd window', min=3, max=31, step=2)


def test_a_step_allows_only_min_plus_multiples():
    assert STEPPED.validate(15) == 15 and STEPPED.validate(31) == 31
    with pytest.raises(ParameterError, match=r'window: 14 is not 3 plus a multiple of 2 '
                                             r'\(an odd number\)'):
        STEPPED.validate(14)
    assert STEPPED.range_text() == '[3, 31] step 2'
    with pytest.raises(ValueError, match='step needs an int parameter with a minimum'):
        ParamSpec('weight', 0.5, '', step=2)


@pytest.mark.ros  # rcl_interfaces' ParameterDescriptor
def test_a_step_is_in_the_descriptor():
    from cl_vision_nodes.ros.parameters import descriptor
    (ros_range,) = descriptor(STEPPED).integer_range
    assert (ros_range.from_value, ros_range.to_value, ros_range.step) == (3, 31, 2)


def test_an_unparsable_cli_value_is_one_line():
    with pytest.raises(ParameterError) as caught:
        SCHEMA.parse_assignments(['alpha=[1'])
    assert str(caught.value) == "alpha: cannot parse '[1' (expected ',' or ']', but got " \
        "'<stream end>')"


def test_duplicate_names_are_a_programming_error():
    with pytest.raises(ValueError, match='declared twice'):
        ParameterSchema('x', [ParamSpec('a', 1, ''), ParamSpec('a', 2, '')])
