#!/usr/bin/env python3
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
Write the API of one branch of ros2/rclpy: its modules, their names, classes and signatures.

test/test_humble_rclpy.py checks the package's use of rclpy against this list for Humble, the
oldest ROS the package supports, without a Humble install: PyPI has no Humble wheels. Usage,
with a clone (or bare mirror) of https://github.com/ros2/rclpy::

    python3 scripts/rclpy_api.py RCLPY_GIT_DIR humble > test/data/humble_rclpy_api.txt

The list is read from the sources, never imported: the Python modules under rclpy/rclpy/ with
``ast``, and the C extension ``rclpy._rclpy_pybind11`` from the names its pybind11 sources
register. Lines (one entry each, words separated by spaces):

- ``module M``: an importable module.
- ``name M N``: a name bound at the top level of module M (a def, class, assignment or import,
  also inside a top-level if/try, not under ``if TYPE_CHECKING``), private ones included.
- ``call Q P...``: the parameters of callable Q (a function, a class's ``__init__`` or a method,
  ``self`` left out); ``*`` where it takes any positional argument, ``**`` any keyword.
- ``class Q B...``: a class and its rclpy base classes, resolved (``-`` for none); a base outside
  rclpy (``Exception``, ``IntEnum``) is named ``?`` (its attributes are unknown).
- ``alias Q T``: top-level name Q is an import of T (rclpy's own names only).
- ``attr Q A``: an attribute of class Q: a method, property, class attribute, nested class or an
  attribute assigned on ``self`` in a method, inherited ones from rclpy bases included.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys

PYTHON_ROOT = 'rclpy/rclpy/'
C_SOURCES = 'rclpy/src/rclpy/'
C_EXTENSION = 'rclpy._rclpy_pybind11'
C_NAMES = re.compile(r'\(\s*(?:m|module)\s*,\s*"(\w+)"|(?:m|module)\.def\(\s*"(\w+)"')


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(['git', '--git-dir', git_dir, *args], check=True, text=True,
                          capture_output=True).stdout


def module_name(path: str) -> str:
    parts = path[len(PYTHON_ROOT) - len('rclpy/'):-len('.py')].split('/')
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    args = function.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    if method and names and not any(isinstance(d, ast.Name) and d.id == 'staticmethod'
                                    for d in function.decorator_list):
        names = names[1:]  # self or cls
    return names + (['*'] if args.vararg else []) + (['**'] if args.kwarg else [])


def top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Return the statements of a module body, those inside top-level if/try included."""
    found = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, ast.If):
            typing_only = ast.unparse(stmt.test) in ('TYPE_CHECKING', 'typing.TYPE_CHECKING')
            found += ([] if typing_only else top_level(stmt.body)) + top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            found += top_level(stmt.body) + top_level(stmt.orelse) + top_level(stmt.finalbody)
            for handler in stmt.handlers:
                found += top_level(handler.body)
    return found


def bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.partition('.')[0] for a in stmt.names if a.name != '*']
    targets = (stmt.targets if isinstance(stmt, ast.Assign)
               else [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else [])
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


class Module:
    """One rclpy module's top-level names, imports and classes."""

    def __init__(self, name: str, source: str, is_package: bool):
        self.name = name
        self.tree = ast.parse(source)
        self.names: set[str] = set()
        self.imported: dict[str, str] = {}  # local name -> qualified name
        package = name if is_package else name.rpartition('.')[0]
        for stmt in top_level(self.tree.body):
            self.names.update(bound_names(stmt))
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    self.imported[alias.asname or alias.name.partition('.')[0]] = \
                        alias.name if alias.asname else alias.name.partition('.')[0]
            if isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ''
                if stmt.level:
                    parts = package.split('.')
                    base = '.'.join(parts[:len(parts) - stmt.level + 1]
                                    + ([stmt.module] if stmt.module else []))
                for alias in stmt.names:
                    self.imported[alias.asname or alias.name] = f'{base}.{alias.name}'
        self.classes = {stmt.name: stmt for stmt in self.tree.body
                        if isinstance(stmt, ast.ClassDef)}


def class_attributes(node: ast.ClassDef) -> tuple[set[str], dict[str, list[str]]]:
    """Return a class's own attribute names and the parameters of its methods."""
    attrs: set[str] = set()
    calls: dict[str, list[str]] = {}
    for stmt in node.body:
        attrs.update(bound_names(stmt))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls[stmt.name] = parameters(stmt, method=True)
            for sub in ast.walk(stmt):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
                        and isinstance(sub.value, ast.Name) and sub.value.id == 'self'):
                    attrs.add(sub.attr)
    return attrs, calls


def api_lines(modules: dict[str, Module], c_names: set[str]) -> list[str]:
    lines = [f'module {name}' for name in sorted({*modules, C_EXTENSION})]
    for module in modules.values():
        lines += [f'name {module.name} {n}' for n in sorted(module.names)]
        lines += [f'alias {module.name}.{n} {target}'
                  for n, target in sorted(module.imported.items())
                  if target.partition('.')[0] == 'rclpy']
        for stmt in module.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines.append(' '.join(['call', f'{module.name}.{stmt.name}',
                                       *parameters(stmt, method=False)]))
    lines += [f'name {C_EXTENSION} {n}' for n in sorted(c_names)]

    def resolve(module: Module, base: ast.expr) -> str:
        text = ast.unparse(base)
        head, _, rest = text.partition('.')
        if head in module.classes:
            return f'{module.name}.{text}'
        qualified = module.imported.get(head)
        if qualified is None:
            return '?'
        qualified = f'{qualified}.{rest}' if rest else qualified
        owner, _, cls = qualified.rpartition('.')
        return qualified if owner in modules and cls in modules[owner].classes else '?'

    def flattened(qualified: str, seen: tuple[str, ...] = ()) -> tuple[set[str], dict, list]:
        owner, _, cls = qualified.rpartition('.')
        node = modules[owner].classes[cls]
        attrs, calls = class_attributes(node)
        bases = [resolve(modules[owner], b) for b in node.bases]
        for base in reversed(bases):
            if base != '?' and base not in seen:
                base_attrs, base_calls, _ = flattened(base, (*seen, qualified))
                attrs |= base_attrs
                calls = {**base_calls, **calls}
        return attrs, calls, bases

    for module in modules.values():
        for cls in module.classes:
            qualified = f'{module.name}.{cls}'
            attrs, calls, bases = flattened(qualified)
            lines.append(' '.join(['class', qualified, *(bases or ['-'])]))
            lines += [f'attr {qualified} {a}' for a in sorted(attrs)]
            if '__init__' in calls:
                lines.append(' '.join(['call', qualified, *calls['__init__']]))
            elif all(b != '?' for b in bases):
                lines.append(f'call {qualified}')
            lines += [' '.join(['call', f'{qualified}.{m}', *p]) for m, p in sorted(calls.items())]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f'usage: {argv[0]} RCLPY_GIT_DIR BRANCH > FILE (see its docstring)', file=sys.stderr)
        return 2
    git_dir, ref = argv[1], argv[2]
    commit = git(git_dir, 'rev-parse', f'{ref}^{{commit}}').strip()
    described = git(git_dir, 'log', '-1', '--format=%s, %cs', commit).strip()
    files = git(git_dir, 'ls-tree', '-r', '--name-only', commit).split('\n')
    modules = {module_name(f): Module(module_name(f), git(git_dir, 'show', f'{commit}:{f}'),
                                      f.endswith('/__init__.py'))
               for f in files if f.startswith(PYTHON_ROOT) and f.endswith('.py')}
    c_names = {a or b for f in files if f.startswith(C_SOURCES) and f.endswith('.cpp')
               for a, b in C_NAMES.findall(git(git_dir, 'show', f'{commit}:{f}'))}
    print(f"# rclpy's API on ros2/rclpy branch {ref}: commit {commit} ({described}).")
    print(f'# Made by: python3 scripts/rclpy_api.py RCLPY_GIT_DIR {ref} (its docstring tells '
          'the format).')
    print('\n'.join(api_lines(modules, c_names)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
