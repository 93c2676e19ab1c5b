"""Statement mutations: delete a statement, insert a copy of a nearby statement.

Edits work on whole lines and keep the target's indentation. A statement that
shares a line with another (``a = 1; b = 2``) is left alone.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Set

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutation import Mutation, alt_weight

# Not ast.Assert: deleting an assertion is a candidate the guards refuse anywhere (patch/tamper.py).
_SIMPLE = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Expr,
    ast.Return,
    ast.Break,
    ast.Continue,
    ast.Raise,
    ast.Delete,
)
_SMALL_BLOCKS = (ast.If, ast.For, ast.While)
_DONORS = (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.Break, ast.Continue)
ENDS_FLOW = (ast.Return, ast.Break, ast.Continue, ast.Raise)
MAX_BLOCK_LINES = 4  # a compound statement longer than this is not "one statement"
MAX_DONORS = 6


def whole_lines(model: FileModel, stmt: ast.stmt) -> bool:
    """True when ``stmt`` alone fills its lines (only indentation before, a comment after)."""
    src = model.source
    start, end = src.span(stmt)
    before = src.text[src.line_starts[stmt.lineno - 1] : start]
    after = src.text[end : line_offset(model, (stmt.end_lineno or stmt.lineno) + 1)]
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def line_offset(model: FileModel, line: int) -> int:
    """Character offset where 1-based ``line`` starts (the end of the text past the last line)."""
    starts = model.source.line_starts
    return starts[line - 1] if line <= len(starts) else len(model.source.text)


def _siblings(model: FileModel, stmt: ast.stmt) -> List[ast.stmt]:
    parent = model.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return [stmt]


def _is_docstring(model: FileModel, stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
        return False
    return isinstance(stmt.value.value, str) and _siblings(model, stmt)[0] is stmt


def indent_of(model: FileModel, stmt: ast.stmt) -> str:
    """The leading whitespace of the first line of ``stmt``."""
    text = model.source.line_text(stmt.lineno)
    return text[: len(text) - len(text.lstrip())]


def delete_statement(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """Delete a simple statement (or a short ``if``/``for``/``while``); ``pass`` if it was alone."""
    if not isinstance(stmt, _SIMPLE + _SMALL_BLOCKS) or _is_docstring(model, stmt):
        return
    last = stmt.end_lineno or stmt.lineno
    if isinstance(stmt, _SMALL_BLOCKS) and last - stmt.lineno + 1 > MAX_BLOCK_LINES:
        return
    if not whole_lines(model, stmt):
        return
    start, end = line_offset(model, stmt.lineno), line_offset(model, last + 1)
    alone = len(_siblings(model, stmt)) == 1
    replacement = f"{indent_of(model, stmt)}pass\n" if alone else ""
    first = model.source.line_text(stmt.lineno).strip()
    yield make(model, "delete_statement", start, end, replacement, 1.0, f"delete `{first}`")


def _donors(model: FileModel, stmt: ast.stmt) -> List[ast.stmt]:
    """Single-line simple statements of the same function (or module), nearest first."""
    scope: ast.AST = model.function_of(stmt) or model.source.tree
    found = []
    for node in ast.walk(scope):
        if isinstance(node, _DONORS) and node is not stmt and node.lineno == node.end_lineno:
            if model.function_of(node) is model.function_of(stmt) and not _is_docstring(
                model, node
            ):
                found.append(node)
    found.sort(key=lambda n: (abs(n.lineno - stmt.lineno), n.lineno, n.col_offset))
    unique: List[ast.stmt] = []
    texts = {model.source.segment(stmt)}
    for node in found:
        text = model.source.segment(node)
        if text not in texts and whole_lines(model, node):
            texts.add(text)
            unique.append(node)
    return unique[:MAX_DONORS]


def _loop_condition_names(model: FileModel, stmt: ast.stmt) -> Set[str]:
    """Names read by the tests of the ``while`` loops around ``stmt``."""
    names: Set[str] = set()
    loop = model.enclosing(stmt, (ast.While,))
    while isinstance(loop, ast.While):
        names |= {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)}
        loop = model.enclosing(loop, (ast.While,))
    return names


def _donor_weight(donor: ast.stmt, rank: int, loop_names: Set[str]) -> float:
    """Nearest donors first; a donor that updates a loop's condition variable counts double:
    a loop whose condition is never updated in it (a missing ``i += 1`` or ``done = True``)
    is the commonest missing statement."""
    targets = donor.targets if isinstance(donor, ast.Assign) else [getattr(donor, "target", None)]
    updates = any(isinstance(t, ast.Name) and t.id in loop_names for t in targets)
    return (2.0 if updates else 1.0) * alt_weight(rank)


def insert_statement(model: FileModel, stmt: ast.AST) -> Iterator[Mutation]:
    """Insert a copy of a nearby statement just before or just after ``stmt``."""
    if not isinstance(stmt, _SIMPLE + _SMALL_BLOCKS) or not whole_lines(model, stmt):
        return
    indent = indent_of(model, stmt)
    text = model.source.text
    before = line_offset(model, stmt.lineno)
    after = line_offset(model, (stmt.end_lineno or stmt.lineno) + 1)
    loop_names = _loop_condition_names(model, stmt)
    for rank, donor in enumerate(_donors(model, stmt)):
        copy = model.source.segment(donor)
        line = f"{indent}{copy}\n"
        weight = _donor_weight(donor, rank, loop_names)
        yield make(
            model, "insert_statement", before, before, line, weight, f"insert `{copy}` before"
        )
        if isinstance(stmt, ENDS_FLOW):
            continue  # code after return/break/continue/raise would never run
        tail = line if after < len(text) or text.endswith("\n") else "\n" + line.rstrip("\n")
        weight *= 0.9 * (2.0 if _resets_what_was_used(donor, stmt) else 1.0)
        yield make(model, "insert_statement", after, after, tail, weight, f"insert `{copy}` after")


def _resets_what_was_used(donor: ast.stmt, stmt: ast.stmt) -> bool:
    """``x = ...`` right after a statement that hands ``x`` on (``lines.append(line)``,
    ``out.append(f"{count}{ch}")``): use-then-reset, whose reset is a common missing line."""
    if not isinstance(donor, ast.Assign) or isinstance(stmt, (ast.Assign, ast.AugAssign)):
        return False
    assigned = {t.id for t in donor.targets if isinstance(t, ast.Name)}
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in assigned
        for n in ast.walk(stmt)
    )
