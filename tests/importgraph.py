"""The import graph of a package tree, read with ``ast``: what ``test_architecture.py`` checks.

Every way a module can reach another one is an edge: ``import a.b``, ``from a
import b``, relative imports (resolved against the importing module), imports
inside functions or under ``TYPE_CHECKING`` (they are dependencies all the
same), and calls of ``importlib.import_module`` / ``__import__``. The checks
take a package root, so a test can hand them a synthetic tree with one bad
import and watch the rule fail.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

DYNAMIC_IMPORTS = ("import_module", "__import__")


@dataclass(frozen=True)
class Edge:
    """One import in ``source`` (a file relative to the package root) of the dotted module
    ``target``.

    ``how`` is ``absolute``, ``relative`` or ``dynamic``; ``target`` is None for a
    dynamic import whose module name is not a string literal.
    """

    source: str
    line: int
    target: Optional[str]
    how: str


def module_name(package: Path, path: Path) -> str:
    """``repairloop/patch/guards.py`` -> ``repairloop.patch.guards``; a package's ``__init__`` ->
    the package."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_files(package: Path, skip: Sequence[str] = ()) -> List[Path]:
    """The ``.py`` files below ``package``, sorted, without those under a directory named in
    ``skip``."""
    return [
        p
        for p in sorted(package.rglob("*.py"))
        if not set(p.relative_to(package).parts[:-1]) & set(skip)
    ]


def _resolve_relative(module: str, is_package: bool, level: int, name: Optional[str]) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def _dynamic_target(call: ast.Call) -> Tuple[bool, Optional[str]]:
    """(is a dynamic import, the literal module name or None)."""
    func = call.func
    called = (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else ""
    )
    if called not in DYNAMIC_IMPORTS:
        return False, None
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return True, call.args[0].value
    return True, None


def edges(package: Path, path: Path) -> Iterator[Edge]:
    """Every import of the file ``path`` in the package rooted at ``package``."""
    me = module_name(package, path)
    source = path.relative_to(package).as_posix()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(source, node.lineno, alias.name, "absolute")
        elif isinstance(node, ast.ImportFrom):
            how = "relative" if node.level else "absolute"
            base = (
                _resolve_relative(me, is_package, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for (
                alias
            ) in node.names:  # ``from pkg import sub`` may name a module: keep both, resolved later
                yield Edge(
                    source, node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base, how
                )
        elif isinstance(node, ast.Call):
            dynamic, target = _dynamic_target(node)
            if dynamic:
                yield Edge(source, node.lineno, target, "dynamic")


def known_module(modules: Set[str], dotted: str) -> Optional[str]:
    """The longest prefix of ``dotted`` that is a module of the tree (``a.b.name`` -> ``a.b``), or
    None."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def graph(package: Path, skip: Sequence[str] = ()) -> Dict[str, Set[str]]:
    """Module -> the package modules it imports (any import form), itself excluded."""
    files = package_files(package, skip)
    modules = {module_name(package, p) for p in files}
    out: Dict[str, Set[str]] = {}
    for path in files:
        me = module_name(package, path)
        targets = {known_module(modules, e.target) for e in edges(package, path) if e.target}
        out[me] = {t for t in targets if t and t != me}
    return out


def cycles(imports: Mapping[str, Set[str]]) -> List[List[str]]:
    """The import cycles: strongly connected components of two or more modules.

    Tarjan's algorithm, iterative; each cycle sorted, the list sorted.
    """
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def successors(node: str) -> List[str]:
        return sorted(t for t in imports.get(node, ()) if t in imports)

    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(successors(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(successors(child))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)
