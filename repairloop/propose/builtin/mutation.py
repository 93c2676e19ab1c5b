"""The mutation record, the operator priors, and a parsed file's scope facts.

Priors (``FAMILY_PRIORS``) order candidates together with suspiciousness
(candidate score = suspiciousness x prior). They follow two observations:

* In the one-statement bug-fix corpora ManySStuBs4J (Karampatsis and Sutton,
  MSR 2020) and PySStuBs (Kamienski et al., MSR 2021) the common patterns are
  changed operators, changed literals, changed identifiers and changed calls;
  changed operators and off-by-one literals are also the classic one-line bugs
  of small algorithm programs (QuixBugs, Lin et al. 2017).
* Families with one or two alternatives per site are cheap to exhaust, so they
  go first; families that multiply candidates (every other variable in scope,
  every nearby statement) go last.

Within a family the "natural" alternative (``<`` to ``<=``, ``+`` to ``-``)
keeps weight 1.0 and the others get less (``alt_weight``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict

from repairloop.propose.builtin.edits import Edit

FAMILY_PRIORS: Dict[str, float] = {
    "comparison": 1.0,
    "literal_off_by_one": 0.9,
    "boolean_operator": 0.85,
    "off_by_one": 0.8,  # +-1 in an index, slice bound, range argument or return value
    "arithmetic": 0.8,
    "negate_condition": 0.8,
    "wrong_function": 0.7,
    "literal": 0.65,  # [] / [[]], True / False, None, inf / -inf
    "insert_update": 0.6,  # only where a smell names the missing statement (mutate_inserts.py)
    "bitwise": 0.6,
    "swap_operands": 0.6,
    "swap_arguments": 0.55,
    "sub_expression": 0.5,
    "wrap_call": 0.45,  # a missing abs() / len() / int() / recursive call
    "wrong_variable": 0.45,
    "wrong_attribute": 0.45,
    "delete_statement": 0.35,
    "insert_statement": 0.3,
    # Shapes of real fixes (fixtures/bench/README.md counts them in the 71 real bugs of
    # fixtures/realbugs*): after the one-token families, most frequent first.
    "repeat_edit": 0.7,  # a multiplier: the prior of the one-line edit it repeats, times this
    "add_clause": 0.4,
    "self_callable": 0.45,
    "clamp": 0.4,
    "insert_break": 0.35,
    "constant_value": 0.4,
    "wrong_constant": 0.35,
    "flush_after_loop": 0.3,
}

# Stable tie-break between families with equal scores: the order above.
FAMILY_ORDER: Dict[str, int] = {name: i for i, name in enumerate(FAMILY_PRIORS)}


def alt_weight(index: int) -> float:
    """Weight of the ``index``-th alternative of a site: 1.0, 0.7, 0.6, 0.5, ... (floor 0.3)."""
    return 1.0 if index == 0 else max(0.3, 0.8 - 0.1 * index)


@dataclass(frozen=True)
class Mutation:
    """One candidate edit: replace ``[start, end)`` of ``path`` by ``replacement``.

    ``line`` is the 1-based line of the start; ``prior`` is the family prior
    times the alternative's weight (0..1); ``description`` says what changed.
    """

    operator: str
    path: str
    line: int
    start: int
    end: int
    replacement: str
    prior: float
    description: str

    @property
    def edit(self) -> Edit:
        return Edit(self.path, self.start, self.end, self.replacement)


# Python operator precedence, lowest first (the language reference, "Operator
# precedence"): used to decide when a moved or wrapped expression needs parentheses.
_BINOP_PREC = {
    ast.BitOr: 6,
    ast.BitXor: 7,
    ast.BitAnd: 8,
    ast.LShift: 9,
    ast.RShift: 9,
    ast.Add: 10,
    ast.Sub: 10,
    ast.Mult: 11,
    ast.Div: 11,
    ast.FloorDiv: 11,
    ast.Mod: 11,
    ast.MatMult: 11,
    ast.Pow: 13,
}
PREC_ADD = 10
PREC_NOT = 4


def precedence(node: ast.AST) -> int:
    """Binding strength of an expression node (higher binds tighter; atoms 16)."""
    if isinstance(node, ast.NamedExpr):
        return -1
    if isinstance(node, ast.Lambda):
        return 0
    if isinstance(node, ast.IfExp):
        return 1
    if isinstance(node, ast.BoolOp):
        return 2 if isinstance(node.op, ast.Or) else 3
    if isinstance(node, ast.UnaryOp):
        return PREC_NOT if isinstance(node.op, ast.Not) else 12
    if isinstance(node, ast.Compare):
        return 5
    if isinstance(node, ast.BinOp):
        return _BINOP_PREC.get(type(node.op), 11)
    if isinstance(node, ast.Await):
        return 14
    if isinstance(node, (ast.Tuple, ast.Starred, ast.Yield, ast.YieldFrom)):
        return -1  # bare tuples and yields need parentheses almost everywhere
    return 16


def wrap(text: str, node: ast.AST, min_prec: int) -> str:
    """``text`` of ``node``, parenthesised when it binds less tightly than ``min_prec``."""
    return f"({text})" if precedence(node) < min_prec else text
