"""Generate every mutation of the statement that owns a suspicious line.

A line maps to its innermost statement. For a simple statement every
expression in it is a mutation site; for a compound statement (``if``,
``while``, ``for``, ``with``) only its header is, since the body's lines are
statements of their own with their own suspiciousness.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable, Iterator, List, Set, Tuple

from repairloop.propose.builtin.edits import Source
from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_calls import method_to_function, wrap_call
from repairloop.propose.builtin.mutate_exprs import (
    negate_condition,
    off_by_one,
    sub_expression,
    swap_arguments,
    swap_operands,
)
from repairloop.propose.builtin.mutate_flow import flush_after_loop, insert_break, twin_mutations
from repairloop.propose.builtin.mutate_guards import add_clause, clamp
from repairloop.propose.builtin.mutate_inserts import insert_update
from repairloop.propose.builtin.mutate_names import wrong_attribute, wrong_function, wrong_variable
from repairloop.propose.builtin.mutate_ops import (
    binary_operator,
    boolean_operator,
    comparison,
    literal,
    literal_off_by_one,
    unary_operator,
)
from repairloop.propose.builtin.mutate_refs import constant_value, self_callable, wrong_constant
from repairloop.propose.builtin.mutate_stmts import delete_statement, insert_statement
from repairloop.propose.builtin.mutation import Mutation

Operator = Callable[[FileModel, ast.AST], Iterator[Mutation]]

EXPRESSION_OPERATORS: Tuple[Operator, ...] = (
    comparison,
    binary_operator,
    boolean_operator,
    unary_operator,
    literal_off_by_one,
    literal,
    off_by_one,
    negate_condition,
    swap_operands,
    swap_arguments,
    sub_expression,
    wrong_variable,
    wrong_attribute,
    wrong_function,
    method_to_function,
    wrap_call,
    add_clause,
    self_callable,
    clamp,
    constant_value,
    wrong_constant,
)
STATEMENT_OPERATORS: Tuple[Operator, ...] = (
    insert_update,
    delete_statement,
    insert_statement,
    insert_break,
    flush_after_loop,
)

_HEADERS = {
    ast.If: ("test",),
    ast.While: ("test",),
    ast.For: ("target", "iter"),
    ast.AsyncFor: ("target", "iter"),
    ast.With: ("items",),
    ast.AsyncWith: ("items",),
}
_SKIPPED = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Try,
    ast.Global,
    ast.Nonlocal,
    ast.Pass,
)


def _walk_all(roots: List[ast.AST]) -> List[ast.AST]:
    nodes: List[ast.AST] = []
    for root in roots:
        nodes.extend(ast.walk(root))
    return nodes


def mutation_sites(stmt: ast.stmt) -> List[ast.AST]:
    """The nodes of ``stmt`` that expression operators look at, in a stable order."""
    fields = _HEADERS.get(type(stmt))
    if fields is None:
        nodes = list(ast.walk(stmt))
    else:
        roots: List[ast.AST] = []
        for name in fields:
            value = getattr(stmt, name)
            roots.extend(value if isinstance(value, list) else [value])
        nodes = [stmt, *_walk_all(roots)]
    # Contexts, operator tokens and argument lists carry no source span of their own.
    return [n for n in nodes if isinstance(n, (ast.expr, ast.stmt, ast.comprehension))]


def mutations_at(model: FileModel, line: int) -> List[Mutation]:
    """Every mutation of the statement that owns ``line`` (empty for defs, imports, blanks)."""
    stmt = model.statement_at(line)
    if stmt is None or isinstance(stmt, _SKIPPED):
        return []
    found: List[Mutation] = []
    for node in mutation_sites(stmt):
        for operator in EXPRESSION_OPERATORS:
            found.extend(operator(model, node))
    for operator in STATEMENT_OPERATORS:
        found.extend(operator(model, stmt))
    found = _boost_smells(model, stmt, found)
    found += twin_mutations(model, found)
    seen: Set[Tuple[int, int, str]] = set()
    unique = []
    for mutation in found:  # two operators may propose the same edit: keep the first
        key = (mutation.start, mutation.end, mutation.replacement)
        if (
            key not in seen
            and _changes_text(model.source, mutation)
            and not _self_assignment(model, stmt, mutation)
        ):
            seen.add(key)
            unique.append(mutation)
    return unique


def _identical_operands(node: ast.AST) -> bool:
    """``f(x) - f(x)``, ``a == a``, ``p and p``: an expression that is almost always a slip."""
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.BitXor)
    ):
        return ast.dump(node.left) == ast.dump(node.right)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return ast.dump(node.left) == ast.dump(node.comparators[0])
    if isinstance(node, ast.BoolOp):
        dumps = [ast.dump(v) for v in node.values]
        return len(set(dumps)) < len(dumps)
    return False


def _boost_smells(model: FileModel, stmt: ast.stmt, found: List[Mutation]) -> List[Mutation]:
    """Double the prior (at most 1.0) of mutations inside an expression with identical operands."""
    spans = [model.source.span(n) for n in mutation_sites(stmt) if _identical_operands(n)]
    if not spans:
        return found
    return [
        replace(m, prior=min(1.0, 2 * m.prior))
        if any(a <= m.start and m.end <= b for a, b in spans)
        else m
        for m in found
    ]


def _self_assignment(model: FileModel, stmt: ast.stmt, mutation: Mutation) -> bool:
    """``x = x``: a roundabout ``delete_statement``, which says the same more cleanly."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0]
    if not isinstance(target, ast.Name):
        return False
    return (
        model.source.span(stmt.value) == (mutation.start, mutation.end)
        and mutation.replacement == target.id
    )


def _changes_text(source: Source, mutation: Mutation) -> bool:
    return source.text[mutation.start : mutation.end] != mutation.replacement


def mutate_source(path: str, text: str, line: int) -> List[Mutation]:
    """Convenience for one file and one line: parse ``text`` and mutate ``line``.

    Raises SyntaxError when ``text`` does not parse.
    """
    return mutations_at(FileModel(Source(path, text)), line)
