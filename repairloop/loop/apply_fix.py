"""``--apply`` (part of the loop layer): the final patch written to the user's tree, journalled as
an intent before and done after (DESIGN.md, "Workspace, sandbox and side effects")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

from repairloop.errors import ProjectError
from repairloop.journal import DoneEvent, IntentEvent, Journal
from repairloop.textutil import REDACTION_MARKER
from repairloop.types import LoopEvent, Outcome, RunNote, RunResult, RunStopped
from repairloop.workspace import Workspace, apply_to_user_tree
from repairloop.workspace.repository import locate


def apply_command(project: Path, patch_file: str) -> str:
    """The ``git apply`` command that applies a run's ``patch_file`` (paths relative to
    ``project``) from the project directory: with ``--directory=PREFIX`` when the project is a
    subdirectory of its repository, as git reads a patch's paths from the repository's top (plain
    ``git apply`` there skips every file and still exits 0). Raises nothing."""
    try:
        found = locate(project)
    except ProjectError:
        found = None
    prefix = found[1] if found else ""
    return f"git apply --directory={prefix} {patch_file}" if prefix else f"git apply {patch_file}"


def apply_fix(
    ws: Workspace, journal: Journal, result: RunResult, patch: str
) -> Tuple[RunResult, List[str]]:
    """Write ``patch`` (unredacted) to the user's tree, ``ws.project``, checked against the start
    state ``ws.start``: (the result marked applied, the files written).

    Raises ProjectError, naming the run and where its patch is kept, when a
    file the patch touches changed since the run started (nothing is written).
    """
    masked = [
        line for line in patch.splitlines() if line.startswith("+") and REDACTION_MARKER in line
    ]
    if masked:
        raise ProjectError(
            f"not applied: the patch of run {result.run_id} writes a redaction placeholder "
            f"({masked[0][:80]!r}); masked text is never content",
            hint="ask for a new run; the model saw a masked value and copied the mask",
        )
    key = f"{result.run_id}:apply"
    journal.record(IntentEvent(action="apply", key=key, files=tuple(patch_files(patch))))
    try:
        written = apply_to_user_tree(ws.project, patch, ws.start)
    except ProjectError as err:
        saved = Path(result.run_dir) / "fix.patch"
        raise ProjectError(
            f"{err.message} (run {result.run_id}, outcome {result.outcome.value})",
            hint=f"the patch is kept as {saved}; review it, then "
            f"`{apply_command(ws.project, str(saved))}`",
        ) from err
    journal.record(DoneEvent(action="apply", key=key, files=tuple(written)))
    applied = replace(result, applied=True)
    journal.write_json("summary.json", applied.to_json())
    return applied, written


def maybe_apply(
    result: RunResult,
    raw_patch: Optional[str],
    ws: Workspace,
    journal: Journal,
    confirm: Optional[Callable[[str], bool]],
) -> Iterator[LoopEvent]:
    """``--apply``: the fix or partial fix written to the user's tree, after ``confirm`` (shown the
    redacted patch) said yes; events say what happened. Raises ProjectError like ``apply_fix``."""
    if not result.patch or result.outcome not in (Outcome.FIXED, Outcome.PARTIALLY_FIXED):
        return
    if confirm is not None and not confirm(journal.redact(result.patch)):
        yield RunNote(
            "not applied: declined; the patch is in " + str(Path(result.run_dir) / "fix.patch")
        )
        return
    applied, written = apply_fix(ws, journal, result, raw_patch or result.patch)
    yield RunStopped(applied, f"applied to {', '.join(written)}")


def patch_files(patch: str) -> List[str]:
    """The paths a unified diff writes (its ``+++ b/`` lines)."""
    return [line[6:] for line in patch.splitlines() if line.startswith("+++ b/")]
