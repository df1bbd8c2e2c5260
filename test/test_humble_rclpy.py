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
Nothing the package takes from rclpy is missing from Humble's rclpy, the oldest it supports.

PyPI has no Humble wheels, so the package's use of rclpy is read with ``ast`` and compared with
Humble's API as read from the humble branch of ros2/rclpy (data/humble_rclpy_api.txt, made by
scripts/rclpy_api.py; its first line names the commit). Checked in cl_vision_nodes/ and
test/rosutil.py:

- every import of rclpy, also inside functions (``import rclpy.x``, ``from rclpy.x import y``):
  the module exists and defines the name;
- attributes reached from rclpy (``rclpy.logging.get_logger``, ``QoSOverridingOptions.
  with_default_policies``), on ``self`` in a class derived from an rclpy class (``VisionNode``
  and its subclasses) and on a parameter annotated with one (``node: Node``);
- the keyword arguments of calls to them (``rclpy.init(signal_handler_options=...)``,
  ``create_subscription(..., raw=True)``);
- subscription callbacks: Humble's rclpy passes the message only, never MessageInfo, so a
  callback that needs two arguments fails on the first message
  (``rclpy_compat.with_message_info`` adapts one).

A use guarded for newer distros is allowed: an import in the body of a ``try`` whose ``except``
catches ImportError (or ModuleNotFoundError), an attribute there with AttributeError, or in the
body of ``if hasattr(obj, 'name'):``. Objects the code does not type (locals, return values)
are not followed: the check finds what Humble lacks, it does not prove the rest is there.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
import textwrap

import pytest

REPO = Path(__file__).resolve().parents[1]
API_FILE = REPO / 'test' / 'data' / 'humble_rclpy_api.txt'
SCANNED = [*sorted((REPO / 'cl_vision_nodes').rglob('*.py')), REPO / 'test' / 'rosutil.py']
OBJECT_ATTRIBUTES = set(dir(object)) | {'__dict__'}
UNKNOWN = '?'


@dataclass
class Api:
    """One rclpy branch's API, as scripts/rclpy_api.py lists it."""

    header: list[str] = field(default_factory=list)
    modules: set[str] = field(default_factory=set)
    names: dict[str, set[str]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    calls: dict[str, list[str]] = field(default_factory=dict)
    bases: dict[str, list[str]] = field(default_factory=dict)
    attrs: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Api:
        api = cls()
        for line in path.read_text().splitlines():
            if line.startswith('#'):
                api.header.append(line)
                continue
            kind, what, *rest = line.split()
            if kind == 'module':
                api.modules.add(what)
            elif kind == 'name':
                api.names.setdefault(what, set()).add(rest[0])
            elif kind == 'alias':
                api.aliases[what] = rest[0]
            elif kind == 'call':
                api.calls[what] = rest
            elif kind == 'class':
                api.bases[what] = [b for b in rest if b != '-']
            elif kind == 'attr':
                api.attrs.setdefault(what, set()).add(rest[0])
        return api

    def resolved(self, ref: str) -> str:
        """Follow imports: ``rclpy.try_shutdown`` is ``rclpy.utilities.try_shutdown``."""
        seen = set()
        while ref in self.aliases and ref not in seen:
            seen.add(ref)
            ref = self.aliases[ref]
        return ref


@dataclass
class PackageClass:
    bases: list[str]  # qualified names, UNKNOWN for a base outside the package and rclpy
    attrs: set[str]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]


def required_arguments(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                       method: bool = False) -> int:
    """Return how many positional arguments a call must pass (``self`` not counted)."""
    args = function.args
    return len(args.posonlyargs) + len(args.args) - len(args.defaults) - method


def own_attributes(node: ast.ClassDef) -> set[str]:
    """Return what a class defines: its body's names and whatever its methods set on self."""
    attrs = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            attrs.add(stmt.name)
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else
                       [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []):
            attrs.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
                and isinstance(sub.value, ast.Name) and sub.value.id == 'self'):
            attrs.add(sub.attr)
    return attrs


def catches(handler: ast.ExceptHandler, exceptions: set[str]) -> bool:
    if handler.type is None:
        return True
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(ast.unparse(c) in exceptions for c in caught)


def hasattr_tests(test: ast.expr) -> set[tuple[str, str]]:
    """Return the (object, name) pairs of ``hasattr(object, 'name')`` in an if's test (and)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    return {(ast.unparse(p.args[0]), p.args[1].value) for p in parts
            if isinstance(p, ast.Call) and ast.unparse(p.func) == 'hasattr'
            and len(p.args) == 2 and isinstance(p.args[1], ast.Constant)}


class SourceFile:
    """One module's tree, its imports and the ancestors of each node."""

    def __init__(self, module: str, source: str):
        self.module = module
        self.tree = ast.parse(source)
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.imports: dict[str, str] = {}  # local name -> qualified name
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    head = alias.name.partition('.')[0]
                    self.imports[alias.asname or head] = alias.name if alias.asname else head
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f'{node.module}.{alias.name}'
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}

    def qualified(self, expr: ast.expr) -> str:
        """Return the qualified name that ``Node`` or ``rclpy.node.Node`` stands for here."""
        head, _, rest = ast.unparse(expr).partition('.')
        if head in self.classes:
            return f'{self.module}.{head}'
        if head not in self.imports:
            return UNKNOWN
        return f'{self.imports[head]}.{rest}' if rest else self.imports[head]

    def ancestors(self, node: ast.AST):
        """Yield (ancestor, its child on the way to ``node``), nearest first."""
        while node in self.parents:
            parent = self.parents[node]
            yield parent, node
            node = parent

    def guarded(self, node: ast.AST, exceptions: set[str], attribute: ast.Attribute | None = None
                ) -> bool:
        """Tell whether ``node`` runs only where it works: under try/except or hasattr."""
        for parent, child in self.ancestors(node):
            if isinstance(parent, ast.Try) and any(child is s for s in parent.body) and any(
                    catches(h, exceptions) for h in parent.handlers):
                return True
            if (attribute is not None and isinstance(parent, ast.If)
                    and any(child is s for s in parent.body)
                    and (ast.unparse(attribute.value), attribute.attr)
                    in hasattr_tests(parent.test)):
                return True
        return False

    def enclosing_functions(self, node: ast.AST):
        for parent, _ in self.ancestors(node):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield parent


class Checker:
    """Uses of rclpy in a set of modules that one rclpy API lacks."""

    def __init__(self, api: Api, sources: dict[str, str]):
        self.api = api
        self.files = {name: SourceFile(name, text) for name, text in sources.items()}
        self.classes: dict[str, PackageClass] = {}
        for file in self.files.values():
            for name, node in file.classes.items():
                self.classes[f'{file.module}.{name}'] = PackageClass(
                    [file.qualified(b) for b in node.bases], own_attributes(node),
                    {f.name: f for f in node.body
                     if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))})
        self.problems: set[tuple[str, int, str]] = set()

    # -- what a name is ------------------------------------------------------------------------
    def is_rclpy(self, ref: str) -> bool:
        return ref.partition('.')[0] == 'rclpy'

    def rclpy_based(self, cls: str, seen: frozenset = frozenset()) -> bool:
        if cls in self.api.bases:
            return True
        known = self.classes.get(cls)
        return known is not None and cls not in seen and any(
            self.rclpy_based(b, seen | {cls}) for b in known.bases)

    def find_attribute(self, cls: str, attr: str, seen: frozenset = frozenset()
                       ) -> str | bool | None:
        """
        Look ``attr`` up on class ``cls`` and its bases.

        Return the rclpy method's qualified name where rclpy has it, True where the package
        defines it, False where no class has it, None where a base is unknown.
        """
        if cls in self.api.bases:
            if attr in self.api.attrs.get(cls, set()):
                return f'{cls}.{attr}'
            return None if UNKNOWN in self.api.bases[cls] else False
        known = self.classes.get(cls)
        if known is None or cls in seen:
            return None
        if attr in known.attrs:
            return True
        found = [self.find_attribute(b, attr, seen | {cls}) for b in known.bases]
        hits = [f for f in found if f not in (False, None)]
        if hits:
            return hits[0]
        return None if None in found else False

    def annotated_class(self, file: SourceFile, annotation: ast.expr | None) -> str | None:
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode='eval').body
        found = {file.qualified(n) for n in ast.walk(annotation)
                 if isinstance(n, (ast.Name, ast.Attribute))}
        classes = {self.api.resolved(c) for c in found} & ({*self.api.bases} | {*self.classes})
        return classes.pop() if len(classes) == 1 else None

    def typed_name(self, file: SourceFile, node: ast.Name) -> str | None:
        """Return the class of a variable: ``self`` in a method, or an annotated parameter."""
        for function in file.enclosing_functions(node):
            args = function.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg != node.id:
                    continue
                if arg.arg == 'self' and function in file.parents and isinstance(
                        file.parents[function], ast.ClassDef):
                    return f'{file.module}.{file.parents[function].name}'
                return self.annotated_class(file, getattr(arg, 'annotation', None))
        return None

    def reference(self, file: SourceFile, node: ast.expr) -> str | None:
        """
        Return what an expression is: an rclpy module, name, class or method, or a package class.

        None where the check cannot tell (or a problem was reported for it).
        """
        if isinstance(node, ast.Name):
            if node.id in file.imports and self.is_rclpy(file.imports[node.id]):
                return self.api.resolved(file.imports[node.id])
            return self.typed_name(file, node)
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            return None
        base = self.reference(file, node.value)
        if base is None or file.guarded(node, {'AttributeError'}, node):
            return None
        return self.attribute(file, node, base)

    def attribute(self, file: SourceFile, node: ast.Attribute, base: str) -> str | None:
        attr, api = node.attr, self.api
        if base in api.modules:
            if f'{base}.{attr}' in api.modules:
                return f'{base}.{attr}'
            if attr in api.names.get(base, set()):
                return api.resolved(f'{base}.{attr}')
            return self.report(file, node, f"Humble's {base} has no {attr}")
        if base in api.bases or base in self.classes:
            if attr in OBJECT_ATTRIBUTES or not self.rclpy_based(base):
                return None
            found = self.find_attribute(base, attr)
            if found is False:
                return self.report(file, node, f"Humble's {self.rclpy_base(base)} has no {attr}")
            return found if isinstance(found, str) else None
        return None

    def rclpy_base(self, cls: str) -> str:
        """Return the rclpy class that ``cls`` is or derives from, for messages."""
        if cls in self.api.bases:
            return cls
        return next(self.rclpy_base(b) for b in self.classes[cls].bases if self.rclpy_based(b))

    def report(self, file: SourceFile, node: ast.AST, problem: str) -> None:
        self.problems.add((file.module, getattr(node, 'lineno', 0), problem))
        return None

    # -- the checks ----------------------------------------------------------------------------
    def check_import(self, file: SourceFile, node: ast.Import | ast.ImportFrom) -> None:
        if file.guarded(node, {'ImportError', 'ModuleNotFoundError'}):
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if self.is_rclpy(alias.name) and alias.name not in self.api.modules:
                    self.report(file, node, f'Humble has no module {alias.name}')
            return
        if node.level or not node.module or not self.is_rclpy(node.module):
            return
        if node.module not in self.api.modules:
            self.report(file, node, f'Humble has no module {node.module}')
            return
        for alias in node.names:
            if (alias.name not in self.api.names.get(node.module, set())
                    and f'{node.module}.{alias.name}' not in self.api.modules):
                self.report(file, node, f"Humble's {node.module} has no {alias.name}")

    def check_call(self, file: SourceFile, node: ast.Call) -> None:
        ref = self.reference(file, node.func)
        params = self.api.calls.get(ref) if ref else None
        if ref and ref.endswith('.create_subscription') and ref.startswith('rclpy.'):
            self.check_subscription_callback(file, node)
        if params is None or '**' in params:
            return
        for keyword in node.keywords:
            if keyword.arg is not None and keyword.arg not in params:
                self.report(file, node, f"Humble's {ref}() takes no {keyword.arg}=")

    def callback_arguments(self, file: SourceFile, callback: ast.expr) -> int | None:
        """Return how many arguments a callback needs, where the code tells."""
        if isinstance(callback, ast.Lambda):
            return required_arguments(callback)
        if isinstance(callback, ast.Name):
            scopes = [*file.enclosing_functions(callback), file.tree]
            for scope in scopes:
                for node in ast.walk(scope):
                    if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and node.name == callback.id):
                        return required_arguments(node)
        if isinstance(callback, ast.Attribute):
            owner = self.reference(file, callback.value)
            known = self.classes.get(owner or '')
            while known is not None:
                if callback.attr in known.methods:
                    return required_arguments(known.methods[callback.attr], method=True)
                known = next((self.classes[b] for b in known.bases if b in self.classes), None)
        return None

    def check_subscription_callback(self, file: SourceFile, node: ast.Call) -> None:
        """Humble's executor calls a subscription callback with the message only."""
        if 'CallbackType' in self.api.attrs.get('rclpy.subscription.Subscription', set()):
            return  # this rclpy passes MessageInfo to a callback of two arguments
        callback = node.args[2] if len(node.args) > 2 else next(
            (k.value for k in node.keywords if k.arg == 'callback'), None)
        if callback is not None and (self.callback_arguments(file, callback) or 0) > 1:
            self.report(file, node, "Humble's rclpy calls a subscription callback with the "
                                    f'message only, {ast.unparse(callback)} needs more')

    def run(self) -> list[str]:
        for file in self.files.values():
            for node in ast.walk(file.tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self.check_import(file, node)
                elif isinstance(node, ast.Call):
                    self.check_call(file, node)
                elif (isinstance(node, ast.Attribute)
                      and not isinstance(file.parents.get(node), ast.Call)):
                    self.reference(file, node)  # a call's function is checked with the call
        return [f'{module}:{line}: {problem}' for module, line, problem in sorted(self.problems)]


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix('').parts
    parts = parts[1:] if parts[0] == 'test' else parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


@pytest.fixture(scope='module')
def api() -> Api:
    return Api.read(API_FILE)


def check(api: Api, source: str, others: dict[str, str] | None = None) -> list[str]:
    return Checker(api, {'snippet': textwrap.dedent(source), **(others or {})}).run()


def test_the_package_uses_only_what_humbles_rclpy_has(api):
    sources = {module_name(p): p.read_text() for p in SCANNED}
    assert Checker(api, sources).run() == []


def test_the_list_is_humbles(api):
    assert api.header[0].startswith("# rclpy's API on ros2/rclpy branch humble: commit ")
    assert {'rclpy.node', 'rclpy.executors', 'rclpy._rclpy_pybind11'} <= api.modules
    assert 'rclpy.parameter_client' not in api.modules  # Iron and later
    assert 'rclpy.experimental' not in api.modules  # Jazzy and later
    assert 'create_subscription' in api.attrs['rclpy.node.Node']
    assert 'add_pre_set_parameters_callback' not in api.attrs['rclpy.node.Node']


def test_modules_and_names_humble_lacks(api):
    assert check(api, """
        from rclpy.parameter_client import AsyncParameterClient
        import rclpy.experimental
        from rclpy.node import Node, NodeOptions

        def later():
            from rclpy.experimental import EventsExecutor
        """) == ['snippet:2: Humble has no module rclpy.parameter_client',
                 'snippet:3: Humble has no module rclpy.experimental',
                 "snippet:4: Humble's rclpy.node has no NodeOptions",
                 'snippet:7: Humble has no module rclpy.experimental']
    assert check(api, """
        import rclpy
        from rclpy import executors
        from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
        from rclpy._rclpy_pybind11 import RCLError
        """) == []


def test_imports_guarded_for_newer_distros_are_allowed(api):
    assert check(api, """
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            EventsExecutor = None
        try:
            import rclpy.experimental
        except (ModuleNotFoundError, OSError):
            pass
        try:
            pass
        except ImportError:
            from rclpy.experimental import EventsExecutor  # not where the guard is
        """) == ['snippet:13: Humble has no module rclpy.experimental']


def test_attributes_and_keywords_humble_lacks(api):
    assert check(api, """
        import rclpy
        from rclpy.node import Node
        from rclpy.subscription import Subscription

        rclpy.init(args=[], signal_handler_options=None)
        rclpy.init(domain=1)
        rclpy.logging.get_logger('x').info('y')
        rclpy.experimental.EventsExecutor()
        rclpy.try_shutdown(context=None)

        def bind(node: Node, subscription: Subscription | None):
            node.add_on_set_parameters_callback(print)
            node.add_pre_set_parameters_callback(print)
            subscription.get_publisher_count()
            if hasattr(node, 'add_post_set_parameters_callback'):
                node.add_post_set_parameters_callback(print)
        """) == ["snippet:7: Humble's rclpy.init() takes no domain=",
                 "snippet:9: Humble's rclpy has no experimental",
                 "snippet:14: Humble's rclpy.node.Node has no add_pre_set_parameters_callback",
                 "snippet:15: Humble's rclpy.subscription.Subscription has no "
                 'get_publisher_count']


def test_methods_of_classes_derived_from_rclpys(api):
    base = """
        from rclpy.node import Node

        class Base(Node):
            def start(self):
                self.ready = True
                self.create_subscription(int, 't', print, 1, raw=True, qos_overriding_options=None)
        """
    assert check(api, """
        from base import Base

        class Vision(Base):
            def connect(self):
                self.start()
                self.get_logger().info(f'{self.ready} {self.__class__}')
                self.create_subscription(int, 't', print, 1, content_filter_options=None)
                self.get_type_description()
                self.create_subscription(int, 't', self.on_message, 1)
                self.create_subscription(int, 't', lambda msg, info: None, 1)
                self.create_subscription(int, 't', callback=self.on_message_only, qos_profile=1)

            def on_message(self, msg, info):
                pass

            def on_message_only(self, msg, info=None):
                pass
        """, {'base': textwrap.dedent(base)}) == [
        "snippet:8: Humble's rclpy.node.Node.create_subscription() takes no "
        'content_filter_options=',
        "snippet:9: Humble's rclpy.node.Node has no get_type_description",
        "snippet:10: Humble's rclpy calls a subscription callback with the message only, "
        'self.on_message needs more',
        "snippet:11: Humble's rclpy calls a subscription callback with the message only, "
        'lambda msg, info: None needs more']
