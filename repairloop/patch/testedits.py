"""Test content a change edits, found by content: a test file that no test glob names is still a
test.

A test is a ``test*`` function with an assertion, at module level or in a
``Test*`` class or a TestCase subclass: how pytest finds tests by default.
In a module collected for its doctests (``--doctest-modules``), the doctest
examples of its docstrings, their expected output included, are tests too.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from repairloop.patch.changes import FileChange, line_opcodes
from repairloop.patch.forgery import dotted_name
from repairloop.patch.statements import parse_module
from repairloop.patch.tamper import count_assertions
from repairloop.textutil import doctest_examples


def _is_test_function(node: ast.AST) -> bool:
    """A ``test*`` function that asserts something: pytest's default discovery, narrowed."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.name.startswith(
        "test"
    ):
        return False
    return count_assertions(node) > 0


def _test_spans(tree: ast.AST) -> List[Tuple[str, int, int]]:
    """(name, first line, last line) of module-level tests and tests of ``Test*``/TestCase
    classes."""
    spans = []
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_test_function(node):
            spans.append((node.name, _first_line(node), node.end_lineno or node.lineno))
        elif isinstance(node, ast.ClassDef):
            bases = {dotted_name(b).split(".")[-1] for b in node.bases}
            if node.name.startswith("Test") or "TestCase" in bases:
                spans += [
                    (f"{node.name}.{item.name}", _first_line(item), item.end_lineno or item.lineno)
                    for item in node.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and _is_test_function(item)
                ]
    return spans


def _first_line(node: ast.AST) -> int:
    decorators: List[ast.expr] = getattr(node, "decorator_list", [])
    line: int = getattr(node, "lineno", 0)
    return min([d.lineno for d in decorators] + [line])


def edited_tests(change: FileChange) -> List[str]:
    """Test functions whose lines the change edits or deletes, found by content, not by path.

    A test is a ``test*`` function with an assertion, at module level or in a
    ``Test*`` class or a TestCase subclass: how pytest finds tests by default.
    This catches an edited expected value in a test file that no test glob
    names. Returns qualified names (``TestX.test_y``); [] for non-Python files.
    """
    if change.old_text is None or not change.path.endswith(".py"):
        return []
    tree = parse_module(change.old_text)
    if tree is None:
        return []
    # Old 1-based line numbers touched; an insertion between lines k and k+1 is k + 0.5,
    # so lines added right after a test's last line do not count as editing it.
    changed: Set[float] = set()
    for tag, i1, i2, _, _ in line_opcodes(change.old_text, change.new_text):
        if tag == "insert":
            changed.add(i1 + 0.5)
        elif tag != "equal":
            changed.update(range(i1 + 1, i2 + 1))
    return [
        name for name, start, end in _test_spans(tree) if any(start <= n <= end for n in changed)
    ]


def doctest_edits(change: FileChange) -> List[str]:
    """Owners whose doctest examples (source or expected output) ``change`` edits, adds or deletes,
    and ``__doc__``/``__test__`` written by code (a docstring rewritten at import time), sorted."""
    if not change.path.endswith(".py"):
        return []
    old, new = doctest_examples(change.old_text), doctest_examples(change.new_text)
    owners = {owner for owner, _, _ in (old - new) + (new - old)}
    if _writes_doc(change.new_text) > _writes_doc(change.old_text):
        owners.add("__doc__ or __test__ written by code")
    return sorted(owners)


def _writes_doc(text: Optional[str]) -> int:
    """How often code assigns ``__doc__``/``__test__`` or names them in a string (``setattr(f,
    "__doc__", ...)``)."""
    tree = parse_module(text or "")
    if tree is None:
        return 0
    count = 0
    for node in ast.walk(tree):
        stored = isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del))
        name = (
            node.attr
            if isinstance(node, ast.Attribute)
            else node.id
            if isinstance(node, ast.Name)
            else None
        )
        if (stored and name in _DOC_NAMES) or (
            isinstance(node, ast.Constant) and node.value in _DOC_NAMES
        ):
            count += 1
    return count


_DOC_NAMES = ("__doc__", "__test__")
