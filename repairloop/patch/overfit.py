"""Suspected overfitting: a candidate that special-cases the failing test's inputs.

A plausible patch can pass by recognising the test rather than fixing the
code: ``if items == [1, 2, 3, 4] and n == 2: return [3, 4]``. Such patches are
the classic overfitting of test-suite-based repair (Smith et al., "Is the cure
worse than the disease?", FSE 2015). They are *flagged*, not rejected: a
literal shared with a test is sometimes right. A flag names the branch and the
literal; the loop records it on the iteration and the report shows it.

Literals are those of the failing tests' assertions (``assert``, ``assert*``
calls, ``pytest.raises``) and ``parametrize`` arguments. Values too common to
mean anything (None, booleans, numbers between -2 and 2, strings of one
character, empty containers) are ignored.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from repairloop.errors import GuardError
from repairloop.patch.model import AppliedPatch, FileChange
from repairloop.patch.statements import StatementDelta, statement_delta
from repairloop.types import Flag, FlagKind, TestFiles

_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)
# ``match`` statements exist from Python 3.10; on 3.9 these are empty tuples (isinstance is False).
_MATCH_CASE = getattr(ast, "match_case", ())
_MATCH_VALUE = getattr(ast, "MatchValue", ())
MAX_FLAGS = 5


def _literal_key(node: ast.AST) -> Optional[str]:
    """``repr`` of a non-trivial literal value, else None."""
    if not isinstance(node, _LITERAL_NODES):
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, complex)) and abs(value) <= 2:
        return None
    if isinstance(value, (str, bytes)) and len(value) <= 1:
        return None
    if isinstance(value, (list, tuple, set, frozenset, dict)) and not value:
        return None
    if isinstance(value, (set, frozenset)):
        return repr(sorted(value, key=repr))
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _literals_in(node: ast.AST) -> Set[str]:
    """The literal keys in ``node``, and the values a special case could compute from them (``_derived``)."""
    keys: Set[str] = set()
    for sub in ast.walk(node):
        key = _literal_key(sub)
        if key is not None:
            keys.add(key)
            keys |= _derived(sub)
    return keys


def _derived(node: ast.AST) -> Set[str]:
    """Keys of values computed from a literal input: the sum, length, smallest and largest of a
    collection of numbers, the length of a string (an overfit on ``sum(items) == 10`` hides the literal)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return set()
    found: List[float] = []
    if isinstance(value, (list, tuple, set, frozenset)) and value \
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        found += [sum(value), len(value), min(value), max(value)]
    elif isinstance(value, str):
        found.append(len(value))  # an int is a float for this list
    keys = set()
    for item in found:
        key = _literal_key(ast.Constant(item))
        if key is not None:
            keys.add(key)
    return keys


def _is_assertion(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name.startswith("assert") or name in ("raises", "warns", "approx")
    return False


def _find_test(tree: ast.AST, names: Sequence[str]) -> Optional[ast.AST]:
    scope: ast.AST = tree
    for name in names:
        found = next((n for n in getattr(scope, "body", []) if getattr(n, "name", None) == name), None)
        if found is None:
            return None
        scope = found
    return scope


def assertion_literals(root: Path, test_ids: Sequence[str]) -> FrozenSet[str]:
    """Non-trivial literal values (as ``repr``) of the failing tests' assertions and parameters.

    ``test_ids`` are pytest node ids relative to ``root``
    (``tests/test_x.py::TestC::test_m[param]``). Files that are missing or do
    not parse, and tests not found, contribute nothing. Raises nothing.
    """
    found: Set[str] = set()
    for node in assertion_nodes(root, test_ids, parameters=True):
        found |= _literals_in(node)
    return frozenset(found)


def assertion_nodes(root: Path, test_ids: Sequence[str], parameters: bool = False) -> Iterator[ast.AST]:
    """The assertions (``assert``, ``assert*`` calls, ``pytest.raises``) of the tests ``test_ids`` names,
    and their ``parametrize`` decorators when ``parameters``; missing files and tests give nothing."""
    for test_id in test_ids:
        path, _, rest = test_id.partition("::")
        names = [part.split("[")[0] for part in rest.split("::") if part]
        try:
            tree = ast.parse((root / path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        test = _find_test(tree, names) if names else None
        if test is None:
            continue
        yield from (node for node in ast.walk(test) if _is_assertion(node))
        if parameters:
            yield from (d for d in getattr(test, "decorator_list", []) if "parametrize" in ast.unparse(d))


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


def _special_cases(nodes: Sequence[ast.AST], literals: FrozenSet[str]) -> Iterator[Tuple[str, str, int, str]]:
    """(key, shown, line, literal) of each comparison in a branch condition against a test literal."""
    for test in _branch_tests(nodes):
        for node in ast.walk(test):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            elif isinstance(node, _MATCH_VALUE):
                operands = [node.value]
            else:
                continue
            hits = sorted(_literals_in_operands(operands) & literals)
            if hits:
                shown = " ".join(ast.unparse(node).split())[:100]
                yield ast.dump(node), shown, getattr(node, "lineno", 0), max(hits, key=len)


def _literals_in_operands(operands: Sequence[ast.AST]) -> Set[str]:
    keys: Set[str] = set()
    for operand in operands:
        key = _literal_key(operand)
        if key is not None:
            keys.add(key)
        if isinstance(operand, (ast.Tuple, ast.List, ast.Set)):  # x in (4, [1, 2, 3, 4])
            keys |= {k for elt in operand.elts if (k := _literal_key(elt)) is not None}
    return keys


def _code_deltas(applied: AppliedPatch, test_files: TestFiles) -> Iterator[Tuple[FileChange, StatementDelta]]:
    """The changed Python files that are not tests and parse, with the statements each change touches."""
    for change in applied.changes:
        if change.path.endswith(".py") and not test_files.is_test(change.path):
            delta = statement_delta(change.old_text, change.new_text)
            if delta.parses:
                yield change, delta


def overfitting_flags(applied: AppliedPatch, literals: FrozenSet[str],
                      test_files: TestFiles = TestFiles()) -> Tuple[Flag, ...]:
    """Flags for branch conditions the candidate adds that compare with the tests' literals.

    Each flag is SUSPECTED_OVERFITTING with the detail ``PATH:LINE `CONDITION`
    compares with LITERAL from the failing test``; at most MAX_FLAGS. Test files (by
    ``test_files``) and non-Python files are not looked at. () when nothing is
    suspect or ``literals`` is empty.
    """
    if not literals:
        return ()
    flags: List[Flag] = []
    for change, delta in _code_deltas(applied, test_files):
        # A special case is one node: only the statements the candidate touches can add one.
        before = Counter(k for k, _, _, _ in _special_cases(delta.removed, literals))
        seen: Dict[str, int] = {}
        for key, shown, line, literal in _special_cases(delta.added, literals):
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > before.get(key, 0):
                flags.append(Flag(FlagKind.SUSPECTED_OVERFITTING,
                                  f"{change.path}:{line} `{shown}` compares with {literal} from the failing test"))
    return tuple(flags[:MAX_FLAGS])


def check_hardcoded(applied: AppliedPatch, literals: FrozenSet[str], test_files: TestFiles = TestFiles()) -> None:
    """Refuse a candidate that returns the failing test's own literal when it recognises the test's input.

    ``if items == [1, 2, 3, 4] and n == 2: return [3, 4]`` (or ``sum(items) == 10``)
    is not a fix but the test's answer written into the code: an added branch
    whose condition compares with a test literal (or a value computed from
    one) and whose body returns a test literal is refused with GuardError;
    a branch that only compares is flagged (``overfitting_flags``).
    """
    if not literals:
        return
    for change, delta in _code_deltas(applied, test_files):
        before = {ast.dump(n) for n in _answers(delta.removed, literals)}
        for node in _answers(delta.added, literals):
            if ast.dump(node) not in before:
                shown = " ".join(ast.unparse(node).split())[:120]
                raise GuardError(
                    f"the candidate hard-codes the failing test's answer in {change.path} (line {node.lineno}): "
                    f"`{shown}` recognises the test's input and returns its expected value",
                    hint="fix the computation for every input; special-casing the test is not a fix",
                )


def _answers(nodes: Sequence[ast.AST], literals: FrozenSet[str]) -> Iterator[ast.stmt]:
    """Added ``if`` statements (and conditional expressions' statements) that special-case a test literal
    and return one."""
    for node in (sub for top in nodes for sub in ast.walk(top)):
        if isinstance(node, ast.If) and _literals_in(node.test) & literals:
            returns = [r for stmt in node.body for r in ast.walk(stmt) if isinstance(r, ast.Return)]
            if any(r.value is not None and _literal_key(r.value) in literals for r in returns):
                yield node
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.IfExp):
            test, body = node.value.test, node.value.body
            if _literals_in(test) & literals and _literal_key(body) in literals:
                yield node

