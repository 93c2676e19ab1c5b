"""Bench cases on disk: finding them, reading ``case.toml``, the shard a machine runs, the copy the
loop sees.

A case is a directory holding a project and a ``case.toml`` with optional
``test_cmd``, ``timeout`` (seconds), ``description``, ``family`` and
``single_mutation`` (true when one mutation can fix it). It may also ship
``reference.patch`` (the intended fix, in ``git diff`` format) and
``hidden_tests/`` (more tests, laid out like the project: they are laid over
it after the loop stops). Neither is ever part of the copy the loop repairs.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from repairloop.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASE_FILE = "case.toml"
REFERENCE = "reference.patch"
HIDDEN = "hidden_tests"
_CASE_KEYS = {"test_cmd", "timeout", "description", "family", "single_mutation"}
_BENCH_FILES = {
    CASE_FILE,
    REFERENCE,
    HIDDEN,
}  # at the case's top level only: never shown to the loop
_JUNK = {"__pycache__", ".pytest_cache", ".repairloop"}


@dataclass(frozen=True)
class Case:
    """One bench case: its directory, what ``case.toml`` says, and what judges a plausible patch.

    ``reference`` is the path of ``reference.patch`` and ``hidden`` the
    ``hidden_tests/`` directory, None when the case ships none.
    """

    path: Path
    meta: Dict[str, Any]
    reference: Optional[Path] = None
    hidden: Optional[Path] = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def family(self) -> str:
        return str(self.meta.get("family", ""))

    @property
    def single_mutation(self) -> bool:
        return bool(self.meta.get("single_mutation", True))

    @property
    def hidden_files(self) -> Tuple[str, ...]:
        """The hidden tests' files, relative to the project root they are laid over, sorted."""
        if self.hidden is None:
            return ()
        return tuple(
            sorted(
                p.relative_to(self.hidden).as_posix()
                for p in self.hidden.rglob("*")
                if p.is_file() and not _JUNK & set(p.relative_to(self.hidden).parts)
            )
        )


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``count`` slices of a bench (``--shard I/N``)."""

    index: int
    count: int

    def to_json(self) -> Dict[str, int]:
        return {"index": self.index, "count": self.count}


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> Shard(2, 4). Raises ConfigError for anything but I/N with 1 <= I <= N."""
    index, slash, count = text.strip().partition("/")
    try:
        shard = Shard(int(index), int(count))
    except ValueError:
        shard = Shard(0, 0)
    if not slash or not 1 <= shard.index <= shard.count:
        raise ConfigError(
            f"--shard {text!r} is not I/N with 1 <= I <= N",
            hint="e.g. --shard 1/4 runs the first of four slices",
        )
    return shard


def select_shard(cases: Sequence[Case], shard: Optional[Shard]) -> List[Case]:
    """The cases of ``shard``: every N-th case of the name-sorted list, starting at the I-th.

    Deterministic for one set of cases (whatever machine runs it), the N slices
    cover every case exactly once, and their sizes differ by at most one. Taking
    every N-th case rather than a block spreads each kind of case over the shards.
    """
    ordered = sorted(cases, key=lambda c: c.name)
    if shard is None:
        return ordered
    return ordered[shard.index - 1 :: shard.count]


def find_cases(cases_dir: Path) -> List[Case]:
    """Case directories (those holding a case.toml), read and sorted by name.

    Raises ConfigError if there are none, or a case's files are not what this module's docstring
    says.
    """
    if not cases_dir.is_dir():
        raise ConfigError(
            f"{cases_dir} is not a directory", hint="pass a directory of cases, e.g. fixtures/bench"
        )
    paths = sorted(p.parent for p in cases_dir.glob(f"*/{CASE_FILE}"))
    if not paths:
        raise ConfigError(
            f"no cases in {cases_dir}", hint=f"each case is a directory with a {CASE_FILE}"
        )
    return [read_case(p) for p in paths]


def read_case(path: Path) -> Case:
    """The case in ``path``. Raises ConfigError for bad TOML, an unknown key or a malformed
    reference or hidden tests."""
    try:
        data = tomllib.loads((path / CASE_FILE).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(
            f"cannot read {path / CASE_FILE}: {err}", hint="fix the TOML syntax"
        ) from None
    unknown = set(data) - _CASE_KEYS
    if unknown:
        raise ConfigError(
            f"unknown key '{sorted(unknown)[0]}' in {path / CASE_FILE}",
            hint=f"known keys: {', '.join(sorted(_CASE_KEYS))}",
        )
    reference, hidden = path / REFERENCE, path / HIDDEN
    if reference.exists() and not reference.is_file():
        raise ConfigError(
            f"{reference} is not a file",
            hint="the reference fix is one patch file in git diff format",
        )
    if hidden.exists() and not hidden.is_dir():
        raise ConfigError(
            f"{hidden} is not a directory", hint="hidden tests are files laid out like the project"
        )
    case = Case(
        path,
        dict(data),
        reference if reference.is_file() else None,
        hidden if hidden.is_dir() else None,
    )
    if case.hidden is not None and not case.hidden_files:
        raise ConfigError(
            f"{hidden} holds no files", hint="add the held-back tests, or remove the directory"
        )
    return case


def _ignore(top: Path) -> Callable[[str, List[str]], List[str]]:
    def ignore(directory: str, names: List[str]) -> List[str]:
        skip = _JUNK | (_BENCH_FILES if Path(directory) == top else set())
        return [n for n in names if n in skip]

    return ignore


def copy_project(case: Case, dest: Path) -> Path:
    """The case's project copied to ``dest`` without its bench files (case.toml, reference, hidden
    tests)."""
    shutil.copytree(case.path, dest, ignore=_ignore(case.path))
    return dest


def lay_over(source: Path, root: Path) -> Tuple[str, ...]:
    """Copy every file under ``source`` to the same relative path under ``root``; the paths copied,
    sorted."""
    copied = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if path.is_file() and not _JUNK & set(rel.parts):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, root / rel)
            copied.append(rel.as_posix())
    return tuple(copied)
