"""Facts about one parsed file that the mutation operators need.

Which statement owns a line, which variables are visible at a node (its
function's parameters and assigned names, enclosing functions', the module's),
which functions the file defines with which positional arity, and which
attribute names the file uses on which receiver. Computed once per file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from repairloop.propose.builtin.edits import Source

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _stored_names(body: List[ast.stmt]) -> Set[str]:
    """Names bound by assignment, loop or ``with`` targets in ``body``, not inside nested defs."""
    names: Set[str] = set()
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFS):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _arg_names(args: ast.arguments) -> Set[str]:
    every = args.posonlyargs + args.args + args.kwonlyargs
    names = {a.arg for a in every}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return names


@dataclass(frozen=True)
class Signature:
    """Positional arity of a function the file defines: ``min_pos``..``max_pos`` arguments."""

    name: str
    min_pos: int
    max_pos: Optional[int]  # None with *args
    params: Tuple[str, ...]

    def accepts(self, call: ast.Call) -> bool:
        """True when ``call``'s positional count and keyword names fit this signature."""
        if any(isinstance(a, ast.Starred) for a in call.args):
            return False
        npos = len(call.args)
        if npos < self.min_pos or (self.max_pos is not None and npos > self.max_pos):
            return False
        return all(k.arg in self.params for k in call.keywords if k.arg is not None)


def _signature(fn: ast.AST, method: bool) -> Signature:
    assert isinstance(fn, _FUNCS)
    pos = fn.args.posonlyargs + fn.args.args
    skip = 1 if method and pos else 0  # self / cls
    required = len(pos) - len(fn.args.defaults)
    max_pos = None if fn.args.vararg else len(pos) - skip
    params = tuple(a.arg for a in pos[skip:] + fn.args.kwonlyargs)
    return Signature(fn.name, max(0, required - skip), max_pos, params)


class FileModel:
    """A parsed file plus its scope facts. ``source`` is the ``Source``; raises nothing."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.parents: Dict[int, ast.AST] = {}
        self._stmt_by_line: Dict[int, ast.stmt] = {}
        self.functions: Dict[str, Signature] = {}
        self.methods: Dict[str, Dict[str, Signature]] = {}  # class -> name -> signature
        self.attributes: Dict[str, Set[str]] = {}  # receiver source text -> attribute names
        self._scope_cache: Dict[int, Tuple[str, ...]] = {}
        # Per-function facts operators derive once (keyed by operator's name and id(function)).
        self.memo: Dict[Tuple[str, int], object] = {}
        for node in ast.walk(source.tree):  # breadth first: inner statements come later
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.stmt):
                for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                    self._stmt_by_line[line] = node
            if isinstance(node, ast.Attribute) and not self._is_callee(node):
                receiver = source.segment(node.value)
                self.attributes.setdefault(receiver, set()).add(node.attr)
        self._collect_signatures()
        self.module_vars: Tuple[str, ...] = tuple(sorted(_stored_names(source.tree.body)))

    def _is_callee(self, node: ast.AST) -> bool:
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Call) and parent.func is node

    def _collect_signatures(self) -> None:
        for stmt in self.source.tree.body:
            if isinstance(stmt, _FUNCS):
                self.functions[stmt.name] = _signature(stmt, method=False)
            elif isinstance(stmt, ast.ClassDef):
                self.methods[stmt.name] = {
                    s.name: _signature(s, method=True) for s in stmt.body if isinstance(s, _FUNCS)
                }

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        """The node's parent in the tree (None for the module)."""
        return self.parents.get(id(node))

    def is_callee(self, node: ast.AST) -> bool:
        """True when ``node`` is the function part of a call (``f`` in ``f(x)``)."""
        return self._is_callee(node)

    def statement_at(self, line: int) -> Optional[ast.stmt]:
        """The innermost statement whose lines include ``line`` (None outside any)."""
        return self._stmt_by_line.get(line)

    def enclosing(self, node: ast.AST, kinds: Tuple[type, ...]) -> Optional[ast.AST]:
        """The nearest ancestor of ``node`` that is one of ``kinds``."""
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, kinds):
            current = self.parents.get(id(current))
        return current

    def function_of(self, node: ast.AST) -> Optional[ast.AST]:
        """The innermost function definition around ``node`` (None at module level)."""
        return self.enclosing(node, _FUNCS)

    def class_of(self, node: ast.AST) -> Optional[ast.ClassDef]:
        """The class whose method contains ``node``, if any."""
        found = self.enclosing(node, (ast.ClassDef,))
        return found if isinstance(found, ast.ClassDef) else None

    def local_vars(self, node: ast.AST) -> Tuple[str, ...]:
        """Variables of the functions around ``node`` (parameters, assigned names), sorted."""
        fn = self.function_of(node)
        if fn is None:
            return ()
        key = id(fn)
        if key not in self._scope_cache:
            names: Set[str] = set()
            current: Optional[ast.AST] = fn
            while current is not None:
                assert isinstance(current, _FUNCS)
                names |= _arg_names(current.args) | _stored_names(current.body)
                current = self.function_of(current)
            names -= {"self", "cls"}
            self._scope_cache[key] = tuple(sorted(names))
        return self._scope_cache[key]
