"""Operator and literal mutations: change one operator token or one literal.

Each function takes a ``FileModel`` and one expression node and yields
``Mutation`` values whose span is the operator token or the literal only, so
the rest of the line keeps its spacing and the diff is one line.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, Optional, Tuple

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutation import FAMILY_PRIORS, Mutation, alt_weight

CMP_SYMBOLS: Dict[type, str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
# First alternative is the "natural" one (boundary or negation), then the rest.
CMP_ALTS: Dict[str, Tuple[str, ...]] = {
    "<": ("<=", ">", ">=", "!=", "=="),
    "<=": ("<", ">=", ">", "==", "!="),
    ">": (">=", "<", "<=", "!=", "=="),
    ">=": (">", "<=", "<", "==", "!="),
    "==": ("!=", "<=", ">=", "<", ">"),
    "!=": ("==", "<", ">", "<=", ">="),
    "is": ("is not", "=="),
    "is not": ("is", "!="),
    "in": ("not in",),
    "not in": ("in",),
}
BIN_SYMBOLS: Dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
BIN_ALTS: Dict[str, Tuple[str, ...]] = {
    "+": ("-", "*"),
    "-": ("+",),
    "*": ("/", "//", "+", "**"),
    "/": ("//", "*"),
    "//": ("/", "%", "*"),
    "%": ("//", "/"),
    "**": ("*",),
    "&": ("|", "^"),
    "|": ("&", "^"),
    "^": ("|", "&"),
    "<<": (">>",),
    ">>": ("<<",),
}
BITWISE = frozenset({"&", "|", "^", "<<", ">>"})
MAX_CONDITION_NAMES = 6
_SKIP = " \t\r\n\\()"


def make(
    model: FileModel, family: str, start: int, end: int, replacement: str, weight: float, what: str
) -> Mutation:
    """A ``Mutation`` of ``model``'s file; prior = family prior x ``weight``."""
    src = model.source
    prior = round(FAMILY_PRIORS[family] * weight, 6)
    return Mutation(family, src.path, src.line_of(start), start, end, replacement, prior, what)


def operator_token(
    model: FileModel, left: ast.AST, right: ast.AST, symbol: str
) -> Optional[Tuple[int, int]]:
    """Offsets of the operator ``symbol`` between two operand nodes, or None.

    Between two operands there is only whitespace, parentheses, line
    continuations and the operator; a comment there makes us give up.
    """
    src = model.source
    lo, hi = src.span(left)[1], src.span(right)[0]
    while lo < hi and src.text[lo] in _SKIP:
        lo += 1
    while hi > lo and src.text[hi - 1] in _SKIP:
        hi -= 1
    core = src.text[lo:hi]
    if "#" in core or " ".join(core.split()) != symbol:
        return None
    return lo, hi


def comparison(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``a < b`` to ``a <= b`` and the other comparison operators (``in``/``not in``, ``is``)."""
    if not isinstance(node, ast.Compare):
        return
    operands = [node.left, *node.comparators]
    for i, op in enumerate(node.ops):
        symbol = CMP_SYMBOLS[type(op)]
        span = operator_token(model, operands[i], operands[i + 1], symbol)
        if span is None:
            continue
        for k, alt in enumerate(CMP_ALTS[symbol]):
            yield make(model, "comparison", *span, alt, alt_weight(k), f"`{symbol}` -> `{alt}`")


def binary_operator(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """Arithmetic and bitwise operators of ``a + b`` and of ``x += 1``."""
    if isinstance(node, ast.BinOp):
        left, right, suffix = node.left, node.right, ""
    elif isinstance(node, ast.AugAssign):
        left, right, suffix = node.target, node.value, "="
    else:
        return
    symbol = BIN_SYMBOLS.get(type(node.op))
    if symbol is None:
        return
    span = operator_token(model, left, right, symbol + suffix)
    if span is None:
        return
    family = "bitwise" if symbol in BITWISE else "arithmetic"
    for k, alt in enumerate(BIN_ALTS[symbol]):
        what = f"`{symbol}{suffix}` -> `{alt}{suffix}`"
        yield make(model, family, *span, alt + suffix, alt_weight(k), what)


def boolean_operator(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``and`` to ``or`` and back, one operator at a time."""
    if not isinstance(node, ast.BoolOp):
        return
    symbol = "and" if isinstance(node.op, ast.And) else "or"
    alt = "or" if symbol == "and" else "and"
    for left, right in zip(node.values, node.values[1:]):
        span = operator_token(model, left, right, symbol)
        if span is not None:
            yield make(model, "boolean_operator", *span, alt, 1.0, f"`{symbol}` -> `{alt}`")


_UNARY = {
    ast.Not: ("negate_condition", "not"),
    ast.USub: ("arithmetic", "-"),
    ast.Invert: ("bitwise", "~"),
    ast.UAdd: ("arithmetic", "+"),
}


def unary_operator(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """Drop a unary operator: ``not x`` to ``x``, ``-x`` to ``x``, ``~x`` to ``x``."""
    if not isinstance(node, ast.UnaryOp):
        return
    family, symbol = _UNARY[type(node.op)]
    src = model.source
    start = src.span(node)[0]
    prefix = src.text[start : src.span(node.operand)[0]]
    match = re.match(re.escape(symbol) + r"\s*", prefix)
    if match and "#" not in prefix:
        yield make(model, family, start, start + match.end(), "", 1.0, f"drop `{symbol}`")


def literal_off_by_one(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """An integer literal plus or minus one: ``n % 26`` to ``n % 25`` / ``n % 27``."""
    if not isinstance(node, ast.Constant) or type(node.value) is not int:
        return
    start, end = model.source.span(node)
    for k, value in enumerate((node.value + 1, node.value - 1)):
        if _identity_operand(model, node, value):
            continue  # `x - 0`, `x * 1`: sub_expression's `x` is the same fix, cleaner
        what = f"`{node.value}` -> `{value}`"
        weight = (1.0 - 0.1 * k) * (0.5 if _doubled_step(model, node, value) else 1.0)
        yield make(model, "literal_off_by_one", start, end, str(value), weight, what)


def _doubled_step(model: FileModel, node: ast.Constant, value: int) -> bool:
    """``x + 1`` to ``x + 2``: the 1 of a +-1 step is the deliberate adjustment, and doubling it
    rarely fixes anything (while it does make a weak test pass by skipping a case)."""
    parent = model.parent(node)
    return (
        node.value == 1
        and value == 2
        and isinstance(parent, ast.BinOp)
        and parent.right is node
        and isinstance(parent.op, (ast.Add, ast.Sub))
    )


def _identity_operand(model: FileModel, node: ast.Constant, value: int) -> bool:
    parent = model.parent(node)
    if not isinstance(parent, ast.BinOp) or parent.right is not node:
        return False
    if isinstance(parent.op, (ast.Add, ast.Sub)):
        return value == 0
    return isinstance(parent.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)) and value == 1


def literal(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """Change a literal: True/False, None, ``[]``/``[[]]``, ``"inf"``/``"-inf"``."""
    alternatives = _literal_alternatives(model, node)
    if not alternatives:
        return
    start, end = model.source.span(node)
    for k, (text, what) in enumerate(alternatives):
        yield make(model, "literal", start, end, text, alt_weight(k), what)


def _literal_alternatives(model: FileModel, node: ast.AST) -> Tuple[Tuple[str, str], ...]:
    if isinstance(node, ast.Constant):
        value = node.value
        if value is True or value is False:
            flipped = ((str(not value), f"`{value}` -> `{not value}`"),)
            parent = model.parent(node)
            if isinstance(parent, (ast.While, ast.If)) and parent.test is node:
                # `while True:` where a condition was meant (`while queue:`)
                names = model.local_vars(node)[:MAX_CONDITION_NAMES]
                return flipped + tuple((n, f"`{value}` -> `{n}`") for n in names)
            return flipped
        if value is None:
            if isinstance(model.parent(node), ast.Compare):
                return ()  # `x is 0` is never the fix; `is` / `is not` is the comparison family's
            return tuple((t, f"`None` -> `{t}`") for t in ("0", "[]", '""'))
        if isinstance(value, str) and value.strip().lstrip("+-").lower() == "inf":
            inverse = "inf" if value.strip().startswith("-") else "-inf"
            text = model.source.segment(node).replace(value, inverse)
            return ((text, f"`{value}` -> `{inverse}`"),)
        if isinstance(model.parent(node), ast.Return):
            return (("None", f"`{value!r}` -> `None`"),)
        return ()
    if isinstance(node, ast.List) and not node.elts:
        return (("[[]]", "`[]` -> `[[]]`"),)
    if isinstance(node, ast.List) and len(node.elts) == 1:
        inner = node.elts[0]
        if isinstance(inner, ast.List) and not inner.elts:
            return (("[]", "`[[]]` -> `[]`"),)
    return ()
