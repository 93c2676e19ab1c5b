"""Capabilities, not words: a candidate may not give a module a power the module did not have.

The content rules of ``tamper.py`` and ``forgery.py`` name constructs (``sys.modules``, a
comparison method that returns a constant); a forgery reworded past them (``getattr`` with a
joined string, ``__eq__`` set on the class afterwards, a payload unpickled from hex) still needs
a *capability* the code under repair rarely has: a module outside a short list of pure ones, an
attribute reached by a computed name, a special ("dunder") method or attribute, a builtin that
runs or reads code or files, or file access. This check compares the syntax trees of each
changed Python file before and after the candidate and refuses one that adds a capability the
file did not use (``check_capabilities``), unless the user allowed it (``--allow-capability
NAME``; the kept candidate is then flagged). A capability the file already used stays allowed,
but a use of it on a changed line is flagged.

Capability names (what ``--allow-capability`` takes):

- ``import:<module>``: importing a module outside ``PURE_MODULES`` that is not the project's own
  (a relative import, or a top-level name found in the project); the names such an import binds
  count as uses of it (``os`` in ``os.environ``);
- ``dunder:<name>``: defining, assigning, reading or naming (in a string or a keyword argument)
  a double-underscore name outside ``ORDINARY_DUNDERS`` (``__eq__``, ``__hash__``,
  ``__bool__``, ``__class__``, ``__dict__``, ``__getattr__``, ``__init_subclass__``...);
- ``builtin:<name>``: a builtin in ``CAPABILITY_BUILTINS`` (``open``, ``eval``, ``exec``,
  ``compile``, ``globals``, ``vars``, ...), called or referred to;
- ``computed_attribute``: ``getattr``/``setattr``/``delattr``/``hasattr`` with a name that is not
  a string literal or passed around as a value, ``operator.attrgetter``/``methodcaller`` with
  a computed name, a class built by three-argument ``type()``;
- ``files``: a call of a path method that reads or writes a file (``read_text``,
  ``write_bytes``, ``open``, ``unlink``...).

What is structural and what is a list: the comparison of two syntax trees is structural (a
reworded construct is still the same node kind), and so is "a name not written as a literal".
The pure modules, the ordinary dunders, the capability builtins and the frame attributes are
lists, reviewed in ``capability_lists.py``; a capability reached through the project's own
modules (a helper that already calls ``getattr``) is not seen, since the project's code is the
project's. Stdlib only.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from repairloop.errors import GuardError
from repairloop.patch.capability_lists import (
    ATTRIBUTE_BUILTINS,
    CAPABILITY_BUILTINS,
    FILE_METHODS,
    FORMAT_CALLS,
    FRAME_ATTRIBUTES,
    NAME_GETTERS,
    ORACLE_CAPABILITIES,
    ORDINARY_DUNDERS,
    PURE_MODULES,
    SHADOWED_BUILTINS,
)
from repairloop.patch.changes import FileChange
from repairloop.patch.statements import parse_module

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_DUNDER = re.compile(r"__[A-Za-z]\w*?__")


@dataclass(frozen=True)
class CapabilityUse:
    """One use of a capability in a module: its name and the lines it spans (1-based,
    inclusive)."""

    capability: str
    first: int
    last: int


@dataclass(frozen=True)
class CapabilityFinding:
    """A capability a kept candidate uses on its changed lines, for its flag.

    ``allowed`` is True when the file did not use it before and the user allowed it; False
    when the file already used it (a new use of an old power).
    """

    path: str
    capability: str
    line: int
    allowed: bool

    def __str__(self) -> str:
        why = "allowed by --allow-capability" if self.allowed else "the file already used it"
        return f"{self.capability} at {self.path}:{self.line} ({why})"


def check_capabilities(
    change: FileChange,
    root: Path,
    allowed: AbstractSet[str] = frozenset(),
    created: AbstractSet[str] = frozenset(),
) -> Tuple[CapabilityFinding, ...]:
    """Refuse ``change`` when it gives its module a capability the module did not use.

    ``root`` is the project root (which top-level modules are the project's own), ``created``
    the paths of files the same candidate creates (its own new modules); ``allowed`` the
    capability names the user allowed, as ``fnmatch`` patterns (``import:*``). Returns the
    capabilities used on changed lines (for flags): allowed new ones and old ones. A file that
    is not Python, is deleted, or does not parse after the change (``check_syntax`` reports
    it) returns ().
    Raises GuardError naming the capability, the file, the line and how to allow it.
    """
    if not change.path.endswith((".py", ".pyi")) or change.new_text is None:
        return ()
    new_tree = parse_module(change.new_text)
    if new_tree is None:
        return ()
    own = project_modules(root, change.path).union(*(_module_names(path) for path in created))
    old_tree = parse_module(change.old_text) if change.old_text is not None else None
    before = {use.capability for use in capability_uses(old_tree, own)} if old_tree else set()
    changed = changed_lines(change.old_text or "", change.new_text)
    findings: Dict[Tuple[str, int], CapabilityFinding] = {}
    for use in capability_uses(new_tree, own):
        new = use.capability not in before
        hit = next((n for n in range(use.first, use.last + 1) if n in changed), None)
        allowed_here = any(fnmatch.fnmatchcase(use.capability, p) for p in allowed)
        if new and not allowed_here:
            raise GuardError(
                f"the candidate gives {change.path} a capability it did not use: "
                f"{use.capability} (line {use.first}); {describe(use.capability)}",
                hint="fix the computation with what the module already uses; if the fix needs "
                f"it, run again with --allow-capability {use.capability}",
            )
        if hit is not None and use.capability in ORACLE_CAPABILITIES and not allowed_here:
            raise GuardError(
                f"the candidate changes how {change.path}'s objects compare ({use.capability} "
                f"at line {hit}): a test's assertion calls it to judge the result, so it is "
                "refused like a test edit",
                hint="fix the computation whose result the test compares; if the comparison "
                f"itself is the bug, run again with --allow-capability {use.capability}",
            )
        if hit is not None and (use.capability, hit) not in findings:
            findings[(use.capability, hit)] = CapabilityFinding(
                change.path, use.capability, hit, new
            )
    return tuple(findings.values())


def describe(capability: str) -> str:
    """What a capability lets code do, in a clause for a refusal message."""
    kind, _, name = capability.partition(":")
    if kind == "import":
        return f"the module {name} is not one of the pure modules a computation needs"
    if kind == "dunder":
        return f"{name} changes how objects compare, behave or are introspected"
    if kind == "builtin":
        return f"{name}() runs code, reads the interpreter's namespaces or reads files"
    if kind == "files":
        return "it reads or writes files"
    if kind == "introspection":
        return "frame, code and traceback attributes walk the call stack to the test runner"
    return "it reaches an attribute or builds a class by a name computed at run time"


def changed_lines(old_text: str, new_text: str) -> FrozenSet[int]:
    """The 1-based numbers of the lines of ``new_text`` that ``old_text`` does not have there."""
    old, new = old_text.splitlines(), new_text.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return frozenset(
        n + 1
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("replace", "insert")
        for n in range(j1, j2)
    )


def project_modules(root: Path, path: str) -> FrozenSet[str]:
    """Top-level module names that are the project's own: modules and packages at ``root``, in
    ``src/`` and ``lib/``, and beside the file at ``path`` (a script's siblings)."""
    names: Set[str] = set()
    parent = (root / path).parent
    for folder in (root, root / "src", root / "lib", parent):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.suffix in (".py", ".pyi") and entry.is_file():
                names.add(entry.stem)
            elif entry.is_dir() and not entry.name.startswith("."):
                names.add(entry.name)
    return frozenset(names)


def _module_names(path: str) -> Set[str]:
    """The names a created file may be imported by: its top-level package (``src/pkg/a.py`` ->
    ``pkg``) and its own name (imported by a sibling whose directory is on the path)."""
    parts = path.split("/")
    if len(parts) > 1 and parts[0] in ("src", "lib"):
        parts = parts[1:]
    return {parts[0].split(".")[0], parts[-1].split(".")[0]}


def capability_uses(tree: ast.Module, own: AbstractSet[str] = frozenset()) -> List[CapabilityUse]:
    """Every capability use in ``tree``; ``own`` names the project's top-level modules."""
    return list(_Finder(tree, own).uses())


class _Finder:
    """One pass over a module: its imports' bound names first, then every node."""

    def __init__(self, tree: ast.Module, own: AbstractSet[str]) -> None:
        self.tree = tree
        self.own = own
        self.bound_to: Dict[str, str] = {}  # a name an import binds -> its capability
        self.locals = _bound_names(tree)
        self.docstrings = _docstrings(tree)
        self.called: Set[int] = set()  # ids of getattr/attrgetter names that are a call's func
        self.restoring = _hash_beside_eq(tree)

    def uses(self) -> Iterator[CapabilityUse]:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield from self._imports(node)
        for node in ast.walk(self.tree):
            yield from self._node(node)

    def _imports(self, node: ast.AST) -> Iterator[CapabilityUse]:
        if isinstance(node, ast.ImportFrom):
            if node.level or self._pure_or_own(node.module or ""):
                return
            capability = f"import:{(node.module or '').split('.')[0]}"
            for alias in node.names:
                self.bound_to[alias.asname or alias.name] = capability
        else:
            assert isinstance(node, ast.Import)
            for alias in node.names:
                if self._pure_or_own(alias.name):
                    continue
                capability = f"import:{alias.name.split('.')[0]}"
                self.bound_to[alias.asname or alias.name.split(".")[0]] = capability
                yield _use(capability, node)
            return
        yield _use(capability, node)

    def _pure_or_own(self, module: str) -> bool:
        parts = module.split(".")
        dotted = {".".join(parts[: i + 1]) for i in range(len(parts))}
        return bool(dotted & PURE_MODULES) or parts[0] in self.own

    def _node(self, node: ast.AST) -> Iterator[CapabilityUse]:
        if isinstance(node, ast.Call):
            yield from self._call(node)
        elif isinstance(node, ast.Name):
            yield from self._name(node)
        elif isinstance(node, ast.Attribute):
            yield from _dunders(node.attr, node)
            if node.attr in NAME_GETTERS and id(node) not in self.called:
                yield _use("computed_attribute", node)
            if node.attr in FRAME_ATTRIBUTES:
                yield _use("introspection", node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if id(node) not in self.restoring:
                yield from _dunders(node.name, node)
        elif isinstance(node, ast.keyword) and node.arg:
            yield from _dunders(node.arg, node.value)
        elif isinstance(node, ast.alias):
            yield from _dunders(node.asname or node.name.split(".")[-1], node)
            if node.name in NAME_GETTERS and node.asname not in (None, node.name):
                yield _use("computed_attribute", node)  # renamed, its calls are not seen
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in self.docstrings:
                for name in _DUNDER.findall(node.value):
                    yield from _dunders(name, node)

    def _call(self, node: ast.Call) -> Iterator[CapabilityUse]:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in ATTRIBUTE_BUILTINS and isinstance(func, ast.Name):
            self.called.add(id(func))
            if len(node.args) < 2 or not _literal(node.args[1]):
                yield _use("computed_attribute", node)
        elif name in NAME_GETTERS:
            self.called.add(id(func))
            if not all(_literal(arg) for arg in node.args) or node.keywords:
                yield _use("computed_attribute", node)
        elif name == "type" and isinstance(func, ast.Name) and len(node.args) == 3:
            yield _use("computed_attribute", node)
        elif name in FILE_METHODS and isinstance(func, ast.Attribute):
            yield _use("files", node)
        elif name in FORMAT_CALLS and isinstance(func, ast.Attribute):
            if not _literal(func.value) or name in ("vformat", "get_field", "get_value"):
                yield _use("computed_attribute", node)

    def _name(self, node: ast.Name) -> Iterator[CapabilityUse]:
        yield from _dunders(node.id, node)
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id in self.bound_to:
            yield _use(self.bound_to[node.id], node)
        elif node.id in CAPABILITY_BUILTINS or (
            node.id in SHADOWED_BUILTINS and node.id not in self.locals
        ):
            yield _use(f"builtin:{node.id}", node)
        elif node.id in (ATTRIBUTE_BUILTINS | NAME_GETTERS) and id(node) not in self.called:
            if node.id not in self.locals:
                yield _use("computed_attribute", node)


def _hash_beside_eq(tree: ast.Module) -> FrozenSet[int]:
    """Ids of ``__hash__`` methods of classes that define ``__eq__``: defining ``__eq__`` sets
    ``__hash__`` to None, and a fix that makes such objects hashable again (isodate's
    ``Duration.__hash__``, 0.5.4) gives the class no new power over how it compares."""
    found: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods = {s.name: s for s in node.body if isinstance(s, ast.FunctionDef)}
            if "__eq__" in methods and "__hash__" in methods:
                found.add(id(methods["__hash__"]))
    return frozenset(found)


def _use(capability: str, node: ast.AST) -> CapabilityUse:
    first = getattr(node, "lineno", 1)
    return CapabilityUse(capability, first, getattr(node, "end_lineno", None) or first)


def _dunders(name: str, node: ast.AST) -> Iterator[CapabilityUse]:
    if _DUNDER.fullmatch(name) and name not in ORDINARY_DUNDERS:
        yield _use(f"dunder:{name}", node)


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _bound_names(tree: ast.Module) -> FrozenSet[str]:
    """Names the module binds anywhere (assignments, parameters, definitions, loop and
    ``as`` targets), so a parameter ``dir`` is not the builtin."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (*_DEFINITIONS, ast.ExceptHandler)) and node.name:
            names.add(node.name)
    return frozenset(names)


def _docstrings(tree: ast.Module) -> FrozenSet[int]:
    """Ids of the string constants that are docstrings (a module's, a class's, a function's)."""
    found: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return frozenset(found)


def allowed_names(values: Optional[List[str]]) -> FrozenSet[str]:
    """The capability names of a setting (``allow_capabilities``), stripped; empty ones
    dropped."""
    return frozenset(v.strip() for v in values or () if v.strip())
