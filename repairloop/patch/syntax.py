"""Syntax check of a candidate's Python files, before any test runs.

A syntax error a candidate introduced is not a blocking failure kind
(DESIGN.md): the candidate is rejected and the model is told where.
"""

from __future__ import annotations

import warnings

from repairloop.errors import PatchError
from repairloop.patch.changes import AppliedPatch


def check_syntax(applied: AppliedPatch) -> None:
    """Compile every changed or created ``.py`` file (``compile(text, path, "exec")``).

    Raises PatchError "path:line: SyntaxError: msg" followed by the offending
    line (IndentationError and TabError are named as such). Deleted files and
    other extensions are skipped.
    """
    for change in applied.changes:
        if change.new_text is None or not change.path.endswith(".py"):
            continue
        try:
            with warnings.catch_warnings():
                # SyntaxWarning (e.g. an invalid escape) is not our verdict; keep stderr clean.
                warnings.simplefilter("ignore")
                compile(change.new_text, change.path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            line = (exc.text or "").rstrip("\r\n")
            where = f"{change.path}:{exc.lineno or 0}"
            shown = f"\n    {line.strip()}" if line.strip() else ""
            raise PatchError(
                f"{where}: {type(exc).__name__}: {exc.msg}{shown}",
                hint=f"the candidate breaks the syntax of {change.path}; send code that compiles",
            ) from exc
        except ValueError as exc:  # "source code string cannot contain null bytes"
            raise PatchError(
                f"{change.path}:1: SyntaxError: {exc}", hint="send text source code only"
            ) from exc
