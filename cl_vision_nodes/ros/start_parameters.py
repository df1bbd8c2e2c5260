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
Where a node's start-up parameters come from: its parameter files, ``-p`` and section files.

rcl merges the ``--params-file`` and ``-p`` arguments into one set of overrides and forgets
where each value came from; reading the same arguments again lets the node say which file set
what, name the file of a misspelt key and a file keyed for other nodes only. The pipeline also
takes a separate node's file for one of its sections (``--flow-params FILE``: a flat
``method: hs`` becomes ``flow.method``), which rcl cannot do. Files are matched to a node by
rcl's rules for their node keys (``/**``, ``/**/flow_node``, ``flow_node`` = ``/flow_node``,
``*`` for one namespace token).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from cl_vision_nodes.errors import ParameterError
import yaml

VALUE_OPTIONS = frozenset({'-p', '--param', '--params-file', '-r', '--remap', '--log-level',
                           '--log-config-file', '-e', '--enclave'})
"""ROS arguments that take a value (rcl's); every other option is a flag."""
LAUNCH_FILE_PREFIX = 'launch_params_'
"""launch_ros writes a node's ``<param name=...>`` values to a temporary file named so."""


@dataclass(frozen=True)
class SectionFile:
    """A separate node's parameter file given to the pipeline for one section (``flow``)."""

    section: str
    path: str

    @property
    def option(self) -> str:
        return f'--{self.section}-params'


def split_arguments(argv: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """
    Return the node's own arguments and the (option, value) pairs of its ROS arguments.

    ROS arguments run from ``--ros-args`` to ``--`` or the end, as rcl reads them; flags come
    with an empty value.
    """
    own: list[str] = []
    ros: list[tuple[str, str]] = []
    args = iter(argv[1:])
    for arg in args:
        if arg != '--ros-args':
            own.append(arg)
            continue
        for option in args:
            if option == '--':
                break
            if option == '--ros-args':
                continue
            ros.append((option, next(args, '') if option in VALUE_OPTIONS else ''))
    return own, ros


def node_key_matches(key: str, fqn: str) -> bool:
    """Return whether a parameter file's node key applies to the node named ``fqn``."""
    return _tokens_match([t for t in key.split('/') if t], [t for t in fqn.split('/') if t])


def _tokens_match(pattern: list[str], name: list[str]) -> bool:
    if not pattern:
        return not name
    head, rest = pattern[0], pattern[1:]
    if head == '**':
        return any(_tokens_match(rest, name[index:]) for index in range(len(name) + 1))
    return bool(name) and head in ('*', name[0]) and _tokens_match(rest, name[1:])


def flatten(params: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    """Return nested ``ros__parameters`` named as rcl names them: ``flow: {method: x}``."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            flat.update(flatten(value, f'{name}.'))
        else:
            flat[name] = value
    return flat


def read_parameter_file(path: str) -> dict[str, dict[str, Any]]:
    """
    Return a parameter file's entries: node key -> its ``ros__parameters``.

    Raises ParameterError naming the file when it cannot be read or is no parameter file.
    """
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ParameterError(f'{path}: cannot read it ({exc.strerror})') from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, 'problem', None) or 'not YAML'
        raise ParameterError(f'{path}: not a parameter file ({problem})') from None
    if document is None:
        return {}
    if not isinstance(document, dict) or not all(
            isinstance(entry, dict) and 'ros__parameters' in entry
            for entry in document.values()):
        raise ParameterError(f'{path}: not a parameter file (expected NODE: ros__parameters: '
                             '{...}, e.g. /**: ros__parameters: {...})')
    return {str(key): entry['ros__parameters'] or {} for key, entry in document.items()}


def file_parameters(path: str, fqn: str) -> dict[str, Any]:
    """
    Return the parameters a file sets for the node ``fqn``, later entries over earlier ones.

    Raises ParameterError naming the file when it cannot be read or is no parameter file.
    """
    values: dict[str, Any] = {}
    for key, params in read_parameter_file(path).items():
        if node_key_matches(key, fqn):
            values.update(flatten(params))
    return values


def nothing_for(source: str, fqn: str) -> str:
    """Return the warning for a parameter file that sets nothing for the node ``fqn``."""
    name = fqn.rsplit('/', 1)[-1]
    return f'{source}: nothing in it for {fqn} (a file for it is keyed /**: or /**/{name}:)'


def files_for_other_nodes(ros_args: Sequence[tuple[str, str]], fqn: str) -> list[str]:
    """
    Return the ``--params-file`` files with entries, none of them for the node ``fqn``.

    rcl passes over them without a word: a file keyed ``flow_node:`` (that is ``/flow_node``)
    given to ``/camera/flow_node`` leaves it on its defaults. Unreadable files are left to rcl,
    which refuses them at start; launch_ros' own temporary files are not the user's.
    """
    found: list[str] = []
    for option, value in ros_args:
        if option != '--params-file' or Path(value).name.startswith(LAUNCH_FILE_PREFIX):
            continue
        try:
            keys = read_parameter_file(value)
        except ParameterError:
            continue
        if keys and not any(node_key_matches(key, fqn) for key in keys):
            found.append(value)
    return found


def describe_source(source: str) -> str:
    """Return how a log line names a source: the file, or the launch file for its temporary."""
    return 'the launch file' if Path(source).name.startswith(LAUNCH_FILE_PREFIX) else source


def override_sources(ros_args: Sequence[tuple[str, str]], fqn: str) -> dict[str, str]:
    """
    Return, for each parameter the ROS arguments set for ``fqn``, what set it last.

    A file (its path, or 'the launch file'), or '-p'. Unreadable files are left to rcl, which
    refuses them at start.
    """
    sources: dict[str, str] = {}
    for option, value in ros_args:
        if option == '--params-file':
            try:
                names = file_parameters(value, fqn)
            except ParameterError:
                continue
            sources.update(dict.fromkeys(names, describe_source(value)))
        elif option in ('-p', '--param'):
            sources[value.partition(':=')[0]] = '-p'
    return sources


def section_files(own_args: Sequence[str], sections: Sequence[str]) -> list[SectionFile]:
    """
    Return the section files among a node's own arguments (``--flow-params FILE``...).

    Raises ParameterError for another argument, an option without a file or a missing file.
    """
    options = {f'--{section}-params': section for section in sections}
    files: list[SectionFile] = []
    args = iter(own_args)
    for arg in args:
        option, equals, path = arg.partition('=')
        if option not in options:
            known = ', '.join(f'{name} FILE' for name in options) or 'none'
            raise ParameterError(f'unknown argument {arg!r} (before --ros-args: {known})')
        path = path if equals else next(args, '')
        if not path:
            raise ParameterError(f'{option} needs a parameter file')
        if not Path(path).is_file():
            raise ParameterError(f'{option} {path}: no such file')
        files.append(SectionFile(options[option], path))
    return files
