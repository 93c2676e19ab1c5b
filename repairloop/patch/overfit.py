"""Suspected overfitting: a candidate that special-cases the failing test's inputs.

A plausible patch can pass by recognising the test rather than fixing the
code: ``if items == [1, 2, 3, 4] and n == 2: return [3, 4]``. Such patches are
the classic overfitting of test-suite-based repair (Smith et al., "Is the cure
worse than the disease?", FSE 2015). They are *flagged*, not rejected: a
literal shared with a test is sometimes right. A flag names the branch and the
literal; the loop records it on the iteration and the report shows it.

The literals are the failing tests' (``testliterals.assertion_literals``). A
special case compares an input as it is (a name, an attribute, an item, or a
summary of one: ``len(items)``, ``sum(items)``) with such a literal; a computed
value (``number % 100 in (11, 12, 13)``) is how a real fix reads, and is not
suspect.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from repairloop.errors import GuardError
from repairloop.patch.changes import AppliedPatch, FileChange
from repairloop.patch.statements import StatementDelta, statement_delta
from repairloop.patch.testliterals import literal_key, literals_in
from repairloop.types import Flag, FlagKind, TestFiles

# ``match`` statements exist from Python 3.10; on 3.9 these are empty tuples (isinstance is False).
_MATCH_CASE = getattr(ast, "match_case", ())
_MATCH_VALUE = getattr(ast, "MatchValue", ())
MAX_FLAGS = 5
# Calls that only summarise an input, as the derived literals do (``sum(items) == 10``).
_SUMMARIES = frozenset(
    {"len", "sum", "min", "max", "sorted", "set", "tuple", "list", "str", "int", "abs"}
)


def _branch_tests(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Conditions that choose a branch: if/while/ternary tests, comprehension ifs, match guards."""
    for node in (sub for top in nodes for sub in ast.walk(top)):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs
        elif isinstance(node, _MATCH_CASE):
            yield node.pattern
            if node.guard is not None:
                yield node.guard


def _special_cases(
    nodes: Sequence[ast.AST], literals: FrozenSet[str]
) -> Iterator[Tuple[str, str, int, FrozenSet[str]]]:
    """(key, shown, line, literals hit) of each comparison in a branch condition of an input against
    a test literal."""
    for test in _branch_tests(nodes):
        yield from _compares(test, literals)


def _compares(
    test: ast.AST, literals: FrozenSet[str]
) -> Iterator[Tuple[str, str, int, FrozenSet[str]]]:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if not any(_is_input(operand) for operand in operands):
                continue  # a computed value (``number % 100``): how a real fix reads
        elif isinstance(node, _MATCH_VALUE):
            operands = [node.value]
        else:
            continue
        hits = frozenset(_literals_in_operands(operands) & literals)
        if hits:
            shown = " ".join(ast.unparse(node).split())[:100]
            yield ast.dump(node), shown, getattr(node, "lineno", 0), hits


def _is_input(node: ast.AST) -> bool:
    """A value as the function got it: a name, an attribute or item of one, or a summary of one
    (``len(x)``)."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _is_input(node.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _SUMMARIES
    ):
        return len(node.args) == 1 and _is_input(node.args[0])
    return False


def _literals_in_operands(operands: Sequence[ast.AST]) -> Set[str]:
    keys: Set[str] = set()
    for operand in operands:
        key = literal_key(operand)
        if key is not None:
            keys.add(key)
        keys |= _elements(operand)
    return keys


def _elements(operand: ast.AST) -> Set[str]:
    """Keys of the elements of a literal collection (``x in (4, [1, 2, 3, 4])``)."""
    if isinstance(operand, (ast.Tuple, ast.List, ast.Set)):
        return {k for elt in operand.elts if (k := literal_key(elt)) is not None}
    return set()


def _code_deltas(
    applied: AppliedPatch, test_files: TestFiles
) -> Iterator[Tuple[FileChange, StatementDelta]]:
    """The changed Python files that are not tests and parse, with the statements each change
    touches."""
    for change in applied.changes:
        if change.path.endswith(".py") and not test_files.is_test(change.path):
            delta = statement_delta(change.old_text, change.new_text)
            if delta.parses:
                yield change, delta


def overfitting_flags(
    applied: AppliedPatch, literals: FrozenSet[str], test_files: TestFiles = TestFiles()
) -> Tuple[Flag, ...]:
    """Flags for branch conditions the candidate adds that compare with the tests' literals.

    Each flag is SUSPECTED_OVERFITTING with the detail ``PATH:LINE `CONDITION`
    compares with LITERAL from the failing test``; at most MAX_FLAGS. A comparison the file had
    before the candidate is the project's own and never flagged. Test files (by
    ``test_files``) and non-Python files are not looked at. () when nothing is
    suspect or ``literals`` is empty.
    """
    if not literals:
        return ()
    flags: List[Flag] = []
    for change, delta in _code_deltas(applied, test_files):
        # A special case is one node: only the statements the candidate touches can add one.
        # A literal the changed statements compared with already is not the candidate's special
        # case.
        removed = list(_special_cases(delta.removed, literals))
        before = Counter(k for k, _, _, _ in removed)
        known = frozenset(hit for _, _, _, hits in removed for hit in hits)
        old = [delta.old_tree] if delta.old_tree is not None else []
        own = {key for key, _, _, _ in _special_cases(old, literals)}
        seen: Dict[str, int] = {}
        for key, shown, line, hits in _special_cases(delta.added, literals):
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > before.get(key, 0) and hits - known and key not in own:
                literal = max(sorted(hits - known), key=len)
                flags.append(
                    Flag(
                        FlagKind.SUSPECTED_OVERFITTING,
                        f"{change.path}:{line} `{shown}` compares with {literal} from the failing "
                        f"test",
                    )
                )
    return tuple(flags[:MAX_FLAGS])


def check_hardcoded(
    applied: AppliedPatch,
    literals: FrozenSet[str],
    test_files: TestFiles = TestFiles(),
    inputs: FrozenSet[str] = frozenset(),
) -> None:
    """Refuse a candidate that returns the failing test's own literal when it recognises the test's
    input.

    ``if items == [1, 2, 3, 4] and n == 2: return [3, 4]`` (or ``sum(items) == 10``)
    is not a fix but the test's answer written into the code: an added branch
    whose condition compares with a test literal (or a value computed from
    one) and whose body returns a test literal is refused with GuardError, as
    is one whose condition compares inputs with nothing but ``inputs`` (the
    failing tests' own parameters, ``testliterals.failing_inputs``) and that
    returns a constant (``if number in (13, 113): return "th"``);
    a branch that only compares is flagged (``overfitting_flags``). A branch whose condition the
    file had before the candidate is the project's own, never refused, whatever it returns now
    (``if month in (4, 6, 9, 11): return 30`` restored from ``return 31``), and so is one whose
    condition compares only with values the file's conditions already compared with (a leap-year
    test's ``% 4 == 1`` restored to ``% 4 == 0`` where a test asserts on ``+ 100``).
    """
    if not literals:
        return
    for change, delta in _code_deltas(applied, test_files):
        before = {ast.dump(n) for n in _answers(delta.removed, literals, inputs)}
        own = _conditions(delta.old_tree)
        compared = _compared(delta.old_tree)
        for node in _answers(delta.added, literals, inputs):
            test_values = literals_in(_condition(node)) & (literals | inputs)
            if test_values <= compared:
                continue  # compares only with values the file's conditions already had
            if ast.dump(node) not in before and ast.dump(_condition(node)) not in own:
                shown = " ".join(ast.unparse(node).split())[:120]
                raise GuardError(
                    f"the candidate hard-codes the failing test's answer in {change.path} (line "
                    f"{node.lineno}): "
                    f"`{shown}` recognises the test's input and returns a fixed answer",
                    hint="fix the computation for every input; "
                    "special-casing the test is not a fix",
                )


def _condition(node: ast.stmt) -> ast.AST:
    """The condition of an answer ``_answers`` found: an ``if``'s test, a returned ternary's."""
    if isinstance(node, ast.Return) and isinstance(node.value, ast.IfExp):
        return node.value.test
    return node.test if isinstance(node, ast.If) else node


def _compared(tree: Optional[ast.Module]) -> Set[str]:
    """Every literal (and derived value, ``literals_in``) the module's branch conditions hold."""
    found: Set[str] = set()
    for test in _branch_tests([tree] if tree is not None else []):
        found |= literals_in(test)
    return found


def _conditions(tree: Optional[ast.Module]) -> Set[str]:
    """Every branch condition of a module (``_branch_tests``; None: none), dumped."""
    return {ast.dump(test) for test in _branch_tests([tree] if tree is not None else [])}


def _answers(
    nodes: Sequence[ast.AST], literals: FrozenSet[str], inputs: FrozenSet[str]
) -> Iterator[ast.stmt]:
    """Added ``if`` statements (and conditional expressions' statements) that special-case a test
    literal and return one, or that recognise nothing but the failing tests' own inputs and return a
    constant."""
    for node in (sub for top in nodes for sub in ast.walk(top)):
        if isinstance(node, ast.If) and literals_in(node.test) & literals:
            returns = [r for stmt in node.body for r in ast.walk(stmt) if isinstance(r, ast.Return)]
            if any(r.value is not None and literal_key(r.value) in literals for r in returns):
                yield node
            elif (
                inputs
                and _only_test_values(node.test, inputs)
                and any(
                    isinstance(stmt, ast.Return) and _is_constant(stmt.value) for stmt in node.body
                )
            ):
                yield node  # ``if number in (13, 113): return "th"``
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.IfExp):
            test, body = node.value.test, node.value.body
            if literals_in(test) & literals and literal_key(body) in literals:
                yield node


def _only_test_values(test: ast.AST, literals: FrozenSet[str]) -> bool:
    """True when ``test`` has comparisons and each compares an input with values from ``literals``
    and nothing else."""
    compared = [node for node in ast.walk(test) if isinstance(node, ast.Compare)]
    if not compared:
        return False
    for node in compared:
        operands = [node.left, *node.comparators]
        values = {key for operand in operands for key in _operand_values(operand)}
        if not (values and values <= literals and any(_is_input(o) for o in operands)):
            return False
    return True


def _operand_values(operand: ast.AST) -> Set[str]:
    """The values a comparison operand holds: a collection's elements, or the literal itself."""
    key = literal_key(operand)
    return _elements(operand) or ({key} if key is not None else set())


def _is_constant(node: Optional[ast.AST]) -> bool:
    if node is None:
        return True  # a bare ``return``: None
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True
