"""Guard mutations from real fixes: a missing clause in a condition, a missing clamp.

Two of TBar's fix templates (Liu et al., ISSTA 2019: "range checker" and
"expression wrapping"; ManySStuBs4J's "more/less specific if", Karampatsis and
Sutton, MSR 2020), built only from what the function already says:

* ``add_clause``: a condition ``c`` becomes ``c or d`` / ``c and d``, where
  ``d`` is a comparison elsewhere in the function that reads a name ``c`` reads
  (nearest first), or, for ``x > n`` / ``x >= n``, the missing lower bound
  ``x < 0`` (``if x > n`` that should be ``if x > n or x < 0``);
* ``clamp``: a difference becomes ``max(0, a - b)``, and a value assigned or
  returned becomes ``min(v, len(s))`` for a ``len()`` call of the same
  statement or function (``end = n`` that should be ``min(n, len(s))``).
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set, Tuple

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutation import Mutation, alt_weight, wrap

MAX_CLAUSES = 3  # donor comparisons per condition (each tried with `or` and `and`)
MAX_BOUNDS = 2  # len() calls offered as an upper bound per value
_UPPER = (ast.Gt, ast.GtE)
_CLAMPED = ("min", "max")


def _names(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _scope_nodes(model: FileModel, node: ast.AST) -> List[ast.AST]:
    scope: ast.AST = model.function_of(node) or model.source.tree
    return list(ast.walk(scope))


def _donor_clauses(model: FileModel, cond: ast.expr) -> List[str]:
    """Comparisons of the function that read a name ``cond`` reads, nearest first, as text."""
    wanted = _names(cond) - {"self", "None", "True", "False"}
    inside = {id(n) for n in ast.walk(cond)}
    own = model.source.segment(cond)
    found: List[Tuple[int, int, str]] = []
    for node in _scope_nodes(model, cond):
        if not isinstance(node, ast.Compare) or id(node) in inside:
            continue
        if model.function_of(node) is not model.function_of(cond) or not (_names(node) & wanted):
            continue
        text = model.source.segment(node)
        if "\n" not in text and text not in own:
            found.append((abs(node.lineno - cond.lineno), node.lineno, text))
    unique: List[str] = []
    for _, _, text in sorted(found):
        if text not in unique:
            unique.append(text)
    return unique[:MAX_CLAUSES]


def _lower_bounds(cond: ast.expr) -> List[str]:
    """``x < 0`` for each ``x > n`` / ``x >= n`` of ``cond`` (``n`` not the literal 0)."""
    found = []
    for node in ast.walk(cond):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _UPPER):
            left, right = node.left, node.comparators[0]
            zero = isinstance(right, ast.Constant) and right.value == 0
            if isinstance(left, ast.Name) and not zero:
                found.append(f"{left.id} < 0")
    return found


def _condition(node: ast.AST) -> Optional[ast.expr]:
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        return node.test
    return None


def add_clause(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``if c:`` to ``if c or d:`` / ``if c and d:`` with ``d`` from the function's own
    comparisons, or the missing ``x < 0`` of ``x > n``."""
    cond = _condition(node)
    if cond is None:
        return
    start, end = model.source.span(cond)
    text = model.source.text[start:end]
    as_or = wrap(text, cond, 2)  # lambdas, ternaries and walruses need parentheses before `or`
    as_and = wrap(text, cond, 3)  # ... and an `or` too, before `and`
    choices: List[Tuple[str, float]] = [(f"{as_or} or {b}", 1.0) for b in _lower_bounds(cond)]
    for k, clause in enumerate(_donor_clauses(model, cond)):
        choices += [
            (f"{as_or} or {clause}", alt_weight(k)),
            (f"{as_and} and {clause}", alt_weight(k)),
        ]
    seen = set()
    for new, weight in choices:
        if new not in seen:
            seen.add(new)
            yield make(model, "add_clause", start, end, new, weight, f"`{text}` -> `{new}`")


def _value_site(model: FileModel, node: ast.AST) -> bool:
    """A value assigned or returned whole, or a branch of a ternary that is one."""
    parent = model.parent(node)
    if isinstance(parent, ast.IfExp) and node is not parent.test:
        return _value_site(model, parent)
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return)):
        return parent.value is node
    return False


def _len_bounds(model: FileModel, node: ast.expr) -> List[str]:
    """``len(...)`` calls of the statement, then of the function, not inside ``node``."""
    stmt = model.enclosing(node, (ast.stmt,))
    inside = {id(n) for n in ast.walk(node)}
    found: List[Tuple[int, int, str]] = []
    for scope_rank, scope in enumerate((stmt, model.function_of(node))):
        for n in ast.walk(scope) if scope is not None else ():
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
                if id(n) not in inside and len(n.args) == 1:
                    found.append((scope_rank, abs(n.lineno - node.lineno), model.source.segment(n)))
    unique: List[str] = []
    for _, _, text in sorted(found):
        if text not in unique:
            unique.append(text)
    return unique[:MAX_BOUNDS]


def clamp(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``a - b`` to ``max(0, a - b)``; an assigned or returned ``v`` to ``min(v, len(s))``."""
    if not isinstance(node, (ast.Name, ast.BinOp, ast.Attribute, ast.Subscript, ast.Call)):
        return
    if (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)) or model.is_callee(node):
        return
    parent = model.parent(node)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        if parent.func.id in _CLAMPED:
            return  # already clamped
    src = model.source
    start, end = src.span(node)
    text = src.text[start:end]
    choices: List[Tuple[str, float]] = []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        choices.append((f"max(0, {text})", 1.0))
    if _value_site(model, node):
        assert isinstance(node, ast.expr)
        choices += [
            (f"min({text}, {b})", alt_weight(k)) for k, b in enumerate(_len_bounds(model, node))
        ]
    for new, weight in choices:
        yield make(model, "clamp", start, end, new, weight, f"`{text}` -> `{new}`")
