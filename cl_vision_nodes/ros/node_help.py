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
``ros2 run cl_vision_nodes <node> --help``: what a node does, its topics and its parameters.

Printed from the node's module docstring, its topic declarations (``topics``) and its parameter
schema, the same sources as the README tables and config files, without starting the node.
"""
from __future__ import annotations

import sys
import textwrap
from typing import Any, Sequence

from cl_vision_nodes.params import ParameterSchema
from cl_vision_nodes.ros.topics import NodeTopics, Topic

HELP_OPTIONS = ('-h', '--help')
WIDTH = 99


def wants_help(argv: Sequence[str]) -> bool:
    """Return whether ``-h``/``--help`` is among the node's own arguments (before --ros-args)."""
    own = argv[1:argv.index('--ros-args')] if '--ros-args' in argv else argv[1:]
    return any(arg in HELP_OPTIONS for arg in own)


def usage(node_class: Any) -> str:
    """Return the help text of a node class (``SCHEMA``, ``topics`` and its module docstring)."""
    schema: ParameterSchema = node_class.SCHEMA
    name = schema.node_name
    summary = (sys.modules[node_class.__module__].__doc__ or '').strip().split('\n\n')[0]
    topics: NodeTopics = node_class.topics(schema.defaults())
    sections = getattr(node_class, 'SECTIONS', {})
    section_options = ''.join(f' [--{section}-params FILE]' for section in sections)
    lines = [*textwrap.wrap(f'usage: ros2 run cl_vision_nodes {name} [-h]{section_options} '
                            '[--ros-args [-p NAME:=VALUE] [--params-file FILE] [-r FROM:=TO] '
                            '...]', WIDTH, subsequent_indent=' ' * 4), '',
             *textwrap.wrap(' '.join(summary.split()), WIDTH), '',
             *(textwrap.wrap(
                 f"--SECTION-params FILE: a {', '.join(s.node_name for s in sections.values())} "
                 "parameter file whose values go to that section (flow_node's method to "
                 'flow.method), over the --params-file values where it differs from the '
                 'defaults', WIDTH)
               + [''] if sections else []),
             'subscribes (names relative to the node namespace, remap with -r):',
             *_topic_lines(topics.inputs), '',
             'publishes (also /diagnostics):', *_topic_lines(topics.outputs), '',
             *textwrap.wrap(f'parameters (-p name:=value, --params-file FILE, ros2 param set '
                            f'/{name} NAME VALUE; every default in a file: '
                            f'share/cl_vision_nodes/config/{name}.yaml):', WIDTH)]
    for spec in schema:
        allowed = spec.range_text()
        facts = [spec.type.__name__, f'default {spec.default!r}',
                 *([f'range {allowed}' if spec.min is not None or spec.max is not None
                    else f'one of {allowed}'] if allowed else []),
                 *(['read-only: restart to change'] if spec.read_only else [])]
        lines.append(f"  {spec.name} ({', '.join(facts)})")
        lines += textwrap.wrap(spec.description, WIDTH, initial_indent=' ' * 6,
                               subsequent_indent=' ' * 6)
    return '\n'.join(lines)


def _topic_lines(topics: Sequence[Topic]) -> list[str]:
    width = max((len(topic.name) for topic in topics), default=0)
    return [f'  {topic.name:<{width}}  {topic.type_name}' for topic in topics]
