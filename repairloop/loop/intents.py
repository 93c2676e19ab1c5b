"""Settling side effects a run journalled as intents but not as done (loop layer).

DESIGN.md: on resume, an intent without done is checked against the world
before anything is repeated; what cannot be checked is not repeated
automatically: the run stops and says what to verify.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from repairloop.errors import ProjectError
from repairloop.journal import DoneEvent, Journal
from repairloop.loop.resume import Recorded
from repairloop.types import LoopEvent, RunNote
from repairloop.workspace import apply_to_user_tree, patch_state


def settle_pending(project: Path, recorded: Recorded) -> Iterator[LoopEvent]:
    """Check each pending intent of a finished run; raise ProjectError for what needs a person."""
    if not recorded.pending:
        raise ProjectError(
            f"run {recorded.run_id} already finished; there is nothing to resume",
            hint=(
                f"see `repairloop report {recorded.run_id}`; to apply its patch to your tree: "
                f"git apply {recorded.run_dir / 'fix.patch'} (when the run wrote one); or start a "
                f"new run "
                "with `repairloop run`"
            ),
        )
    journal = Journal(recorded.run_dir)
    for intent in recorded.pending:
        action, key = intent.action, intent.key
        if action == "apply":
            yield from _settle_apply(project, recorded, journal, key)
        else:
            raise ProjectError(
                f"run {recorded.run_id} started '{action}' ({key}) and did not record its end",
                hint=f"check by hand whether '{action}' happened (see "
                f"{recorded.run_dir / 'journal.jsonl'}); "
                "repairloop will not repeat it automatically",
            )


def _settle_apply(
    project: Path, recorded: Recorded, journal: Journal, key: str
) -> Iterator[LoopEvent]:
    patch_file = recorded.run_dir / "fix.patch"
    if not patch_file.is_file() or recorded.start is None:
        raise ProjectError(
            f"run {recorded.run_id} was applying a patch that is not on record",
            hint="check your files by hand; nothing was repeated",
        )
    patch = patch_file.read_text(encoding="utf-8")
    state = patch_state(project, patch)
    if state == "applied":
        journal.record(DoneEvent(action="apply", key=key, verified="already in the files"))
        yield RunNote(
            f"the patch of run {recorded.run_id} is already in your files; recorded as done"
        )
    elif state == "not_applied":
        written = apply_to_user_tree(project, patch, recorded.start)
        journal.record(
            DoneEvent(action="apply", key=key, files=tuple(written), verified="applied on resume")
        )
        yield RunNote(f"applied the patch of run {recorded.run_id} to {', '.join(written)}")
    else:
        raise ProjectError(
            f"cannot tell whether the patch of run {recorded.run_id} is in your files",
            hint=f"compare the files it touches with {patch_file}; nothing was repeated",
        )
