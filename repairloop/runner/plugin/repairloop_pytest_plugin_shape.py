"""How a candidate's module differs from the one the warm server loaded (part of the pytest plugin).

A forked child can represent two kinds of change exactly
(``repairloop_pytest_plugin_reload``): a function or method whose body alone
changed (the live function gets the new code), and a module-level assignment
to plain names whose value alone changed (``DAYS = [31, 28, ...]``: the child
executes the new statement in the module's namespace), provided no code that
ran while the suite was imported read those names: nothing at module level in
any file of the tree (a default, a decorator, a class body, another constant,
``from m import NAME``, a parametrize list) and no function that ran then.
Anything else is a different module: the caller falls back to a fresh process.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import ast
import os
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

Place = Tuple[
    int, str
]  # (first line of a definition, its decorators included; its name) in the old source


class Difference:
    """What changed in a module, when a child can represent it.

    ``bodies``: where the functions and methods whose body alone changed start
    in the old source; ``rebinds``: the new module-level assignments whose
    value alone changed, each with the names it binds.
    """

    def __init__(self) -> None:
        self.bodies: Set[Place] = set()
        self.rebinds: List[Tuple[ast.Assign, FrozenSet[str]]] = []

    @property
    def names(self) -> FrozenSet[str]:
        """Every name a rebind binds."""
        return frozenset(n for _, names in self.rebinds for n in names)


def difference(old: ast.Module, new: ast.Module) -> Optional[Difference]:
    """The ``Difference`` from ``old`` to ``new``; None when anything else changed."""
    found = Difference()
    return found if _same_shape(old.body, new.body, found, depth=0) else None


def _same_shape(old: List[ast.stmt], new: List[ast.stmt], found: Difference, depth: int) -> bool:
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if type(a) is not type(b):
            return False
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _dump(a, body=False) != _dump(b, body=False):
                return False
            if _dump_all(a.body) != _dump_all(getattr(b, "body", [])):
                found.bodies.add((min([a.lineno] + [d.lineno for d in a.decorator_list]), a.name))
        elif isinstance(a, ast.ClassDef) and isinstance(b, ast.ClassDef) and depth == 0:
            if _dump(a, body=False) != _dump(b, body=False) or not _same_shape(
                a.body, b.body, found, depth + 1
            ):
                return False
        elif ast.dump(a) != ast.dump(b):
            names = _rebound(a, b) if depth == 0 else None
            if names is None:
                return False
            assert isinstance(b, ast.Assign)
            found.rebinds.append((b, names))
    return True


def _rebound(a: ast.stmt, b: ast.stmt) -> Optional[FrozenSet[str]]:
    """The names ``a = value`` binds when ``b`` is the same assignment to plain names with another
    value."""
    if not (isinstance(a, ast.Assign) and isinstance(b, ast.Assign)):
        return None
    if _dump_all(a.targets) != _dump_all(b.targets) or not all(
        isinstance(t, ast.Name) for t in a.targets
    ):
        return None
    return frozenset(t.id for t in a.targets if isinstance(t, ast.Name))


def import_time_reads(tree: ast.Module) -> Set[str]:
    """Names the module's import-time code reads: loaded names, attribute names, names imported with
    ``from m import`` and strings (``getattr(m, "DAYS")``), everywhere outside function bodies
    (defaults, decorators, annotations and class bodies included; a lambda's body excluded)."""
    found: Set[str] = set()
    stack: List[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack += _evaluated_at_definition(node)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)  # getattr(m, "DAYS"), vars(m)["DAYS"]
        elif isinstance(node, ast.ImportFrom):
            found.update(alias.name for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return found


def first_reader(files: List[str], names: FrozenSet[str], also: Dict[str, ast.Module]) -> str:
    """The base name of the first of ``files`` (paths, read now) whose import-time code reads one of
    ``names`` (``also`` adds an earlier tree of a file: the module's old source), or ""."""
    for path in files:
        try:
            with open(path, "rb") as handle:
                text = handle.read()
            if not any(n.encode("utf-8") in text for n in names) and path not in also:
                continue  # a file that never spells the names cannot read them (and is not parsed)
            reads = import_time_reads(ast.parse(text))
        except (OSError, SyntaxError, ValueError):
            return os.path.basename(path) + " (which cannot be read or parsed)"
        if path in also:
            reads |= import_time_reads(also[path])
        if names & reads:
            return os.path.basename(path)
    return ""


def _evaluated_at_definition(node: Any) -> List[ast.AST]:
    """What a ``def`` or ``lambda`` evaluates when it is defined: decorators, defaults,
    annotations."""
    args = node.args
    parts: List[Any] = list(getattr(node, "decorator_list", [])) + list(args.defaults)
    parts += [d for d in args.kw_defaults if d is not None]
    for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if arg is not None and arg.annotation is not None:
            parts.append(arg.annotation)
    if getattr(node, "returns", None) is not None:
        parts.append(node.returns)
    return parts


def _dump(node: ast.AST, *, body: bool) -> str:
    fields = {k: v for k, v in ast.iter_fields(node) if body or k != "body"}
    return repr(
        sorted(
            (
                k,
                _dump_all(v)
                if isinstance(v, list)
                else ast.dump(v)
                if isinstance(v, ast.AST)
                else repr(v),
            )
            for k, v in fields.items()
        )
    )


def _dump_all(nodes: List[Any]) -> str:
    return "\n".join(ast.dump(n) if isinstance(n, ast.AST) else repr(n) for n in nodes)
