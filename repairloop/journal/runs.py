"""Where runs live: run ids, ``<project>/.repairloop/runs/<run_id>/``, finding a run by id or
prefix."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, List, Optional

from repairloop.errors import ProjectError

Clock = Callable[[], datetime]
JOURNAL = "journal.jsonl"  # the journal's file name inside a run directory


def utcnow() -> datetime:
    """The current time, UTC (the journal's default clock)."""
    return datetime.now(timezone.utc)


def new_run_id(clock: Clock = utcnow) -> str:
    """A sortable, unique run id: UTC ``YYYYmmdd-HHMMSS-xxxx`` (4 random hex digits)."""
    return f"{clock():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def state_dir(project: Path) -> Path:
    """``<project>/.repairloop``: runs, worktree registry, lock."""
    return Path(project) / ".repairloop"


def run_dir_for(project: Path, run_id: str) -> Path:
    """``<project>/.repairloop/runs/<run_id>`` (not created)."""
    return state_dir(project) / "runs" / run_id


def list_runs(project: Path) -> List[Path]:
    """Run directories of the project, newest first (run ids sort by time)."""
    runs = state_dir(project) / "runs"
    if not runs.is_dir():
        return []
    return sorted(
        (p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.name,
        reverse=True,
    )


def resolve_run(project: Path, ref: Optional[str]) -> Path:
    """The run dir for ``ref``: None or "latest" -> newest; else an id or a unique prefix.

    Raises ProjectError when there is no run, no match, or the prefix is ambiguous.
    """
    runs = list_runs(project)
    if not runs:
        raise ProjectError(
            f"no repairloop runs in {state_dir(project) / 'runs'}",
            hint="start one with `repairloop run`",
        )
    if ref is None or ref == "latest":
        return runs[0]
    exact = [p for p in runs if p.name == ref]
    matches = exact or [p for p in runs if p.name.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ProjectError(
            f"no run {ref!r} in {state_dir(project) / 'runs'}",
            hint=f"use `latest` or one of: {', '.join(p.name for p in runs[:5])}",
        )
    raise ProjectError(
        f"run id prefix {ref!r} is ambiguous: {', '.join(p.name for p in matches[:5])}",
        hint="give more characters of the run id",
    )
