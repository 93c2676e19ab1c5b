"""Expression-shape mutations: +-1 on an index or bound, negation, swaps, sub-expressions.

Each function takes a ``FileModel`` and one expression node and yields
``Mutation`` values that replace (or insert at) the span of that node only.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import BIN_SYMBOLS, CMP_SYMBOLS, make, operator_token
from repairloop.propose.builtin.mutation import PREC_ADD, PREC_NOT, Mutation, precedence, wrap

_NOT_NUMERIC = (
    ast.Constant,
    ast.Compare,
    ast.BoolOp,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.DictComp,
    ast.SetComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.JoinedStr,
    ast.Starred,
    ast.Slice,
)
_NUMERIC_CALLS = frozenset({"len", "sum", "max", "min", "abs", "int", "round", "ord", "pow"})
_WRAPPERS = frozenset(
    {"abs", "int", "float", "round", "str", "list", "tuple", "set", "sorted", "reversed", "bool"}
)


def _is_constant_step(node: Optional[ast.AST]) -> bool:
    """``x + 1`` / ``x - 2``: literal +-1 already moves the constant."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and isinstance(node.right, ast.Constant)
        and type(node.right.value) is int
    )


def _call_sites(model: FileModel, node: ast.Call) -> List[Tuple[ast.AST, str, float]]:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "range":
        return [(a, "range argument", 1.0) for a in node.args]
    if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1:
        return [(node, "len()", 0.9)]
    if isinstance(func, ast.Name) and func.id in ("min", "max") and not node.keywords:
        # The terms of a min/max are costs and bounds: `dp[i][j - 1] + 1` missing its `+ 1`.
        return [(a, f"{func.id}() argument", 0.8) for a in node.args]
    # Arguments of the file's own functions (recursion bounds: `search(xs, mid + 1, hi)`);
    # every argument of every library call would flood the search with type errors.
    own = isinstance(func, ast.Name) and func.id in model.functions
    own = own or (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    )
    return [(a, "call argument", 0.6) for a in node.args] if own else []


_PLAIN_VALUES = (ast.Name, ast.Attribute, ast.Subscript)


def _assigned_sites(target: ast.AST, value: ast.AST) -> List[Tuple[ast.AST, str, float]]:
    """A plain value copied into a variable: ``hi = mid`` for ``hi = mid - 1``, ``i = lo``
    for ``i = lo - 1`` (and each element of ``lo, hi = a, b``). Computed values are left to
    the other sites: every operand of every assignment would flood the search."""
    if isinstance(target, ast.Name) and isinstance(value, _PLAIN_VALUES):
        return [(value, "assigned value", 0.8)]
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
    ):
        return [(v, "assigned value", 0.7) for v in value.elts if isinstance(v, _PLAIN_VALUES)]
    return []


def _off_by_one_sites(model: FileModel, node: ast.AST) -> List[Tuple[ast.AST, str, float]]:
    sites: List[Tuple[ast.AST, str, float]] = []
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        sites += [(e, "index", 0.9) for e in node.slice.elts]
    elif isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        sites.append((node.slice, "index", 1.0))
    elif isinstance(node, ast.Slice):
        sites += [(b, "slice bound", 1.0) for b in (node.lower, node.upper) if b is not None]
    elif isinstance(node, ast.Call):
        sites += _call_sites(model, node)
    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
        sites += _assigned_sites(node.targets[0], node.value)
    elif isinstance(node, ast.Return) and node.value is not None:
        value = node.value
        numeric_call = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in _NUMERIC_CALLS
        )
        if not isinstance(value, ast.Call) or numeric_call:
            sites.append((value, "return value", 1.0))
    return [
        site
        for site in sites
        if not isinstance(site[0], _NOT_NUMERIC)
        and not _is_constant_step(site[0])
        and not _is_constant_step(model.parent(site[0]))  # `len(x) + 1 - 1`: literal's job
        and not (isinstance(site[0], ast.UnaryOp) and isinstance(site[0].op, ast.Not))
    ]


def _needs_group(model: FileModel, site: ast.AST) -> bool:
    """True when ``site + 1`` in ``site``'s place would bind to a neighbour: ``len(x) * k``."""
    parent = model.parent(site)
    if isinstance(parent, ast.BinOp):
        return precedence(parent) > PREC_ADD or (
            parent.right is site and isinstance(parent.op, ast.Sub)
        )
    if isinstance(parent, ast.UnaryOp):
        return not isinstance(parent.op, ast.Not)
    if isinstance(parent, (ast.Attribute, ast.Subscript)):
        return parent.value is site
    return False


def off_by_one(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """Add or subtract one in an index, slice bound, ``range``/call argument, ``len()`` or return
    value."""
    src = model.source
    for site, what, weight in _off_by_one_sites(model, node):
        start, end = src.span(site)
        text = src.text[start:end]
        grouped = _needs_group(model, site)
        for k, delta in enumerate(("+ 1", "- 1")):
            if grouped:
                span, replacement = (start, end), f"({text} {delta})"
            elif precedence(site) >= PREC_ADD:
                span, replacement = (end, end), f" {delta}"
            else:
                span, replacement = (start, end), f"({text}) {delta}"
            yield make(
                model, "off_by_one", *span, replacement, weight * (1.0 - 0.1 * k), f"{what} {delta}"
            )


def _conditions(model: FileModel, node: ast.AST) -> List[ast.expr]:
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return [node.test]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    return []


def negate_condition(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``if c:`` to ``if not c:`` (and each operand of ``a and b`` in a condition)."""
    for cond in _conditions(model, node):
        targets = [(cond, 1.0)]
        if isinstance(cond, ast.BoolOp):
            targets += [(v, 0.7) for v in cond.values]
        for target, weight in targets:
            if isinstance(target, ast.UnaryOp) and isinstance(target.op, ast.Not):
                continue  # unary_operator drops the `not`
            if isinstance(target, ast.Compare) and len(target.ops) == 1:
                continue  # `not a < b` is the comparison family's `a >= b`, said plainly
            start, end = model.source.span(target)
            text = model.source.text[start:end]
            if precedence(target) >= PREC_NOT + 1:
                yield make(
                    model, "negate_condition", start, start, "not ", weight, f"negate `{text}`"
                )
            else:
                yield make(
                    model,
                    "negate_condition",
                    start,
                    end,
                    f"not ({text})",
                    weight,
                    f"negate `{text}`",
                )


_NON_COMMUTATIVE = (
    ast.Sub,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.LShift,
    ast.RShift,
    ast.Add,
)


def _swap_parts(model: FileModel, node: ast.AST) -> Optional[Tuple[ast.AST, ast.AST, str, ast.AST]]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, _NON_COMMUTATIVE):
        swapped: ast.AST = ast.BinOp(left=node.right, op=node.op, right=node.left)
        return node.left, node.right, BIN_SYMBOLS[type(node.op)], swapped
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.In, ast.NotIn))
    ):
        swapped = ast.Compare(left=node.comparators[0], ops=node.ops, comparators=[node.left])
        return node.left, node.comparators[0], CMP_SYMBOLS[type(node.ops[0])], swapped
    return None


def _accumulates_sequence(model: FileModel, node: ast.AST) -> bool:
    """``out = out + x`` where ``out`` starts as a string or list literal: an append that may
    have been meant as a prepend (``digits = d + digits``), where `+` does not commute."""
    parent = model.parent(node)
    if (
        not isinstance(parent, ast.Assign)
        or len(parent.targets) != 1
        or not isinstance(parent.targets[0], ast.Name)
    ):
        return False
    name = parent.targets[0].id
    if not isinstance(node, ast.BinOp) or not any(
        isinstance(o, ast.Name) and o.id == name for o in (node.left, node.right)
    ):
        return False
    scope = model.function_of(node) or model.source.tree
    for other in ast.walk(scope):
        if (
            isinstance(other, ast.Assign)
            and other is not parent
            and any(isinstance(t, ast.Name) and t.id == name for t in other.targets)
        ):
            value = other.value
            if isinstance(value, (ast.List, ast.JoinedStr)) or (
                isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes))
            ):
                return True
    return False


def swap_operands(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``a - b`` to ``b - a`` for non-commutative operators and ``in``; checked by re-parsing."""
    parts = _swap_parts(model, node)
    if parts is None:
        return
    left, right, symbol, expected = parts
    token = operator_token(model, left, right, symbol)
    if token is None:
        return
    src = model.source
    start, end = src.span(node)
    left_text = src.text[start : token[0]].rstrip()
    right_text = src.text[token[1] : end].lstrip()
    op_text = src.text[start + len(left_text) : end - len(right_text)]
    want = ast.dump(expected)
    for a, b in (
        (right_text, left_text),
        (f"({right_text})", left_text),
        (right_text, f"({left_text})"),
        (f"({right_text})", f"({left_text})"),
    ):
        replacement = a + op_text + b
        try:
            parsed = ast.parse(replacement, mode="eval").body
        except SyntaxError:
            continue
        if ast.dump(parsed) == want:
            # `+` commutes on numbers (a wasted candidate) but not on strings and lists.
            weight = 1.0 if symbol != "+" or _accumulates_sequence(model, node) else 0.6
            yield make(
                model,
                "swap_operands",
                start,
                end,
                replacement,
                weight,
                f"swap operands of `{symbol}`",
            )
            return


def swap_arguments(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``f(a, b)`` to ``f(b, a)``: every pair of positional arguments (adjacent first)."""
    if not isinstance(node, ast.Call) or len(node.args) < 2 or len(node.args) > 5:
        return
    if any(isinstance(a, ast.Starred) for a in node.args):
        return
    src = model.source
    spans = [src.span(a) for a in node.args]
    for i in range(len(spans)):
        for j in range(i + 1, len(spans)):
            (si, ei), (sj, ej) = spans[i], spans[j]
            if src.text[si:ei] == src.text[sj:ej]:
                continue
            replacement = src.text[sj:ej] + src.text[ei:sj] + src.text[si:ei]
            weight = 1.0 if j == i + 1 else 0.7
            yield make(
                model,
                "swap_arguments",
                si,
                ej,
                replacement,
                weight,
                f"swap arguments {i + 1} and {j + 1}",
            )


def _sub_expressions(node: ast.AST) -> List[Tuple[ast.AST, float]]:
    if isinstance(node, ast.BinOp):
        return [(node.left, 1.0), (node.right, 0.8)]
    if isinstance(node, ast.IfExp):
        return [(node.body, 1.0), (node.orelse, 1.0)]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], (ast.Starred, ast.GeneratorExp))
    ):
        return [(node.args[0], 1.0 if node.func.id in _WRAPPERS else 0.7)]
    return []


def sub_expression(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """Replace an expression by one of its parts: ``a - b`` to ``a``, ``abs(x)`` to ``x``."""
    if not isinstance(node, ast.expr):
        return
    src = model.source
    start, end = src.span(node)
    for sub, weight in _sub_expressions(node):
        text = wrap(src.segment(sub), sub, precedence(node))
        yield make(
            model,
            "sub_expression",
            start,
            end,
            text,
            weight,
            f"`{src.text[start:end]}` -> `{text}`",
        )
    if isinstance(node, ast.BoolOp):
        word = " and " if isinstance(node.op, ast.And) else " or "
        for i in range(len(node.values)):
            rest = [v for k, v in enumerate(node.values) if k != i]
            text = word.join(wrap(src.segment(v), v, precedence(node) + 1) for v in rest)
            if len(rest) == 1:
                text = wrap(src.segment(rest[0]), rest[0], precedence(node))
            yield make(
                model,
                "sub_expression",
                start,
                end,
                text,
                0.9,
                f"drop operand {i + 1} of `{word.strip()}`",
            )
