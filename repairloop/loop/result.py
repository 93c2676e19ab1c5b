"""The result of a run (part of the loop layer): its RunResult, built from the run's data, and its
files.

``build_result`` turns the stop policy's Ending and the run's ``RunState`` into
the RunResult (DESIGN.md's ``run --json``); ``record_result`` writes
``fix.patch``, ``summary.json`` and the ``stopped`` journal event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Tuple

from repairloop.journal import Journal, StoppedEvent
from repairloop.loop.state import RunState
from repairloop.loop.stop import Ending
from repairloop.types import Decision, FlagKind, Iteration, RunResult, failure_kinds


def build_result(
    ending: Ending,
    state: RunState,
    *,
    run_id: str,
    run_dir: Path,
    allow_test_edits: bool,
    seconds: float,
) -> RunResult:
    """The run's RunResult from its ``state``; ``seconds`` is its wall-clock time. The patch is the
    state's ``raw_patch`` (the kept candidates' union, never the workspace's diff); what leaves the
    run is redacted once, by ``driver.drive``."""
    proof = state.evidence.proof
    notes = (
        guard_notes(allow_test_edits, state.history)
        + tuple(f"WARNING: the patch: {f}" for f in (proof.flags if proof else ()))
        + tuple(f"dropped {d}" for d in state.chain.dropped)
    )
    return RunResult(
        run_id=run_id,
        outcome=ending.outcome,
        stop_reason=ending.reason,
        stop_detail=ending.detail,
        failure_kinds=failure_kinds(state.failures, state.flaky),
        failures=tuple(state.failures),
        iterations=state.history,
        patch=state.raw_patch,
        run_dir=str(run_dir),
        fixed_tests=state.fixed_tests,
        still_failing=state.failing,
        flaky_tests=state.flaky,
        notes=notes + state.notes,
        seconds=seconds,
        evidence=state.evidence,
    )


def record_result(journal: Journal, result: RunResult) -> None:
    """Write the run's files (``fix.patch``, ``summary.json``) and its ``stopped`` event, all
    redacted.

    With the ``stopped`` event the journal holds the whole RunResult: a report
    read from it (``reports.load_run``) rebuilds the same one.
    """
    if result.patch:
        journal.write_text("fix.patch", result.patch)
    journal.write_json("summary.json", result.to_json())
    journal.record(
        StoppedEvent(
            outcome=result.outcome,
            stop_reason=result.stop_reason,
            detail=result.stop_detail,
            seconds=result.seconds,
            fixed_tests=result.fixed_tests,
            still_failing=result.still_failing,
            flaky_tests=result.flaky_tests,
            notes=result.notes,
            evidence=result.evidence,
        )
    )


# Flags of a kept candidate that the result's notes repeat as warnings.
_WARNED = (
    FlagKind.SUSPECTED_OVERFITTING,
    FlagKind.COMPENSATES,
    FlagKind.CAPABILITY,
    FlagKind.DROPS_INPUT,
    FlagKind.DELETES_CODE,
)


def guard_notes(allow_test_edits: bool, history: Sequence[Iteration]) -> Tuple[str, ...]:
    """RunResult notes that must stand out: test edits allowed, and flags of kept candidates."""
    kept = [it for it in history if it.decision is Decision.KEPT]
    notes = []
    if allow_test_edits:
        edited = sorted({f.detail for it in kept for f in it.flags if f.kind is FlagKind.TEST_EDIT})
        notes.append(
            "WARNING: test edits were allowed (--allow-test-edits): a passing suite proves less; "
            + (
                f"the patch changes tests: {', '.join(edited)}"
                if edited
                else "the patch changes no test"
            )
        )
    for it in kept:
        notes += [f"WARNING: iteration {it.number}: {f}" for f in it.flags if f.kind in _WARNED]
    return tuple(notes)
