"""Fingerprints of the files that decide a verdict (tests, test configuration), taken around every
run.

A candidate's code runs while its tests run and can rewrite a test file (an
assertion turned into ``pass``) or add one (a ``conftest.py``) before pytest
reads it, or write compiled bytecode that a later import runs instead of a
source or a test. Comparing the fingerprint of those files before and after a
run tells; the loop then refuses the candidate (DESIGN.md "The verdict").
Bytecode is always fingerprinted: test runs write none (PYTHONDONTWRITEBYTECODE)
and remove any before they start (``runner.remove_bytecode``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Dict, List

from repairloop.types import NOT_COPIED, is_bytecode
from repairloop.workspace.gitcmd import hash_file

# Directories a fingerprint never walks into: repositories' data, caches, environments.
_SKIPPED = NOT_COPIED - {"__pycache__"}  # bytecode is fingerprinted

Fingerprint = Dict[
    str, str
]  # project-relative POSIX path -> sha256 of the bytes (or the symlink target)


def fingerprint(root: Path, guarded: Callable[[str], bool]) -> Fingerprint:
    """sha256 of every file under ``root`` whose project-relative path ``guarded`` accepts, and of
    every compiled bytecode file.

    Symbolic links are fingerprinted by their target text and never followed
    into directories. Unreadable files hash as "unreadable".
    """
    prints: Fingerprint = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIPPED]
        base = Path(directory)
        for name in files + [d for d in dirs if (base / d).is_symlink()]:
            rel = (base / name).relative_to(root).as_posix()
            if guarded(rel) or is_bytecode(rel):
                try:
                    prints[rel] = hash_file(base / name) or ""
                except OSError:
                    prints[rel] = "unreadable"
    return prints


def changed_files(before: Fingerprint, after: Fingerprint) -> List[str]:
    """Paths created, deleted or changed between two fingerprints, sorted; bytecode only when
    created or changed (a run starts by removing what an earlier one left)."""
    return sorted(
        p
        for p in set(before) | set(after)
        if before.get(p) != after.get(p) and not (is_bytecode(p) and p not in after)
    )
