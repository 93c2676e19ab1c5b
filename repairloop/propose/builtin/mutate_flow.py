"""Control-flow mutations from real fixes: a deleted ``break``, a last group never flushed, the
same edit on every line that reads the same.

* ``insert_break``: ``break`` after the last statement of an ``if`` inside a
  loop (``if found: result = x`` whose ``break`` was deleted, so the loop runs
  on and a later item overwrites the result, or ``while True`` never ends);
* ``flush_after_loop``: a ``for`` loop that hands a group on inside its body
  (``groups.append(current)``, ``out[key] = group``) and starts a new group
  there leaves the last group unhanded: a copy of that statement after the
  loop, plain and under ``if <group>:``;
* ``repeat_edit`` (``twin_mutations``): a one-line mutation also applied to
  every other line of the file that reads the same (a bug copied to both
  branches, to both ``width`` functions: wcwidth's ``min(n, len(pwcs))``, isodate's
  ``int(newyear)``, Markdown's ``isinstance(node, str)`` twice; the fix of
  twelve of the 71 real bugs of fixtures/realbugs* edits two or more places the
  same way, fixtures/bench/README.md).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, Iterator, List, Optional, Tuple

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutate_stmts import indent_of, line_offset, whole_lines
from repairloop.propose.builtin.mutation import FAMILY_PRIORS, Mutation

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_STOPS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, *_LOOPS)
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
_HAND_ON = frozenset({"append", "add", "extend", "appendleft"})
MAX_TWINS = 3  # other lines per edit
# The wide families (every other name in scope, every nearby statement) are not repeated: they
# would double the candidates of every line that has a twin, for a shape no real fix showed.
_NOT_REPEATED = frozenset(
    {"wrong_variable", "wrong_attribute", "insert_statement", "delete_statement"}
)
MIN_TWIN_CHARS = 12  # `return root` twice is a coincidence, not a copied bug


def _block_of(model: FileModel, stmt: ast.stmt) -> Tuple[Optional[ast.AST], List[ast.stmt]]:
    parent = model.parent(stmt)
    for field in ("body", "orelse"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return parent, block
    return parent, [stmt]


def insert_break(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """``break`` after ``stmt`` when it ends an ``if`` branch inside a loop with no exit of its
    own."""
    if not isinstance(stmt, _SIMPLE) or not whole_lines(model, stmt):
        return
    parent, block = _block_of(model, stmt)
    if not isinstance(parent, ast.If) or block[-1] is not stmt:
        return
    if not isinstance(model.enclosing(stmt, _STOPS), _LOOPS):
        return
    at = line_offset(model, (stmt.end_lineno or stmt.lineno) + 1)
    line = f"{indent_of(model, stmt)}break\n"
    yield make(model, "insert_break", at, at, line, 1.0, f"insert `break` after line {stmt.lineno}")


def _hands_on(stmt: ast.stmt) -> Optional[str]:
    """The group a statement hands on: ``X.append(g)`` -> ``g``, ``X[k] = g`` -> ``g``."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and call.func.attr in _HAND_ON and call.args:
            arg = call.args[0]
            return arg.id if isinstance(arg, ast.Name) else None
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript):
        return stmt.value.id if isinstance(stmt.value, ast.Name) else None
    return None


def _reset_in(loop: ast.AST, name: str) -> bool:
    """True when the loop body assigns ``name`` anew (``current = []``): a group restarted."""
    return any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        for n in ast.walk(loop)
    )


def flush_after_loop(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """A copy of the loop's hand-on statement after the ``for`` loop (plain, then guarded)."""
    loop = stmt if isinstance(stmt, ast.For) else model.enclosing(stmt, _STOPS)
    if not isinstance(loop, ast.For) or loop.orelse or not whole_lines(model, loop):
        return
    donors = [stmt] if stmt is not loop else [s for s in ast.walk(loop) if isinstance(s, _SIMPLE)]
    after = line_offset(model, (loop.end_lineno or loop.lineno) + 1)
    _, block = _block_of(model, loop)
    following = {model.source.segment(s) for s in block if s.lineno > loop.lineno}
    indent = indent_of(model, loop)
    for donor in donors:
        group = _hands_on(donor) if isinstance(donor, ast.stmt) else None
        if (
            group is None
            or model.enclosing(donor, _STOPS) is not loop
            or not _reset_in(loop, group)
        ):
            continue
        copy = model.source.segment(donor)
        if "\n" in copy or copy in following:
            continue
        plain, guarded = f"{indent}{copy}\n", f"{indent}if {group}:\n{indent}    {copy}\n"
        what = f"insert `{copy}` after the loop"
        yield make(model, "flush_after_loop", after, after, plain, 1.0, what)
        yield make(
            model, "flush_after_loop", after, after, guarded, 0.9, what + f" under `if {group}:`"
        )


def _normal(line: str) -> str:
    code = line.split("  #", 1)[0] if "  #" in line else line
    return code.strip()


def _lines_by_text(model: FileModel) -> Dict[str, List[int]]:
    key = ("twins", 0)
    if key not in model.memo:
        found: Dict[str, List[int]] = {}
        for number in range(1, len(model.source.line_starts) + 1):
            text = _normal(model.source.line_text(number))
            if len(text) >= MIN_TWIN_CHARS and not text.startswith("#"):
                found.setdefault(text, []).append(number)
        model.memo[key] = {t: ls for t, ls in found.items() if len(ls) > 1}
    return model.memo[key]  # type: ignore[return-value]


def twin_mutations(model: FileModel, found: List[Mutation]) -> List[Mutation]:
    """For each one-line mutation of a line whose code recurs in the file, the same edit on every
    such line at once (one span from the first to the last; prior x ``repeat_edit``'s)."""
    src = model.source
    out: List[Mutation] = []
    for m in found:
        line = m.line
        if m.operator in _NOT_REPEATED or src.line_of(m.end) != line or "\n" in m.replacement:
            continue
        text = src.line_text(line)
        lines = _lines_by_text(model).get(_normal(text), [])
        others = [n for n in lines if n != line][:MAX_TWINS]
        if not others:
            continue
        column = m.start - src.line_starts[line - 1] - (len(text) - len(text.lstrip()))
        edits = []
        for number in sorted([line, *others]):
            twin = src.line_text(number)
            at = src.line_starts[number - 1] + len(twin) - len(twin.lstrip()) + column
            if src.text[at : at + m.end - m.start] != src.text[m.start : m.end]:
                break
            edits.append((at, at + (m.end - m.start)))
        if len(edits) != len(others) + 1:
            continue
        first, last = edits[0][0], edits[-1][1]
        pieces, cursor = [], first
        for a, b in edits:
            pieces += [src.text[cursor:a], m.replacement]
            cursor = b
        prior = round(m.prior * FAMILY_PRIORS["repeat_edit"], 6)
        what = f"{m.description} on lines {', '.join(str(n) for n in sorted([line, *others]))}"
        # ``line`` stays the suspicious line: the search weighs an edit by who runs that line.
        new = "".join(pieces)
        out.append(
            replace(m, operator="repeat_edit", start=first, end=last, replacement=new, prior=prior)
        )
        out[-1] = replace(out[-1], description=what)
    return out
