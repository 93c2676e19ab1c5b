"""The end of a run (part of the loop layer): its RunResult, its files, and ``--apply``.

``build_result`` turns the stop policy's Ending and the run's state into the
RunResult; ``record_result`` writes ``fix.patch``, ``summary.json`` and the
``stopped`` journal event; ``apply_fix`` writes the final patch to the user's
tree, journalled as an intent before and done after (DESIGN.md, "Workspace,
sandbox and side effects").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from repairloop.errors import ProjectError
from repairloop.journal import DoneEvent, IntentEvent, Journal, StoppedEvent
from repairloop.loop.stop import Ending
from repairloop.textutil import REDACTION_MARKER
from repairloop.types import (
    Decision,
    EventKind,
    Evidence,
    Failure,
    FlagKind,
    Iteration,
    LoopEvent,
    Outcome,
    RunResult,
    failure_kinds,
)
from repairloop.workspace import StartState, apply_to_user_tree


def build_result(ending: Ending, *, run_id: str, run_dir: Path, patch: Optional[str], failures: Sequence[Failure],
                 history: Tuple[Iteration, ...], baseline_failing: Sequence[str], failing: Tuple[str, ...],
                 flaky: Tuple[str, ...], dropped: Sequence[str], allow_test_edits: bool, seconds: float,
                 evidence: Evidence, run_notes: Sequence[str] = ()) -> RunResult:
    """The run's RunResult (DESIGN.md's ``run --json``); ``seconds`` is its wall-clock time; ``run_notes``
    say how the run went (the per-test timeout it chose, degraded fault localisation)."""
    fixed = tuple(t for t in baseline_failing if t not in failing and t not in flaky)
    notes = guard_notes(allow_test_edits, history) + tuple(f"dropped {d}" for d in dropped) + tuple(run_notes)
    return RunResult(
        run_id=run_id, outcome=ending.outcome, stop_reason=ending.reason, stop_detail=ending.detail,
        failure_kinds=failure_kinds(failures, flaky), failures=tuple(failures), iterations=history, patch=patch,
        run_dir=str(run_dir), fixed_tests=fixed, still_failing=failing, flaky_tests=flaky, notes=notes, seconds=seconds,
        evidence=evidence,
    )


def record_result(journal: Journal, result: RunResult) -> None:
    """Write the run's files (``fix.patch``, ``summary.json``) and its ``stopped`` event, all redacted.

    With the ``stopped`` event the journal holds the whole RunResult: a report
    read from it (``reports.load_run``) rebuilds the same one.
    """
    if result.patch:
        journal.write_text("fix.patch", result.patch)
    journal.write_json("summary.json", result.to_json())
    journal.record(StoppedEvent(outcome=result.outcome, stop_reason=result.stop_reason, detail=result.stop_detail,
                                seconds=result.seconds, fixed_tests=result.fixed_tests,
                                still_failing=result.still_failing, flaky_tests=result.flaky_tests, notes=result.notes,
                                evidence=result.evidence))


def apply_fix(project: Path, start: StartState, journal: Journal, result: RunResult, patch: str) -> Tuple[RunResult, List[str]]:
    """Write ``patch`` (unredacted) to the user's tree: (the result marked applied, the files written).

    Raises ProjectError, naming the run and where its patch is kept, when a
    file the patch touches changed since the run started (nothing is written).
    """
    masked = [line for line in patch.splitlines() if line.startswith("+") and REDACTION_MARKER in line]
    if masked:
        raise ProjectError(f"not applied: the patch of run {result.run_id} writes a redaction placeholder "
                           f"({masked[0][:80]!r}); masked text is never content",
                           hint="ask for a new run; the model saw a masked value and copied the mask")
    key = f"{result.run_id}:apply"
    journal.record(IntentEvent(action="apply", key=key, files=tuple(patch_files(patch))))
    try:
        written = apply_to_user_tree(project, patch, start)
    except ProjectError as err:
        saved = Path(result.run_dir) / "fix.patch"
        raise ProjectError(f"{err.message} (run {result.run_id}, outcome {result.outcome.value})",
                           hint=f"the patch is kept as {saved}; review it, then `git apply {saved}`") from err
    journal.record(DoneEvent(action="apply", key=key, files=tuple(written)))
    applied = replace(result, applied=True)
    journal.write_json("summary.json", applied.to_json())
    return applied, written


def maybe_apply(result: RunResult, confirm: Optional[Callable[[str], bool]], project: Path, start: StartState,
                journal: Journal, raw_patch: Optional[str]) -> Iterator[LoopEvent]:
    """``--apply``: the fix or partial fix written to the user's tree, after ``confirm`` (shown the redacted
    patch) said yes; events say what happened. Raises ProjectError like ``apply_fix``."""
    if not result.patch or result.outcome not in (Outcome.FIXED, Outcome.PARTIALLY_FIXED):
        return
    if confirm is not None and not confirm(journal.redact(result.patch)):
        yield LoopEvent(EventKind.NOTE, "not applied: declined; the patch is in " + str(Path(result.run_dir) / "fix.patch"))
        return
    applied, written = apply_fix(project, start, journal, result, raw_patch or result.patch)
    yield LoopEvent(EventKind.STOPPED, f"applied to {', '.join(written)}", result=applied)


def guard_notes(allow_test_edits: bool, history: Sequence[Iteration]) -> Tuple[str, ...]:
    """RunResult notes that must stand out: test edits allowed, and flags of kept candidates."""
    kept = [it for it in history if it.decision is Decision.KEPT]
    notes = []
    if allow_test_edits:
        edited = sorted({f.detail for it in kept for f in it.flags if f.kind is FlagKind.TEST_EDIT})
        notes.append("WARNING: test edits were allowed (--allow-test-edits): a passing suite proves less; "
                     + (f"the patch changes tests: {', '.join(edited)}" if edited else "the patch changes no test"))
    for it in kept:
        notes += [f"WARNING: iteration {it.number}: {f}" for f in it.flags
                  if f.kind in (FlagKind.SUSPECTED_OVERFITTING, FlagKind.COMPENSATES)]
    return tuple(notes)


def patch_files(patch: str) -> List[str]:
    """The paths a unified diff writes (its ``+++ b/`` lines)."""
    return [line[6:] for line in patch.splitlines() if line.startswith("+++ b/")]
