"""Reading one run back from its journal into a ``RunReport`` (``load_run``).

The events of ``<project>/.repairloop/runs/<run_id>/journal.jsonl`` are read as
records (``journal.read_events``) and folded in order: the run-level ones
(start, sandbox, baseline, classification, flaky tests, the stop) fill the
RunResult and the report's own facts; each ``iteration`` event closes an
iteration, taking the notes of the events since the previous one; a
``resumed`` event starts the iterations over (a resume replays the run from
its baseline); interruptions, errors and intents become the run's notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import List, Optional, Tuple

from repairloop.journal import (
    AnswerTruncatedEvent,
    BaselineEvent,
    CandidateRejectedEvent,
    ClassifiedEvent,
    CrashedEvent,
    DoneEvent,
    Entry,
    ErrorEvent,
    EscalateEvent,
    FlakyEvent,
    IntentEvent,
    InterruptedEvent,
    IterationEvent,
    ModelDroppedEvent,
    ModelErrorEvent,
    ModelRetryEvent,
    ProofEvent,
    ProposalErrorEvent,
    ProposalEvent,
    PushRefusedEvent,
    ReadEvent,
    ResumedEvent,
    SandboxEvent,
    StartEvent,
    StoppedEvent,
    TestFilesEvent,
    TestsSummary,
    UnknownEvent,
    WorkspaceEvent,
    read_events,
)
from repairloop.reports.run_report import IterationDetail, RunReport, RunStatus, seconds_between
from repairloop.types import (
    Failure,
    Iteration,
    Outcome,
    RunResult,
    SandboxStatus,
    StopReason,
    TestFiles,
    failure_kinds,
)


def load_run(run_dir: Path) -> RunReport:
    """Read one run directory into a RunReport.

    Raises ProjectError (from ``journal.read_events``) when a journal line
    before the last is damaged; a torn last line, or an event this version
    cannot read, becomes a warning.
    """
    run_dir = Path(run_dir)
    entries, warnings = read_events(run_dir)
    return build_report(run_dir, entries, warnings)


@dataclass
class _Fold:
    """What the events said so far."""

    run_id: str
    project: str = ""
    chain: Tuple[str, ...] = ()
    status: RunStatus = RunStatus.INCOMPLETE
    detail: str = ""
    baseline: Optional[TestsSummary] = None
    failures: Tuple[Failure, ...] = ()
    flaky: Tuple[str, ...] = ()
    sandbox: Optional[SandboxStatus] = None
    applied: bool = False
    stopped: Optional[StoppedEvent] = None
    test_files: Optional[TestFiles] = None
    iterations: List[Iteration] = field(default_factory=list)
    details: List[IterationDetail] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # the run's
    pending: List[str] = field(default_factory=list)  # since the last iteration: the next one's


def build_report(run_dir: Path, entries: List[Entry], warnings: List[str]) -> RunReport:
    """Fold the journal's entries (and ``run_dir/fix.patch``) into a RunReport."""
    fold = _Fold(run_id=run_dir.name)
    for entry in entries:
        _fold(fold, entry.event)
    started, ended = (entries[0].ts, entries[-1].ts) if entries else ("", "")
    patch_file = run_dir / "fix.patch"
    patch = patch_file.read_text(encoding="utf-8") if patch_file.is_file() else None
    return RunReport(
        result=_result(fold, run_dir, patch or None, seconds_between(started, ended)),
        status=fold.status,
        project=fold.project,
        started=started,
        ended=ended,
        chain=fold.chain,
        baseline=fold.baseline,
        details=tuple(fold.details),
        notes=tuple(fold.notes + fold.pending),
        warnings=tuple(warnings),
        test_files=fold.test_files,
    )


def _fold(fold: _Fold, event: ReadEvent) -> None:
    if isinstance(event, IterationEvent):
        fold.iterations.append(event.iteration)
        fold.details.append(
            IterationDetail(event.shown, event.tests, event.answer, tuple(fold.pending))
        )
        fold.pending = []
    elif isinstance(event, StartEvent):
        fold.run_id, fold.project, fold.chain = (
            event.run_id or fold.run_id,
            event.project,
            event.chain,
        )
        globs = event.settings.get("test_globs")
        fold.test_files = (
            TestFiles(tuple(str(g) for g in globs)) if isinstance(globs, list) else None
        )
    elif isinstance(event, TestFilesEvent):  # the baseline collected tests from files no glob names
        if fold.test_files is not None:
            fold.test_files = TestFiles(
                fold.test_files.globs, fold.test_files.collected | frozenset(event.added)
            )
    elif isinstance(event, BaselineEvent):
        fold.baseline = event.report
    elif isinstance(event, ClassifiedEvent):
        fold.failures = event.failures
    elif isinstance(event, StoppedEvent):
        fold.stopped, fold.status = event, RunStatus.STOPPED
    elif isinstance(
        event, ResumedEvent
    ):  # a resume replays the run from its baseline: start the iterations over
        fold.iterations, fold.details, fold.pending = [], [], []
        fold.stopped, fold.status, fold.detail = None, RunStatus.INCOMPLETE, ""
        fold.notes.append(describe_event(event))
    elif isinstance(event, _RUN_NOTES):
        _fold_run_note(fold, event)
        fold.notes.append(describe_event(event))
    elif not isinstance(event, _SILENT):
        fold.pending.append(describe_event(event))


_RUN_NOTES = (
    FlakyEvent,
    InterruptedEvent,
    ErrorEvent,
    CrashedEvent,
    IntentEvent,
    DoneEvent,
    PushRefusedEvent,
    SandboxEvent,
)
_SILENT = (
    ProposalEvent,
    WorkspaceEvent,
)  # the answer is in the iteration event; the base commit is not news


def _fold_run_note(fold: _Fold, event: ReadEvent) -> None:
    if isinstance(event, FlakyEvent):
        fold.flaky = event.tests
    elif isinstance(event, SandboxEvent):
        fold.sandbox = event.status
    elif isinstance(event, DoneEvent) and event.action == "apply":
        fold.applied = True
    elif fold.status is RunStatus.INCOMPLETE:  # what ended a run that never stopped
        if isinstance(event, InterruptedEvent):
            fold.status, fold.detail = (
                RunStatus.INTERRUPTED,
                "interrupted (Ctrl-C or a termination signal)",
            )
        elif isinstance(event, ErrorEvent):
            fold.status, fold.detail = RunStatus.ERROR, event.message
        elif isinstance(event, CrashedEvent):
            fold.status, fold.detail = RunStatus.ERROR, event.error


def _result(
    fold: _Fold, run_dir: Path, patch: Optional[str], seconds: Optional[float]
) -> RunResult:
    """The RunResult the run ended with; a run that never stopped reads as interrupted, not
    fixed."""
    stopped = fold.stopped
    flaky = stopped.flaky_tests if stopped is not None and stopped.flaky_tests else fold.flaky
    result = RunResult(
        run_id=fold.run_id,
        outcome=Outcome.NOT_FIXED,
        stop_reason=StopReason.INTERRUPTED,
        stop_detail=fold.detail,
        failure_kinds=failure_kinds(fold.failures, flaky),
        failures=fold.failures,
        iterations=tuple(fold.iterations),
        patch=patch,
        run_dir=str(run_dir),
        flaky_tests=flaky,
        applied=fold.applied,
        seconds=seconds or 0.0,
        sandbox=fold.sandbox,
    )
    if stopped is None:
        return result
    return replace(
        result,
        outcome=stopped.outcome,
        stop_reason=stopped.stop_reason,
        stop_detail=stopped.detail,
        fixed_tests=stopped.fixed_tests,
        still_failing=stopped.still_failing,
        notes=stopped.notes,
        seconds=result.seconds if stopped.seconds is None else stopped.seconds,
        evidence=stopped.evidence if stopped.evidence is not None else result.evidence,
    )


def describe_event(event: ReadEvent) -> str:
    """One sentence for a journal event that is not an iteration (retries, escalations, intents)."""
    if isinstance(event, ModelRetryEvent):
        return (
            f"{event.model}: retried after {event.cause} (attempt {event.attempt}, waited "
            f"{event.wait} s)"
        )
    if isinstance(event, ModelErrorEvent):
        return f"{event.model}: {event.error}: {event.message}"
    if isinstance(event, AnswerTruncatedEvent):
        return f"{event.model}: answer cut from {event.chars} to {event.kept} characters"
    if isinstance(event, CandidateRejectedEvent):
        return f"{event.model}: answer rejected before testing: {event.error}"
    if isinstance(event, EscalateEvent):
        return f"left {event.model} for the next model: {event.why}"
    if isinstance(event, ModelDroppedEvent):
        return f"dropped {event.model} for the rest of the run: {event.why}"
    if isinstance(event, ProofEvent):
        held = (
            f"{event.proof.held} of {event.proof.required} full-suite run(s) held on a fresh copy"
        )
        return "proof run: " + (
            held if event.proof.passed else f"failed ({held}): {event.proof.detail}"
        )
    if isinstance(event, (IntentEvent, DoneEvent)):
        files = ", ".join(event.files)
        return f"{event.action} {'started' if isinstance(event, IntentEvent) else 'done'}" + (
            f": {files}" if files else ""
        )
    if isinstance(event, SandboxEvent):
        return ("WARNING: " if not event.confined else "") + event.status.describe()
    if isinstance(event, FlakyEvent):
        return "flaky, left alone: " + ", ".join(event.tests)
    if isinstance(event, InterruptedEvent):
        return (
            "interrupted (Ctrl-C or a termination signal); the user's files were left as they were"
        )
    if isinstance(event, ErrorEvent):
        return f"error: {event.message}" + (f" (hint: {event.hint})" if event.hint else "")
    if isinstance(event, CrashedEvent):
        return f"internal error: {event.error}"
    if isinstance(event, ProposalErrorEvent):
        return f"{event.model}: {event.error_class}: {event.message}"
    if isinstance(event, ResumedEvent):
        return (
            f"resumed with `repairloop resume`: {event.answers} recorded answer(s) replayed; "
            "the iterations shown are the resumed run's"
        )
    if isinstance(event, UnknownEvent):
        return event.name
    return event.kind.value
