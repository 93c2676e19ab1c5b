"""New files in a candidate: scratch files are dropped, the rest must sit in source directories.

A model sometimes writes a note, a debugging script or a copy of the module
next to its fix. Such a file is not part of the patch: a created file stays
only when something refers to it (a Python module is imported, another file
is named) by the candidate's other files or, failing that, by the project.
A created file that stays must lie in a source directory: one of
``GuardPolicy.source_dirs`` when given, else a directory that already holds
non-test Python code (or below one), never in a hidden directory.
"""

from __future__ import annotations

import ast
import os
import posixpath
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Set, Tuple

from repairloop.errors import GuardError, PatchError
from repairloop.patch.changes import AppliedPatch, FileChange, GuardPolicy
from repairloop.types import read_inside

MAX_SCANNED_FILES = 3000  # project files read to look for an import of a new module
_SKIP_DIRS = frozenset(
    {".git", ".repairloop", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox"}
)


def _imported_names(text: str) -> Set[str]:
    """Every dotted part and name an ``import``/``from ... import`` of ``text`` mentions."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.update(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            names.update((node.module or "").split("."))
            names.update(alias.name for alias in node.names)
    return names


def _refers_to(path: str, text: str, kept_paths: List[str]) -> bool:
    if path.endswith("/__init__.py") or path == "__init__.py":
        package = posixpath.dirname(path)
        if any(p != path and p.startswith(package + "/") for p in kept_paths):
            return True  # the package of a module that stays
        return bool(package) and posixpath.basename(package) in _imported_names(text)
    if path.endswith(".py"):
        return posixpath.basename(path)[:-3] in _imported_names(text)
    return posixpath.basename(path) in text


def _project_texts(root: Path, exclude: Set[str]) -> Iterator[str]:
    """Texts of the project's source and configuration files, at most MAX_SCANNED_FILES of them."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            rel = Path(dirpath, name).relative_to(root).as_posix()
            if rel in exclude or not name.endswith(
                (".py", ".toml", ".cfg", ".ini", ".json", ".yaml", ".yml")
            ):
                continue
            seen += 1
            if seen > MAX_SCANNED_FILES:
                return
            text = read_inside(root, rel)  # no link followed out of the tree, no device read
            if text is not None:
                yield text


def split_scratch(
    applied: AppliedPatch, root: Path, is_test: Callable[[str], bool] = lambda path: False
) -> Tuple[AppliedPatch, Tuple[str, ...]]:
    """(the candidate without scratch files, the scratch files' paths).

    Edited and deleted files always stay, and so do created test files (the
    runner finds them by name; the guards decided whether they may exist); a
    created file stays when a file that stays refers to it, or else when an
    unchanged project file does. Raises PatchError when nothing but scratch
    files is left.
    """
    kept: List[FileChange] = [
        c for c in applied.changes if c.old_text is not None or is_test(c.path)
    ]
    pending: List[FileChange] = [c for c in applied.changes if c not in kept]
    grew = True
    while grew and pending:
        grew = False
        for change in list(pending):
            paths = [c.path for c in kept]
            if any(_refers_to(change.path, c.new_text or "", paths) for c in kept if c.new_text):
                kept.append(change)
                pending.remove(change)
                grew = True
    if pending:
        touched = {c.path for c in applied.changes}
        texts = _project_texts(root, touched)
        pending_paths = {c.path for c in pending}
        for text in texts:
            for change in [c for c in pending if c.path in pending_paths]:
                if _refers_to(change.path, text, [c.path for c in kept]):
                    pending_paths.discard(change.path)
            if not pending_paths:
                break
        kept += [c for c in pending if c.path not in pending_paths]
        pending = [c for c in pending if c.path in pending_paths]
    if not kept:
        raise PatchError(
            "the candidate only creates files that nothing refers to ("
            + ", ".join(c.path for c in pending)
            + "); scratch files are not part of a fix",
            hint="change the existing code that the failing tests exercise",
        )
    order = {c.path: i for i, c in enumerate(applied.changes)}
    kept.sort(key=lambda c: order[c.path])
    return replace(applied, changes=tuple(kept)), tuple(c.path for c in pending)


def _has_source(directory: Path, root: Path, is_test: Callable[[str], bool]) -> bool:
    try:
        entries = list(directory.iterdir())
    except OSError:
        return False
    for entry in entries:
        if entry.suffix == ".py" and entry.is_file():
            rel = entry.relative_to(root).as_posix()
            if not is_test(rel) and entry.name not in ("setup.py", "noxfile.py", "conftest.py"):
                return True
    return False


def _source_dir_for(path: str, root: Path, is_test: Callable[[str], bool]) -> Optional[str]:
    """The existing directory holding non-test Python code that ``path`` lies in, if any."""
    parent = posixpath.dirname(path)
    while True:
        directory = root / parent if parent else root
        if directory.is_dir():
            return (parent or ".") if _has_source(directory, root, is_test) else None
        if not parent:
            return None
        parent = posixpath.dirname(parent)


def check_new_files(
    applied: AppliedPatch, root: Path, policy: GuardPolicy, is_test: Callable[[str], bool]
) -> None:
    """Refuse a created file outside the source directories; None when all are inside.

    With ``policy.source_dirs`` a new file must lie under one of them ("." is
    the root). Without, its nearest existing directory must hold non-test
    Python code (a new test file may go beside the tests when test edits are
    allowed). A hidden directory (``.name``) is never a source directory.
    Raises GuardError naming the file.
    """
    for change in applied.changes:
        if change.old_text is not None:
            continue
        path = change.path
        hint = "put new code in the package that uses it, next to existing modules" + (
            "" if policy.source_dirs else "; or set source_dirs in the configuration"
        )
        if any(part.startswith(".") for part in path.split("/")[:-1]):
            raise GuardError(f"the candidate creates {path}, in a hidden directory", hint=hint)
        if policy.source_dirs:
            dirs = [d.strip("/") for d in policy.source_dirs]
            if not any(d in ("", ".") or path.startswith(d + "/") for d in dirs):
                raise GuardError(
                    f"the candidate creates {path}, outside the source directories "
                    f"({', '.join(policy.source_dirs)})",
                    hint=hint,
                )
            continue
        if policy.allow_test_edits and is_test(path):
            continue
        if _source_dir_for(path, root, is_test) is None:
            raise GuardError(
                f"the candidate creates {path}, outside the project's source directories "
                "(no existing non-test Python code there)",
                hint=hint,
            )
