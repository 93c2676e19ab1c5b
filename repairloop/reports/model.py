"""The report model: one run read back from its journal into frozen records.

Everything here comes from ``<project>/.repairloop/runs/<run_id>/``: the
events of ``journal.jsonl`` (see ``loop.py`` and ``attempt.py`` for what each
event holds) and ``fix.patch``. Nothing is re-run and no other state is read,
so a report can be made on any machine that has the run directory (a CI
artifact, say).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

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
    ProposalErrorEvent,
    ProposalEvent,
    PushRefusedEvent,
    ReadEvent,
    ResumedEvent,
    SandboxEvent,
    Shown,
    StartEvent,
    StoppedEvent,
    UnknownEvent,
    WorkspaceEvent,
    read_events,
)


@dataclass(frozen=True)
class IterationReport:
    """One iteration as journalled. Units: tokens, USD (None: not priced), seconds."""

    number: int
    engine: str
    model: str
    decision: str
    reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Optional[float] = 0.0
    seconds_model: float = 0.0
    seconds_tests: float = 0.0
    seconds_total: float = 0.0
    attempts: int = 1
    diff: str = ""
    similarity_to_previous: Optional[float] = None
    similarity_max: Optional[float] = None
    tests_failed: Optional[int] = None
    fixed: Tuple[str, ...] = ()
    broke: Tuple[str, ...] = ()
    shown: Optional[Shown] = None
    tests: Optional[Dict[str, Any]] = None  # exit_code, failing, passed, seconds, timed_out
    answer: Optional[str] = None
    notes: Tuple[str, ...] = ()  # retries, rejected answers, escalations during the iteration
    flags: Tuple[str, ...] = ()  # guard notes on an accepted candidate ("suspected_overfitting: ...")

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class RunReport:
    """A whole run: outcome, stop reason, baseline, iterations, totals and the final patch.

    ``outcome`` is a ``types.Outcome`` value, or ``interrupted``, ``error`` or
    ``incomplete`` (no ``stopped`` event: the run is going on or was killed).
    ``seconds`` is the wall-clock time from the first to the last event.
    """

    run_id: str
    run_dir: str
    project: str = ""
    started: str = ""  # ISO 8601, UTC
    ended: str = ""
    chain: Tuple[str, ...] = ()
    outcome: str = "incomplete"
    stop_reason: str = ""
    stop_detail: str = ""
    baseline: Optional[Dict[str, Any]] = None
    failures: Tuple[Dict[str, Any], ...] = ()
    flaky: Tuple[str, ...] = ()
    iterations: Tuple[IterationReport, ...] = ()
    patch: Optional[str] = None
    notes: Tuple[str, ...] = ()
    warnings: Tuple[str, ...] = ()
    seconds: Optional[float] = None
    failure_kinds: Dict[str, int] = field(default_factory=dict)

    @property
    def totals(self) -> Dict[str, Any]:
        """Sums over the iterations; ``cost_usd`` is None when any call was not priced."""
        its = self.iterations
        cost: Optional[float] = 0.0
        for it in its:
            cost = None if cost is None or it.cost_usd is None else cost + it.cost_usd
        return {
            "iterations": len(its),
            "model_calls": sum(it.attempts for it in its if it.engine == "llm"),
            "prompt_tokens": sum(it.prompt_tokens for it in its),
            "completion_tokens": sum(it.completion_tokens for it in its),
            "cost_usd": cost,
            "seconds": {
                "model": round(sum(it.seconds_model for it in its), 3),
                "tests": round(sum(it.seconds_tests for it in its), 3),
                "total": None if self.seconds is None else round(self.seconds, 3),
            },
        }

    def to_json(self) -> Dict[str, Any]:
        """The report as one JSON-able document (``report --format json``)."""
        data = asdict(self)
        data["totals"] = self.totals
        return data


def _iteration(event: IterationEvent, notes: List[str]) -> IterationReport:
    it = event.iteration
    return IterationReport(
        number=it.number,
        engine=it.engine,
        model=it.model,
        decision=it.decision.value,
        reason=it.reason,
        prompt_tokens=it.usage.prompt_tokens,
        completion_tokens=it.usage.completion_tokens,
        cost_usd=it.usage.cost_usd,
        seconds_model=it.seconds_model,
        seconds_tests=it.seconds_tests,
        seconds_total=it.seconds_total,
        attempts=it.attempts,
        diff=it.diff,
        similarity_to_previous=it.similarity_to_previous,
        similarity_max=it.similarity_max,
        tests_failed=it.tests_failed,
        fixed=it.fixed,
        broke=it.broke,
        shown=event.shown,
        tests=None if event.tests is None else event.tests.to_json(),
        answer=event.answer,
        notes=tuple(notes),
        flags=tuple(str(f) for f in it.flags),
    )


def describe_event(event: ReadEvent) -> str:
    """One sentence for a journal event that is not an iteration (retries, escalations, intents)."""
    if isinstance(event, ModelRetryEvent):
        return f"{event.model}: retried after {event.cause} (attempt {event.attempt}, waited {event.wait} s)"
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
    if isinstance(event, (IntentEvent, DoneEvent)):
        files = ", ".join(event.files)
        return f"{event.action} {'started' if isinstance(event, IntentEvent) else 'done'}" + (f": {files}" if files else "")
    if isinstance(event, SandboxEvent):
        if not event.confined:
            return f"WARNING: candidate code ran unconfined: {event.detail}"
        return f"sandbox: {event.backend}, network {'open' if event.network else 'off'}"
    if isinstance(event, FlakyEvent):
        return "flaky, left alone: " + ", ".join(event.tests)
    if isinstance(event, InterruptedEvent):
        return "interrupted (Ctrl-C); the user's files were left as they were"
    if isinstance(event, ErrorEvent):
        return f"error: {event.message}" + (f" (hint: {event.hint})" if event.hint else "")
    if isinstance(event, CrashedEvent):
        return f"internal error: {event.error}"
    if isinstance(event, ProposalErrorEvent):
        return f"{event.model}: {event.error_class}: {event.message}"
    if isinstance(event, ResumedEvent):
        return (f"resumed with `repairloop resume`: {event.answers} recorded answer(s) replayed; "
                "the iterations shown are the resumed run's")
    if isinstance(event, UnknownEvent):
        return event.name
    return event.kind.value


_RUN_LEVEL = (StartEvent, BaselineEvent, ClassifiedEvent, StoppedEvent)
_ENDINGS = (FlakyEvent, InterruptedEvent, ErrorEvent, CrashedEvent, IntentEvent, DoneEvent, PushRefusedEvent,
            SandboxEvent)
_SILENT = (ProposalEvent, WorkspaceEvent)  # the answer is in the iteration event; the base commit is not news


def _seconds_between(first: str, last: str) -> Optional[float]:
    try:
        return (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    except (TypeError, ValueError):
        return None


def build_report(run_dir: Path, entries: List[Entry], warnings: List[str]) -> RunReport:
    """Fold the journal's events into a RunReport; unknown events become notes."""
    fields: Dict[str, Any] = {"run_id": run_dir.name, "run_dir": str(run_dir)}
    iterations: List[IterationReport] = []
    pending: List[str] = []
    run_notes: List[str] = []
    for entry in entries:
        event = entry.event
        if isinstance(event, IterationEvent):
            iterations.append(_iteration(event, pending))
            pending = []
        elif isinstance(event, _RUN_LEVEL):
            _fold_run_event(fields, event)
        elif isinstance(event, ResumedEvent):  # a resume replays the run from its baseline: start the iterations over
            iterations, pending = [], []
            fields.update(outcome="incomplete", stop_reason="", stop_detail="")
            run_notes.append(describe_event(event))
        elif isinstance(event, _ENDINGS):
            _fold_ending(fields, event)
            run_notes.append(describe_event(event))
        elif not isinstance(event, _SILENT):
            pending.append(describe_event(event))
    if entries:
        fields["started"] = entries[0].ts
        fields["ended"] = entries[-1].ts
        fields["seconds"] = _seconds_between(fields["started"], fields["ended"])
    patch_file = run_dir / "fix.patch"
    patch = patch_file.read_text(encoding="utf-8") if patch_file.is_file() else None
    return RunReport(iterations=tuple(iterations), patch=patch or None, warnings=tuple(warnings),
                     notes=tuple(run_notes + pending), **fields)


def _fold_run_event(fields: Dict[str, Any], event: ReadEvent) -> None:
    if isinstance(event, StartEvent):
        fields["run_id"] = event.run_id or fields["run_id"]
        fields["project"] = event.project
        fields["chain"] = event.chain
    elif isinstance(event, BaselineEvent):
        fields["baseline"] = event.report.to_json()
    elif isinstance(event, ClassifiedEvent):
        fields["failures"] = tuple(f.to_json() for f in event.failures)
        kinds: Dict[str, int] = {}
        for failure in event.failures:
            kinds[failure.kind.value] = kinds.get(failure.kind.value, 0) + 1
        fields["failure_kinds"] = kinds
    elif isinstance(event, StoppedEvent):
        fields["outcome"] = event.outcome.value
        fields["stop_reason"] = event.stop_reason.value
        fields["stop_detail"] = event.detail


def _fold_ending(fields: Dict[str, Any], event: ReadEvent) -> None:
    if isinstance(event, FlakyEvent):
        fields["flaky"] = event.tests
    elif isinstance(event, InterruptedEvent) and fields.get("outcome", "incomplete") == "incomplete":
        fields.update(outcome="interrupted", stop_reason="interrupted", stop_detail="interrupted (Ctrl-C)")
    elif isinstance(event, (ErrorEvent, CrashedEvent)) and fields.get("outcome", "incomplete") == "incomplete":
        detail = event.message if isinstance(event, ErrorEvent) else event.error
        fields.update(outcome="error", stop_reason="error", stop_detail=detail)


def load_run(run_dir: Path) -> RunReport:
    """Read one run directory into a RunReport.

    Raises ProjectError (from ``journal.read_events``) when a journal line
    before the last is damaged; a torn last line becomes a warning.
    """
    run_dir = Path(run_dir)
    entries, warnings = read_events(run_dir)
    return build_report(run_dir, entries, warnings)
