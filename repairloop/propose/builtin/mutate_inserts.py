"""Insert a missing update: a statement the code around a suspicious line says is missing.

``insert_statement`` copies nearby statements; this family writes the one a
smell names, modelled on the code itself:

* a ``while`` loop whose condition reads a variable the body never changes
  (a deleted ``i += 1``): ``v += 1`` / ``v -= 1`` at the end of the body, the
  direction read from the comparison, or the form the function already uses
  for ``v`` elsewhere (``n //= 10``);
* a membership guard whose set is never filled (a deleted ``seen.add(x)``):
  ``S.add(X)`` first thing under ``if X not in S:``, or after
  ``if X in S: continue``;
* a condition inside a loop that reads a counter the loop never updates
  while the function updates it elsewhere (Kahn's ``indegree[v] += 1`` with the
  ``indegree[m] -= 1`` deleted): the counterpart update, opposite operator
  first, just before the condition.

A missing statement is the second commonest one-line bug of small programs
after a wrong operator (QuixBugs, Lin et al. 2017); without this family it
needs two edits (a copy, then an operator change) or is never generated.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set, Tuple

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutate_stmts import ENDS_FLOW, indent_of, line_offset, whole_lines
from repairloop.propose.builtin.mutation import Mutation

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_MUTATORS = frozenset(
    {
        "add",
        "append",
        "appendleft",
        "extend",
        "update",
        "insert",
        "setdefault",
        "pop",
        "popleft",
        "remove",
        "discard",
        "clear",
        "sort",
        "reverse",
    }
)
_INCREASING = (ast.Lt, ast.LtE, ast.NotEq)
_DECREASING = (ast.Gt, ast.GtE)
_EXITS = (ast.Break, ast.Return, ast.Raise)
# Weight of an insertion where the smell is certain (a loop that cannot end, a guard set never
# filled): such code is wrong whatever the tests say, so its fix goes before most others.
SMELL = 1.6
_MIRROR = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
_FLIP = {ast.Add: ("-=", "+="), ast.Sub: ("+=", "-=")}


def _walk_body(body: List[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body``, not entering nested function or class definitions."""
    stack: List[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _DEFS):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _changed_in(model: FileModel, body: List[ast.stmt]) -> Set[str]:
    """Source texts the body rebinds or mutates: assignment targets, their bases, mutated
    receivers."""
    src = model.source
    changed: Set[str] = set()
    for node in _walk_body(body):
        if isinstance(node, (ast.Name, ast.Subscript, ast.Attribute)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            changed.add(src.segment(node))
            base: ast.expr = node
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
                changed.add(src.segment(base))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            changed.add(src.segment(node.func.value))
    return changed


def _insert(
    model: FileModel, offset: int, indent: str, code: str, weight: float, what: str
) -> Mutation:
    text = model.source.text
    line = f"{indent}{code}\n"
    if offset >= len(text) and not text.endswith("\n"):
        line = "\n" + line.rstrip("\n")
    return make(model, "insert_update", offset, offset, line, weight, what)


def _updates_of(model: FileModel, fn: Optional[ast.AST], base: str) -> List[ast.AugAssign]:
    """Augmented assignments in the function to ``base`` or to ``base[...]``, in source order."""
    scope = fn if fn is not None else model.source.tree
    found = []
    for node in ast.walk(scope):
        if isinstance(node, ast.AugAssign) and model.function_of(node) is fn:
            target = node.target
            name = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(name, ast.Name) and name.id == base:
                found.append(node)
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    return found


def _direction(test: ast.AST, name: str) -> Tuple[Optional[str], float]:
    """First update to try for ``name`` in a loop test (``+=``/``-=``) and how sure we are:
    ``i < n`` counts up, ``j >= 0`` counts down; sure when the other side is a constant or a
    call."""
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        op = type(node.ops[0])
        if isinstance(node.left, ast.Name) and node.left.id == name:
            other = node.comparators[0]
        elif isinstance(node.comparators[0], ast.Name) and node.comparators[0].id == name:
            other, op = node.left, _MIRROR.get(op, op)
        else:
            continue
        sure = 1.0 if isinstance(other, (ast.Constant, ast.Call, ast.UnaryOp)) else 0.6
        if issubclass(op, _INCREASING):
            return "+=", sure
        if issubclass(op, _DECREASING):
            return "-=", sure
    return None, 0.0


def _loop_end(model: FileModel, loop: ast.While) -> Optional[Tuple[int, str]]:
    """Where a statement appended to the loop body goes: (offset, indent), before a final jump."""
    last = loop.body[-1]
    if not all(whole_lines(model, s) for s in loop.body):
        return None
    if isinstance(last, ENDS_FLOW):
        return line_offset(model, last.lineno), indent_of(model, last)
    return line_offset(model, (last.end_lineno or last.lineno) + 1), indent_of(model, loop.body[0])


def loop_update(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """``v += 1`` / ``v -= 1`` (or the function's own update of ``v``) for a stalled ``while``."""
    loop = stmt if isinstance(stmt, ast.While) else model.enclosing(stmt, (ast.While,) + _DEFS)
    if not isinstance(loop, ast.While):
        return
    place = _loop_end(model, loop)
    if place is None:
        return
    changed = _changed_in(model, loop.body)
    fn = model.function_of(loop)
    local = set(model.local_vars(loop))
    names = sorted(
        {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name) and n.id in local} - changed
    )
    # With no way out of the body, the loop can only end by its condition: certainly stalled.
    stalled = SMELL if not any(isinstance(n, _EXITS) for n in _walk_body(loop.body)) else 1.0
    for name in names:
        first, sure = _direction(loop.test, name)
        forms = [model.source.segment(u) for u in _updates_of(model, fn, name)]
        if first is not None:
            second = "-=" if first == "+=" else "+="
            forms += [f"{name} {first} 1", f"{name} {second} 1"]
        for k, code in enumerate(dict.fromkeys(forms)):
            weight = stalled * (sure or 0.6) * (1.0 if k == 0 else 0.7)
            yield _insert(model, *place, code, weight, f"insert `{code}` at the end of the loop")


def _membership(test: ast.AST) -> Optional[Tuple[ast.AST, str, bool]]:
    """``X not in S`` / ``X in S`` with ``S`` a plain name: (X, S, negated)."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Name)
    ):
        if isinstance(test.ops[0], (ast.In, ast.NotIn)):
            return test.left, test.comparators[0].id, isinstance(test.ops[0], ast.NotIn)
    return None


def _fill_method(model: FileModel, fn: Optional[ast.AST], name: str) -> Optional[str]:
    """``add`` for a set (or an unknown parameter), ``append`` for a list, None for anything
    else."""
    kinds = set()
    for node in ast.walk(fn if fn is not None else model.source.tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = node.value
            if isinstance(value, (ast.Set, ast.SetComp)) or _called(value, "set"):
                kinds.add("add")
            elif isinstance(value, (ast.List, ast.ListComp)) or _called(value, "list"):
                kinds.add("append")
            else:
                kinds.add("")
    if not kinds:
        return "add"  # a parameter: a set is the usual "seen" collection
    if len(kinds) > 1:
        return None
    return kinds.pop() or None


def _filled(body: List[ast.stmt], name: str) -> bool:
    """True when ``body`` adds to the collection ``name``: a mutating method, an item store,
    ``|=``."""
    for node in _walk_body(body):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            receiver = node.func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            receiver = node.value
        elif isinstance(node, ast.AugAssign):
            receiver = node.target
        else:
            continue
        if isinstance(receiver, ast.Name) and receiver.id == name:
            return True
    return False


def _called(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def seen_update(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """``S.add(X)`` under ``if X not in S:`` (or after ``if X in S: continue``) when nothing fills
    S."""
    fn = model.function_of(stmt)
    guard: Optional[ast.AST] = (
        stmt if isinstance(stmt, ast.If) else model.enclosing(stmt, (ast.If,) + _DEFS)
    )
    while isinstance(guard, ast.If):
        found = _membership(guard.test)
        if found is not None:
            yield from _seen_insertions(model, fn, guard, *found)
        guard = model.enclosing(guard, (ast.If,) + _DEFS)


def _seen_insertions(
    model: FileModel, fn: Optional[ast.AST], guard: ast.If, item: ast.AST, name: str, negated: bool
) -> Iterator[Mutation]:
    src = model.source
    method = _fill_method(model, fn, name)
    if method is None or any(isinstance(n, (ast.Call, ast.Lambda)) for n in ast.walk(item)):
        return
    body = fn.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else src.tree.body
    if _filled(body, name):
        return  # S is filled somewhere (perhaps another way): not this smell
    code = f"{name}.{method}({src.segment(item)})"
    if negated and whole_lines(model, guard.body[0]):
        offset = line_offset(model, guard.body[0].lineno)
        yield _insert(
            model,
            offset,
            indent_of(model, guard.body[0]),
            code,
            SMELL,
            f"insert `{code}` under the guard",
        )
    elif (
        not negated
        and isinstance(guard.body[-1], ENDS_FLOW)
        and not guard.orelse
        and whole_lines(model, guard)
    ):
        offset = line_offset(model, (guard.end_lineno or guard.lineno) + 1)
        yield _insert(
            model, offset, indent_of(model, guard), code, SMELL, f"insert `{code}` after the guard"
        )


def counter_update(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """Before a condition in a loop, the counterpart of an update the function makes elsewhere."""
    if not isinstance(stmt, (ast.If, ast.While)) or not whole_lines(model, stmt):
        return
    loop = model.enclosing(stmt, _LOOPS + _DEFS)
    if not isinstance(loop, _LOOPS):
        return
    src = model.source
    fn = model.function_of(stmt)
    changed = _changed_in(model, loop.body)
    seen: Set[str] = set()
    for node in ast.walk(stmt.test):
        target = node if isinstance(node, ast.Subscript) else None
        if (
            target is None
            or not isinstance(target.value, ast.Name)
            or src.segment(target) in changed
        ):
            continue
        text = src.segment(target)
        for update in _updates_of(model, fn, target.value.id):
            flips = _FLIP.get(type(update.op))
            if flips is None or not isinstance(update.target, ast.Subscript):
                continue
            value = src.segment(update.value)
            for k, op in enumerate(flips):
                code = f"{text} {op} {value}"
                if code not in seen:
                    seen.add(code)
                    offset = line_offset(model, stmt.lineno)
                    yield _insert(
                        model,
                        offset,
                        indent_of(model, stmt),
                        code,
                        1.0 if k == 0 else 0.6,
                        f"insert `{code}` before the condition",
                    )


def insert_update(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """All three insertions of this family for the statement that owns a suspicious line."""
    yield from loop_update(model, stmt)
    yield from seen_update(model, stmt)
    yield from counter_update(model, stmt)
