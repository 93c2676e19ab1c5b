"""Candidate patches: parse a model's answer, compute new file texts, guard, syntax-check.

Pure: files are read under a root and new texts returned; the workspace writes
them. Accepts unified diffs as models write them (fenced, prose around, wrong
counts, ``@@`` without numbers, no ``a/``/``b/``, CRLF...) and SEARCH/REPLACE
blocks; locates each block exact, then whitespace-insensitive, then fuzzy
(rapidfuzz), and otherwise says which block failed and what is closest.

Only this package imports unidiff; rapidfuzz is shared with ``stop.py``.
"""

from __future__ import annotations

from repairloop.patch.apply import apply_answer, parse_answer
from repairloop.patch.changes import AppliedPatch, FileChange, FileEdit, GuardPolicy, Hunk
from repairloop.patch.guards import check_guards
from repairloop.patch.signature import change_signature
from repairloop.patch.syntax import check_syntax

__all__ = [
    "AppliedPatch",
    "FileChange",
    "FileEdit",
    "GuardPolicy",
    "Hunk",
    "apply_answer",
    "change_signature",
    "check_guards",
    "check_syntax",
    "parse_answer",
]
