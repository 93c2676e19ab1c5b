"""Content rules on a candidate's Python files: what no fix needs, in any file.

Public evaluations of automated repair found many "fixes" that pass by
weakening the oracle: skipping or xfailing the failing test, ending the test
process early, patching the test runner, printing a passing summary, deleting
assertions (Kali's "functionality deletion" patches, Qi et al., ISSTA 2015;
SWE-bench submissions that edit tests). These rules refuse such candidates
whatever the file and whatever ``allow_test_edits`` says; only the test-file
rule of ``guards.py`` is lifted by that option.

Each rule compares the old and the new text of a file with ``ast``: a
construct counts as *added* when the new text has more occurrences of it (by
its source text) than the old one, so code that already had ``sys.exit`` may
keep it. Files that do not parse are left to ``check_syntax``.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from functools import lru_cache
from typing import AbstractSet, Dict, FrozenSet, Iterator, Optional, Sequence, Set, Tuple

from repairloop.errors import GuardError
from repairloop.patch import forgery
from repairloop.patch.changes import FileChange
from repairloop.patch.forgery import dotted_name
from repairloop.patch.statements import parse_module, statement_delta

# Names that skip a test or expect it to fail (pytest and unittest).
SKIP_NAMES = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "importorskip",
        "skipIf",
        "skipUnless",
        "expectedFailure",
        "skipTest",
        "SkipTest",
    }
)
RUNNER_MODULES = frozenset({"pytest", "_pytest", "unittest", "doctest", "nose", "nose2"})
# Roots whose attributes no fix assigns: the test runners and the builtins.
RUNNER_ROOTS = RUNNER_MODULES | {"builtins", "__builtins__"}
EXITS = frozenset({"sys.exit", "os._exit", "os.abort", "SystemExit", "atexit.register"})
# Names that turn collection off (pytest: __test__, collect_ignore in a conftest).
COLLECTION = frozenset({"__test__", "collect_ignore", "collect_ignore_glob"})
# Environment variables that change what pytest runs, or tell code it is under test.
RUNNER_ENV = re.compile(
    r"\bPYTEST_(ADDOPTS|PLUGINS|DISABLE_PLUGIN_AUTOLOAD|CURRENT_TEST|XDIST_\w+)\b"
)
# A test runner's closing line: "3 passed in 0.1s", "Ran 3 tests in", "== test session starts ==".
FAKE_SUMMARY = re.compile(
    r"\b\d+ passed\b|\b\d+ (failed|errors?|skipped|xfailed|xpassed)\b.* in [\d.]+ ?s\b"
    r"|={3,}.*\b(passed|failed|errors?|test session)\b|\bRan \d+ tests? in\b"
    r"|test session starts|short test summary",
    re.I,
)

Finding = Tuple[str, str, str, int]  # (rule, source text as key, text shown, line)

_WHY = {
    "skip": (
        "skips the test or expects it to fail",
        "make the failing test pass by fixing the code; never skip or xfail it",
    ),
    "exit": ("ends the test process early", "return a value or raise an exception instead"),
    "runner": (
        "tampers with the test runner",
        "fix the code under test; leave pytest, unittest, collection and hooks alone",
    ),
    "summary": (
        "prints text that looks like a test summary",
        "verdicts come from the runner's structured results; fix the code instead",
    ),
    "trivial_assert": ("adds an assertion that always passes", "keep the assertion's real check"),
    **forgery.WHY,
}


def _src(node: ast.AST) -> str:
    return " ".join(ast.unparse(node).split())[:120]


def _runner_imports(nodes: Sequence[ast.AST]) -> Set[str]:
    """Local names bound by ``from pytest import skip`` and the like, anywhere in ``nodes``."""
    names: Set[str] = set()
    for node in _walk(nodes):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in RUNNER_MODULES:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


@lru_cache(maxsize=2)
def _module_runner_imports(text: str) -> FrozenSet[str]:
    """``_runner_imports`` of a whole module, cached: every candidate is checked against one old
    text."""
    tree = parse_module(text)
    return frozenset(_runner_imports(tree.body)) if tree is not None else frozenset()


def _docstrings(nodes: Sequence[ast.AST]) -> Set[int]:
    """ids of the string constants that stand alone as a statement (docstrings, inert prose) in
    ``nodes``."""
    return {
        id(node.value)
        for node in _walk(nodes)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _walk(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    for top in nodes:
        yield from ast.walk(top)


class _Scanner:
    """Walks statements of one file and yields their findings (rule, text, line).

    ``imported`` is the file's runner imports (``_runner_imports``): a bare
    ``skip(...)`` is a finding only where ``skip`` comes from pytest.
    """

    def __init__(self, imported: AbstractSet[str]) -> None:
        self.imported = imported

    def findings(self, nodes: Sequence[ast.AST]) -> Iterator[Finding]:
        docstrings = _docstrings(nodes)
        for node in _walk(nodes):
            if id(node) in docstrings:
                continue  # prose: a docstring may name pytest or print nothing
            for rule in (
                self._skip,
                self._exit,
                self._runner,
                self._summary,
                self._trivial,
                *forgery.RULES,
            ):
                found = rule(node)
                if found:
                    key = ast.dump(node)
                    shown = f"def {node.name}" if isinstance(node, ast.FunctionDef) else _src(node)
                    yield found, key, shown, getattr(node, "lineno", 0)
                    break

    def _skip(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Attribute) and node.attr in SKIP_NAMES:
            root = dotted_name(node).split(".")[0]
            if (
                root in RUNNER_MODULES
                or root in self.imported
                or root == "mark"
                or node.attr == "skipTest"
            ):
                return "skip"
        if isinstance(node, ast.Name) and node.id in SKIP_NAMES and node.id in self.imported:
            return "skip"
        return None

    def _exit(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Attribute) and dotted_name(node) in EXITS:
            return "exit"
        if isinstance(node, ast.Name) and node.id == "SystemExit":
            return "exit"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("exit", "quit")
        ):
            return "exit"
        return None

    def _runner(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "_pytest" for a in node.names
        ):
            return "runner"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "_pytest":
            return "runner"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "pytest_"
        ):
            return "runner"  # a pytest hook implementation: it can rewrite any report
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(self._runner_target(t) for t in targets):
                return "runner"
        if (
            isinstance(node, ast.Call)
            and dotted_name(node.func).split(".")[-1] in ("setattr", "delattr")
            and node.args
        ):
            first = node.args[0]
            if dotted_name(first).split(".")[0] in RUNNER_ROOTS or (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value.split(".")[0] in RUNNER_ROOTS
            ):
                return "runner"
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and RUNNER_ENV.search(node.value)
        ):
            return "runner"
        return None

    def _runner_target(self, target: ast.AST) -> bool:
        if isinstance(target, ast.Name):
            return target.id in COLLECTION
        if isinstance(target, ast.Subscript):
            key = target.slice
            return (
                dotted_name(target.value) == "sys.modules"
                and isinstance(key, ast.Constant)
                and str(key.value).split(".")[0] in RUNNER_ROOTS
            )
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._runner_target(t) for t in target.elts)
        return (
            isinstance(target, ast.Attribute) and dotted_name(target).split(".")[0] in RUNNER_ROOTS
        )

    def _summary(self, node: ast.AST) -> Optional[str]:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and FAKE_SUMMARY.search(node.value)
        ):
            return "summary"
        return None

    def _trivial(self, node: ast.AST) -> Optional[str]:
        if (
            isinstance(node, ast.Assert)
            and isinstance(node.test, ast.Constant)
            and bool(node.test.value)
        ):
            return "trivial_assert"
        return None


def count_assertions(tree: Optional[ast.AST]) -> int:
    """``assert`` statements plus calls of ``assert*`` methods and ``pytest.raises``/``warns``."""
    if tree is None:
        return 0
    total = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            total += 1
        elif isinstance(node, ast.Call):
            name = dotted_name(node.func)
            last = name.split(".")[-1]
            if (last.startswith("assert") and "." in name) or name in (
                "pytest.raises",
                "pytest.warns",
            ):
                total += 1
    return total


def check_tamper(change: FileChange) -> None:
    """Refuse a change to a ``.py`` file that weakens the test oracle; None when it passes.

    Raises GuardError naming the file, the line and the construct when the new
    text adds a skip or xfail (``pytest.mark.skip``, ``pytest.skip``,
    ``unittest.skip``, ``self.skipTest``...), an early exit (``sys.exit``,
    ``os._exit``, ``SystemExit``, ``exit()``, ``atexit.register``), a runner
    patch (``_pytest`` imports, ``pytest_*`` hooks, assignments to
    pytest/unittest/builtins attributes or collection switches,
    ``PYTEST_ADDOPTS``-like variables), a string that looks like a test summary,
    or an ``assert`` of a constant; or when it has fewer assertions than before
    (deleting the file counts).
    """
    if not change.path.endswith(".py"):
        return
    delta = statement_delta(change.old_text, change.new_text)
    if change.new_text is not None and not delta.parses:
        return  # check_syntax reports it with the line
    # Every rule looks at one node at a time: only the statements the candidate touches can differ.
    before = sum(count_assertions(node) for node in delta.removed)
    after = sum(count_assertions(node) for node in delta.added)
    if after < before:
        gone = "deletes the file, and with it" if change.new_text is None else "removes"
        raise GuardError(
            f"the candidate {gone} {before - after} assertion(s) of {change.path}; "
            "assertions are the test oracle and may not be deleted",
            hint="keep every assertion; if an expected value is really wrong, say so to the user "
            "instead",
        )
    if change.new_text is None:
        return
    old_imported = (
        _module_runner_imports(change.old_text) if delta.old_tree is not None else frozenset()
    )
    if delta.old_tree is not None and _runner_imports(delta.removed) == _runner_imports(
        delta.added
    ):
        new_imported: AbstractSet[str] = old_imported
        old_nodes: Sequence[ast.stmt] = delta.removed
        new_nodes: Sequence[ast.stmt] = delta.added
    # new, unparsable before, or the runner imports changed: then a bare `skip` anywhere counts
    else:
        new_tree = delta.new_module()
        if new_tree is None:
            return
        new_imported = _runner_imports(new_tree.body)
        old_nodes, new_nodes = (delta.old_tree.body if delta.old_tree else []), new_tree.body
    old = Counter((r, k) for r, k, _, _ in _Scanner(old_imported).findings(old_nodes))
    seen: Dict[Tuple[str, str], int] = {}
    for rule, key, text, line in _Scanner(new_imported).findings(new_nodes):
        seen[(rule, key)] = seen.get((rule, key), 0) + 1
        if seen[(rule, key)] > old.get((rule, key), 0):
            what, hint = _WHY[rule]
            raise GuardError(
                f"the candidate adds `{text}` to {change.path} (line {line}), which {what}",
                hint=hint,
            )
