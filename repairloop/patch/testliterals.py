"""The literal values a failing test is about: what a special case in a candidate would compare
with.

Literals are those of the failing tests' assertions (``assert``, ``assert*``
calls, ``pytest.raises``), their ``parametrize`` arguments, the module- or
class-level constants either of them names (``@pytest.mark.parametrize("n, want",
CASES)`` with ``CASES = [(13, "13th"), ...]`` at the top of the file), and the
parameter values in the failing test's id (``test_ordinal[13-13th]``). Values
too common to mean anything (None, booleans, numbers between -2 and 2, strings
of one character, empty containers) are ignored. Keys are ``repr`` of the value
(tuples as lists, sets sorted), so ``(1, 2)`` in a test and ``[1, 2]`` in code
are the same key.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Union

from repairloop.types import read_inside

_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)


def literal_key(node: ast.AST) -> Optional[str]:
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


def literals_in(node: ast.AST) -> Set[str]:
    """The literal keys in ``node``, and the values a special case could compute from them
    (``_derived``)."""
    keys: Set[str] = set()
    for sub in ast.walk(node):
        key = literal_key(sub)
        if key is not None:
            keys.add(key)
            keys |= _derived(sub)
    return keys


def _derived(node: ast.AST) -> Set[str]:
    """Keys of values computed from a literal input: the sum, length, smallest and largest of a
    collection of numbers, the length of a string, the number a string spells (``int("-113")``) and
    a number's size (``abs(-113)``): an overfit on ``sum(items) == 10`` or ``abs(int(n)) == 113``
    hides the literal."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return set()
    found: List[Union[int, float]] = []
    if (
        isinstance(value, (list, tuple, set, frozenset))
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        found += [sum(value), len(value), min(value), max(value)]
    elif isinstance(value, str):
        found.append(len(value))
        spelled = _number_or_text(value.strip())
        if not isinstance(spelled, str):
            found += [spelled, abs(spelled)]
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        found.append(-value)
    keys = set()
    for item in found:
        key = literal_key(ast.Constant(item))
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


def _find_test(tree: ast.AST, names: Sequence[str]) -> List[ast.AST]:
    """The scopes from the module down to the test (module, class..., function); [] when not
    found."""
    scopes: List[ast.AST] = [tree]
    for name in names:
        found = next(
            (n for n in getattr(scopes[-1], "body", []) if getattr(n, "name", None) == name), None
        )
        if found is None:
            return []
        scopes.append(found)
    return scopes


def _constants(scope: ast.AST) -> Dict[str, ast.AST]:
    """Names bound at ``scope``'s top level to a value (``CASES = [...]``, ``CASES: list =
    [...]``)."""
    bound: Dict[str, ast.AST] = {}
    for node in getattr(scope, "body", []):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = node.value
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            bound[node.target.id] = node.value
    return bound


def _named_constants(nodes: Sequence[ast.AST], scopes: Sequence[ast.AST]) -> Set[str]:
    """Literals of the module- and class-level constants that ``nodes`` name."""
    bound: Dict[str, ast.AST] = {}
    for scope in scopes[:-1]:  # the module first, then classes: an inner binding wins
        bound.update(_constants(scope))
    names = {sub.id for node in nodes for sub in ast.walk(node) if isinstance(sub, ast.Name)}
    return {key for name in names if name in bound for key in literals_in(bound[name])}


def id_parameters(test_id: str) -> Set[str]:
    """Keys of the parameter values in a pytest id's brackets: ``t[13-13th]`` -> {'13', "'13th'"}.

    pytest joins the ids of the parameters with ``-``; a leading ``-`` of a part
    is a minus sign (``t[-113--113th]`` holds -113 and '-113th'). Numbers become
    numbers; other parts strings. Trivial values are dropped as in ``literal_key``.
    """
    if not test_id.endswith("]") or "[" not in test_id:
        return set()
    parts, sign = [], ""
    for part in test_id[test_id.index("[") + 1 : -1].split("-"):
        if not part:
            sign = "-"
            continue
        parts.append(sign + part)
        sign = ""
    keys: Set[str] = set()
    for part in parts:
        constant = ast.Constant(_number_or_text(part))
        key = literal_key(constant)
        if key is not None:
            keys |= {key, *_derived(constant)}
    return keys


def failing_inputs(test_ids: Sequence[str]) -> FrozenSet[str]:
    """The parameters of the failing tests' ids (``id_parameters``), with their derived values: the
    inputs that fail, as opposed to every value the tests mention."""
    return frozenset(key for test_id in test_ids for key in id_parameters(test_id))


def _number_or_text(part: str) -> Union[int, float, str]:
    try:
        return int(part)
    except ValueError:
        pass
    try:
        return float(part)
    except ValueError:
        return part


def _parse(root: Path, path: str) -> Optional[ast.Module]:
    # a test id is the run's word: never a link out of the tree, nor a device
    text = read_inside(root, path)
    try:
        return ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        return None


def _tests(root: Path, test_ids: Sequence[str]) -> Iterator[List[ast.AST]]:
    """For each test id whose file parses and holds the test: its scopes (module, class...,
    function)."""
    trees: Dict[str, Optional[ast.Module]] = {}
    for test_id in test_ids:
        path, _, rest = test_id.partition("::")
        names = [part.split("[")[0] for part in rest.split("::") if part]
        if path not in trees:
            trees[path] = _parse(root, path)
        tree = trees[path]
        scopes = _find_test(tree, names) if tree is not None and names else []
        if scopes:
            yield scopes


def _sources(test: ast.AST, parameters: bool) -> List[ast.AST]:
    nodes = [node for node in ast.walk(test) if _is_assertion(node)]
    if parameters:
        nodes += [d for d in getattr(test, "decorator_list", []) if "parametrize" in ast.unparse(d)]
    return nodes


def assertion_nodes(
    root: Path, test_ids: Sequence[str], parameters: bool = False
) -> Iterator[ast.AST]:
    """The assertions (``assert``, ``assert*`` calls, ``pytest.raises``) of the tests ``test_ids``
    names, and their ``parametrize`` decorators when ``parameters``; missing files and tests give
    nothing."""
    for scopes in _tests(root, test_ids):
        yield from _sources(scopes[-1], parameters)


def assertion_literals(root: Path, test_ids: Sequence[str]) -> FrozenSet[str]:
    """Non-trivial literal values (as ``repr``) of the failing tests (see the module's docstring).

    ``test_ids`` are pytest node ids relative to ``root``
    (``tests/test_x.py::TestC::test_m[param]``). Files that are missing or do
    not parse, and tests not found, contribute only their ids' parameters. Raises nothing.
    """
    found: Set[str] = set()
    for test_id in test_ids:
        found |= id_parameters(test_id)
    for scopes in _tests(root, test_ids):
        sources = _sources(scopes[-1], parameters=True)
        for node in sources:
            found |= literals_in(node)
        found |= _named_constants(sources, scopes)
    return frozenset(found)
