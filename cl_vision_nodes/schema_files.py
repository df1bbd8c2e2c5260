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
The files generated from the node schemas, as they must read.

config/<node>.yaml, the ELAS preset files config/elas_<preset>.yaml and the README parameter
tables; ``python -m cl_vision_nodes.tools.gen_config`` writes them, tests compare them.
"""
from __future__ import annotations

from pathlib import Path
import re
from typing import Mapping

from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.params import ParameterSchema, Value
from cl_vision_nodes.schemas import NODE_SCHEMAS
import yaml


HEADER = ('# Parameters of {node}, generated from its schema by\n'
          '# `python -m cl_vision_nodes.tools.gen_config`: edit the schema, not this file.\n'
          '# Keyed /** so that the file applies to the node it is given to, in any namespace;\n'
          "# a copy of it works with --params-file or the launch files' *_params arguments.\n")


def yaml_text(schema: ParameterSchema, values: Mapping[str, Value] | None = None) -> str:
    body = yaml.safe_dump(schema.yaml_document(values), sort_keys=False,
                          default_flow_style=False)
    return HEADER.format(node=schema.node_name) + body


def table_block(schema: ParameterSchema) -> str:
    return (f'<!-- params:{schema.node_name} -->\n{schema.markdown_table()}\n'
            f'<!-- /params:{schema.node_name} -->')


def readme_with_tables(readme: str) -> str:
    """Replace every ``<!-- params:NODE -->`` block with the table of NODE's schema."""
    def table(match: re.Match) -> str:
        return table_block(NODE_SCHEMAS[match.group(1)])
    return re.sub(r'<!-- params:(\w+) -->.*?<!-- /params:\1 -->', table, readme, flags=re.S)


def config_files(root: Path) -> dict[Path, tuple[ParameterSchema, dict[str, Value]]]:
    """Every shipped parameter file, with the schema of its node and the values it holds."""
    files = {root / 'config' / f'{name}.yaml': (schema, schema.defaults())
             for name, schema in NODE_SCHEMAS.items()}
    elas = NODE_SCHEMAS['disparity_node']
    for preset, values in PRESETS.items():
        merged = elas.validate(elas.defaults(), values, allow_read_only=True)
        files[root / 'config' / f'elas_{preset}.yaml'] = (elas, merged)
    return files


def expected_files(root: Path) -> dict[Path, str]:
    files = {path: yaml_text(schema, values)
             for path, (schema, values) in config_files(root).items()}
    readme = root / 'README.md'
    files[readme] = readme_with_tables(readme.read_text())
    return files
