"""No-op candidates: a change to comments, docstrings or whitespace cannot fix a failing test.

A test that failed at the baseline and passed at a later run was flaky, not
fixed, whatever the candidate in between changed; a candidate whose Python
files compile to the same code (``ast`` without docstrings) is refused before
it is tested, so such a pass is never credited to it (DESIGN.md "The verdict").
A docstring can hold a doctest's expected output: in a module collected for its
doctests a change of those examples is a change (of tests, which the guards allow
only with ``allow_test_edits``).
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from repairloop.errors import PatchError
from repairloop.patch.changes import AppliedPatch, FileChange
from repairloop.textutil import doctest_examples


def _code(text: Optional[str]) -> Optional[str]:
    """The code of ``text`` without docstrings, as ``ast.dump``; None when it does not parse."""
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
        ):
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def changes_code(change: FileChange) -> bool:
    """False only for a Python file whose old and new texts are the same code (comments, docstrings,
    layout)."""
    if not change.path.endswith(".py") or change.old_text is None or change.new_text is None:
        return True
    old, new = _code(change.old_text), _code(change.new_text)
    return old is None or new is None or old != new


def check_effective(
    applied: AppliedPatch, has_doctests: Callable[[str], bool] = lambda path: False
) -> None:
    """Raise PatchError when no change of ``applied`` changes code (a structural error: back to the
    model).

    ``has_doctests(path)`` is True for a module whose doctests the tests collect: a change of its
    doctest examples changes what runs.
    """

    def effective(change: FileChange) -> bool:
        return changes_code(change) or (
            has_doctests(change.path)
            and doctest_examples(change.old_text) != doctest_examples(change.new_text)
        )

    if applied.changes and not any(effective(c) for c in applied.changes):
        paths = ", ".join(c.path for c in applied.changes)
        raise PatchError(
            f"the candidate changes no executable code in {paths} (only comments, docstrings or "
            f"whitespace); "
            "such a change cannot fix a failing test",
            hint="change the code the failing test exercises",
        )
