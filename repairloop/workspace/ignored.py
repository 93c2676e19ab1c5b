"""Git-ignored files the user's tests need, brought into the workspace.

A git workspace starts from the user's tracked and untracked non-ignored files
(``workspace.start``), but a project's tests often import a file its build
writes and ``.gitignore`` hides: setuptools-scm's ``_version.py``, a built
extension module (``_speedups.cpython-312-x86_64-linux-gnu.so``), protobuf's
``*_pb2.py``. Without it the copy fails tests the user's tree passes, and the
run would repair a different world. ``ignored_files`` picks, among the ignored
files git lists one by one (a wholly ignored directory such as ``build/``,
``.venv/`` or ``__pycache__/`` is listed as one entry and never entered):

- **generated modules next to tracked ones**: in a directory holding a
  tracked ``.py`` file, a version module (``VERSION_MODULES``), a protobuf
  module, or an extension module (this interpreter's
  ``importlib.machinery.EXTENSION_SUFFIXES``, plus ``.so`` and ``.pyd``);
- **modules the project imports**: any other ignored ``.py`` or extension
  module next to tracked ones whose module name is a word of an ``import``
  statement in a tracked Python file.

A wholly ignored directory is brought whole when it is a package the project
imports by name (``gen/`` of a code generator, beside the modules or at the
top); tools' output and environments (``TOOL_DIRS``) never are, and every
other ignored directory is left out (``left_out_dirs``).

These rules are name heuristics (word lists and an import scan without
executing anything), and they never bring a file whose name looks like a
secret or local settings (``SECRET_WORDS``): those stay out, like ``.env``.
Each file brought is at most ``MAX_FILE_BYTES`` and all together at most
``MAX_TOTAL_BYTES``; a larger one is left out and named. Every other ignored
file stays out of the workspace (``left_out``); the baseline check
(``loop.flaky.fidelity_failures``) uses them to tell a failure of the copy
from a failure of the user's tree.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, List, Optional, Sequence, Set, Tuple

from repairloop.workspace.gitcmd import run_git, zsplit

VERSION_MODULES = frozenset({"_version.py", "version.py", "__version__.py", "_version.pyi"})
PROTOBUF_SUFFIXES = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi")
EXTENSION_SUFFIXES = tuple(sorted(set(importlib.machinery.EXTENSION_SUFFIXES) | {".so", ".pyd"}))
# A name holding one of these words is never brought, whatever imports it (a heuristic).
SECRET_WORDS = ("secret", "credential", "password", "passwd", "token", "local_settings", "apikey")
MAX_FILE_BYTES = 50 * 1024 * 1024  # a built extension is rarely above a few MB
MAX_TOTAL_BYTES = 200 * 1024 * 1024
MAX_SCANNED_BYTES = 1024 * 1024  # a tracked Python file larger than this is not scanned for imports
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+[\w. \t]+import|import)[ \t][^\n]*", re.MULTILINE)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class IgnoredFiles:
    """The user's git-ignored files, as the workspace treats them; paths relative to the
    repository's top level (POSIX).

    ``brought``: copied into the workspace (and committed there, so a candidate's change to one
    shows in its diff and a revert restores it). ``too_large``: chosen but over the size limits,
    not copied. ``left_out``: every other ignored file git lists one by one; ``left_out_dirs``:
    the wholly ignored directories not brought that are not tools' output (``TOOL_DIRS``).
    """

    brought: Tuple[str, ...] = ()
    too_large: Tuple[str, ...] = ()
    left_out: Tuple[str, ...] = ()
    left_out_dirs: Tuple[str, ...] = ()


def _module_name(name: str) -> str:
    """``_speedups`` for ``_speedups.cpython-312-x86_64-linux-gnu.so`` or ``_speedups.py``."""
    for suffix in EXTENSION_SUFFIXES + (".pyi", ".py"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return ""


def _is_generated(name: str) -> bool:
    return (
        name in VERSION_MODULES
        or name.endswith(PROTOBUF_SUFFIXES)
        or name.endswith(EXTENSION_SUFFIXES)
    )


def _looks_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


def imported_words(top: Path, python_files: Iterable[str]) -> Set[str]:
    """Every word of every ``import``/``from ... import`` line of ``python_files`` (relative to
    ``top``); files that cannot be read or exceed ``MAX_SCANNED_BYTES`` are skipped."""
    words: Set[str] = set()
    for rel in python_files:
        path = top / rel
        try:
            if path.is_symlink() or path.stat().st_size > MAX_SCANNED_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in _IMPORT_LINE.findall(text):
            words.update(_WORD.findall(line))
    return words


# Wholly ignored directories that hold tools' output or environments, never a test's input: never
# brought, never part of the baseline check (a word list; a directory holding pyvenv.cfg too).
TOOL_DIRS = frozenset(
    {
        ".venv", "venv", "env", ".env", "__pycache__", ".pytest_cache", ".mypy_cache",
        ".ruff_cache", ".tox", ".nox", "build", "dist", "node_modules", ".git", ".repairloop",
        "htmlcov", ".idea", ".vscode", ".eggs", "site-packages", ".hypothesis",
        ".ipynb_checkpoints", ".cache", ".coverage_html", "_build", "wheelhouse",
        "__pypackages__", ".pdm-build", ".benchmarks",
    }
)  # fmt: skip
MAX_DIR_FILES = 2000  # files of one ignored directory looked at; a larger one is left alone


def listed_ignored(top: Path) -> Tuple[List[str], List[str]]:
    """The ignored files git lists one by one under ``top``, and the wholly ignored directories
    (``ls-files --others --ignored --directory``: one ``/``-ended entry each, listed without the
    slash) that are not tools' output (``TOOL_DIRS``, ``*.egg-info``, virtual environments)."""
    out = run_git(
        top,
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
        "--no-empty-directory",
        strip=False,
    )
    entries = [p for p in zsplit(out) if p.split("/")[0] != ".repairloop"]
    files = [p for p in entries if not p.endswith("/")]
    dirs = [p.rstrip("/") for p in entries if p.endswith("/") and _is_input_dir(top, p.rstrip("/"))]
    return files, dirs


def _is_input_dir(top: Path, rel: str) -> bool:
    name = PurePosixPath(rel).name
    if name in TOOL_DIRS or name.endswith((".egg-info", ".dist-info")) or _looks_secret(name):
        return False
    path = top / rel
    return not path.is_symlink() and not (path / "pyvenv.cfg").exists()


def _dir_files(top: Path, rel: str) -> Optional[List[str]]:
    """The files under ignored directory ``rel`` (no symbolic links, no bytecode caches), or None
    when it holds more than ``MAX_DIR_FILES``."""
    found: List[str] = []
    for directory, dirs, names in os.walk(top / rel):
        dirs[:] = [
            d for d in dirs if d not in TOOL_DIRS and not os.path.islink(os.path.join(directory, d))
        ]
        for name in names:
            path = Path(directory) / name
            if path.is_symlink() or name.endswith((".pyc", ".pyo")) or _looks_secret(name):
                continue
            found.append(path.relative_to(top).as_posix())
            if len(found) > MAX_DIR_FILES:
                return None
    return found


def ignored_files(top: Path, start: Sequence[str]) -> IgnoredFiles:
    """Choose the ignored files of the repository at ``top`` the workspace brings along.

    ``start``: the start state's paths (``workspace.start.start_files``), whose ``.py`` files
    mark the directories of the project's modules. A wholly ignored directory is brought whole
    when it is a package the project imports by name (a word of a tracked file's ``import``
    lines, holding ``.py`` files), beside its modules or at the top (``gen/`` of a code
    generator); any other is left out and named in ``left_out_dirs``. Raises GitFailed like
    any git command.
    """
    ignored, dirs = listed_ignored(top)
    if not ignored and not dirs:
        return IgnoredFiles()
    python = [p for p in start if p.endswith(".py")]
    module_dirs = {str(PurePosixPath(p).parent) for p in python}
    candidates = [
        p
        for p in ignored
        if str(PurePosixPath(p).parent) in module_dirs
        and _module_name(PurePosixPath(p).name)
        and not _looks_secret(PurePosixPath(p).name)
    ]
    chosen = [p for p in candidates if _is_generated(PurePosixPath(p).name)]
    others = [p for p in candidates if p not in chosen]
    words = imported_words(top, python) if others or dirs else set()
    chosen += [p for p in others if _module_name(PurePosixPath(p).name) in words]
    packages, left_dirs = [], []
    for rel in dirs:
        inside = _dir_files(top, rel) if PurePosixPath(rel).name in words else None
        beside = str(PurePosixPath(rel).parent) in module_dirs | {".", "src"}
        if inside and beside and any(f.endswith(".py") for f in inside):
            packages += inside
        else:
            left_dirs.append(rel)
    brought, too_large = _within_limits(top, sorted(chosen) + packages)
    taken = set(brought)
    return IgnoredFiles(
        tuple(brought),
        tuple(too_large),
        tuple(p for p in ignored if p not in taken),
        tuple(left_dirs),
    )


def _within_limits(top: Path, chosen: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(brought, too large): ``chosen`` files split by ``MAX_FILE_BYTES`` and ``MAX_TOTAL_BYTES``;
    links and what is not a file are dropped."""
    brought: List[str] = []
    too_large: List[str] = []
    total = 0
    for rel in chosen:
        path = top / rel
        try:
            size = path.lstat().st_size
        except OSError:
            continue
        if path.is_symlink() or not path.is_file():
            continue
        if size > MAX_FILE_BYTES or total + size > MAX_TOTAL_BYTES:
            too_large.append(rel)
            continue
        total += size
        brought.append(rel)
    return brought, too_large
