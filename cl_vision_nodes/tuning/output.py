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
The tuned parameters as the node's parameter file (``/**:`` + ``ros__parameters``).

Every parameter of the node is written, as in config/<node>.yaml (the schema's
``yaml_document``, nested for vision_pipeline), so the file takes the place of the shipped one
with ``--params-file`` or a launch file's ``<node>_params`` argument.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from cl_vision_nodes.params import Value
from cl_vision_nodes.tuning.space import node_schema
import yaml

HEADER = ('# Parameters of {node} tuned by `cl-vision tune` on {bag}\n'
          '# {summary}\n'
          '# Every parameter of the node is here; give the file to the node with --params-file\n'
          "# or the launch files' *_params arguments.\n")


def params_yaml(node: str, values: Mapping[str, Value], bag: str = '', summary: str = '') -> str:
    """Return the file's text: ``values`` over the node's defaults, validated by its schema."""
    schema = node_schema(node)
    full = schema.validate(schema.defaults(), values, allow_read_only=True)
    body = yaml.safe_dump(schema.yaml_document(full), sort_keys=False, default_flow_style=False)
    return HEADER.format(node=schema.node_name, bag=bag, summary=summary) + body


def write_params(out_dir: Path, node: str, values: Mapping[str, Value], bag: str = '',
                 summary: str = '') -> Path:
    """Write ``<out_dir>/<node>.yaml`` (``params_yaml``) and return its path."""
    path = Path(out_dir) / f'{node}.yaml'
    path.write_text(params_yaml(node, values, bag, summary))
    return path
