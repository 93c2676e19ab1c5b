"""Guards on a candidate patch: where it writes, whether it edits tests, how big it is.

Tests are the oracle (DESIGN.md): a candidate that edits them could make any
suite green, so it is refused unless the policy allows it.
"""

from __future__ import annotations

import posixpath
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import List, Sequence

from repairloop.errors import GuardError
from repairloop.patch.model import AppliedPatch, FileChange, GuardPolicy

_PRIVATE = {".git": "git's own data", ".repairloop": "repairloop's run data"}


def normalize_path(path: str) -> str:
    """A model-written path as relative POSIX: backslashes turned, ``./`` and ``a/../`` folded."""
    path = path.strip().replace("\\", "/")
    if not path:
        return path
    folded = posixpath.normpath(path)
    return folded[2:] if folded.startswith("./") else folded


def resolve_inside(root: Path, path: str) -> Path:
    """``root / path`` resolved (symlinks followed), checked to stay inside ``root``.

    Raises GuardError for an absolute path, a path that escapes with ``..`` or
    through a symlink, and anything under ``.git/`` or ``.repairloop/``.
    """
    hint = "name project files by their path relative to the project root, e.g. src/pkg/module.py"
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).drive or path.startswith("~"):
        raise GuardError(f"the candidate edits {path}, an absolute path", hint=hint)
    rel = normalize_path(path)
    if rel in ("", "."):
        raise GuardError(f"the candidate edits {path!r}, which is not a file path", hint=hint)
    if rel == ".." or rel.startswith("../"):
        raise GuardError(f"the candidate edits {path}, which is outside the project root", hint=hint)
    for part in PurePosixPath(rel).parts:
        if part in _PRIVATE:
            raise GuardError(
                f"the candidate edits {path}, inside {part}/ ({_PRIVATE[part]})",
                hint="change only the project's source files",
            )
    base = root.resolve()
    target = (base / rel).resolve()
    if target != base and base not in target.parents:
        raise GuardError(
            f"the candidate edits {path}, which leads outside the project root through a symbolic link",
            hint=hint,
        )
    return target


def _expansions(glob: str) -> List[str]:
    """``glob`` plus its forms where each ``**/`` matches zero directories."""
    out = [glob]
    i = 0
    while i < len(out):
        g = out[i]
        for k in range(len(g)):
            if g.startswith("**/", k) and (k == 0 or g[k - 1] == "/"):
                shorter = g[:k] + g[k + 3 :]
                if shorter not in out:
                    out.append(shorter)
        i += 1
    return out


def is_test_path(path: str, globs: Sequence[str]) -> bool:
    """True when the relative POSIX ``path`` matches one of ``globs``.

    fnmatch semantics (``*`` also crosses ``/``, case-sensitive), where ``**/``
    also matches zero directories: ``**/conftest.py`` matches ``conftest.py``.
    """
    rel = normalize_path(path)
    return any(fnmatchcase(rel, g) for glob in globs for g in _expansions(glob))


def check_guards(applied: AppliedPatch, root: Path, policy: GuardPolicy) -> None:
    """Refuse a candidate that breaks ``policy``; return None when it passes.

    Checks, first failure wins: each path stays inside ``root`` (no absolute
    path, no ``..`` escape, no symlink out, not ``.git/``/``.repairloop/``); no
    test file unless ``policy.allow_test_edits``; no binary text (NUL byte); then
    ``max_files``, ``max_changed_lines`` (added + removed) and ``max_file_bytes``.
    Raises GuardError whose message names the file and the rule.
    """
    for change in applied.changes:
        resolve_inside(root, change.path)
        if not policy.allow_test_edits and is_test_path(change.path, policy.test_globs):
            raise GuardError(
                f"the candidate edits {change.path}, a test file; fix the code under test "
                "instead (tests are the oracle)",
                hint="change the code the failing tests exercise, not the tests",
            )
        _check_text(change)
    _check_sizes(applied, policy)


def _check_text(change: FileChange) -> None:
    for text in (change.old_text, change.new_text):
        if text is not None and "\x00" in text:
            raise GuardError(
                f"the candidate edits {change.path}, a binary file (it contains NUL bytes)",
                hint="edit only text source files",
            )


def _check_sizes(applied: AppliedPatch, policy: GuardPolicy) -> None:
    hint = "make the smallest change that fixes the failing tests"
    if len(applied.changes) > policy.max_files:
        raise GuardError(
            f"the candidate touches {len(applied.changes)} files, more than the "
            f"{policy.max_files} allowed",
            hint=hint,
        )
    lines = applied.changed_lines
    if lines > policy.max_changed_lines:
        raise GuardError(
            f"the candidate changes {lines} lines (added + removed), more than the "
            f"{policy.max_changed_lines} allowed",
            hint=hint,
        )
    for change in applied.changes:
        size = len((change.new_text or "").encode("utf-8"))
        if size > policy.max_file_bytes:
            raise GuardError(
                f"the candidate makes {change.path} {size} bytes, more than the "
                f"{policy.max_file_bytes} allowed",
                hint=hint,
            )
