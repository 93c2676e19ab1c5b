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

from repairloop.journal import read_journal


@dataclass(frozen=True)
class Shown:
    """What the model was shown in one iteration (the journal keeps up to 4,000 characters each)."""

    failing_tests: Tuple[str, ...] = ()
    message: str = ""
    traceback: str = ""
    slices: Tuple[str, ...] = ()  # "path:start-end name"
    tokens: int = 0  # the context material, counted by the loop's token counter
    trimmed: Tuple[str, ...] = ()  # what the context's token budget removed
    last_attempt: Optional[str] = None  # the reason given for the previous candidate


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


def _tuple(value: Any) -> Tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else ()


def _shown(raw: Any) -> Optional[Shown]:
    if not isinstance(raw, dict):
        return None
    return Shown(
        failing_tests=_tuple(raw.get("failing_tests")),
        message=str(raw.get("message") or ""),
        traceback=str(raw.get("traceback") or ""),
        slices=_tuple(raw.get("slices")),
        tokens=int(raw.get("tokens") or 0),
        trimmed=_tuple(raw.get("trimmed")),
        last_attempt=raw.get("last_attempt"),
    )


def _iteration(event: Dict[str, Any], notes: List[str]) -> IterationReport:
    it = event.get("iteration") or {}
    seconds = it.get("seconds") or {}
    return IterationReport(
        number=int(it.get("number", 0)),
        engine=str(it.get("engine", "")),
        model=str(it.get("model", "")),
        decision=str(it.get("decision", "")),
        reason=str(it.get("reason", "")),
        prompt_tokens=int(it.get("prompt_tokens") or 0),
        completion_tokens=int(it.get("completion_tokens") or 0),
        cost_usd=it.get("cost_usd"),
        seconds_model=float(seconds.get("model") or 0.0),
        seconds_tests=float(seconds.get("tests") or 0.0),
        seconds_total=float(seconds.get("total") or 0.0),
        attempts=int(it.get("attempts") or 1),
        diff=str(it.get("diff") or ""),
        similarity_to_previous=it.get("similarity_to_previous"),
        similarity_max=it.get("similarity_max"),
        tests_failed=it.get("tests_failed"),
        fixed=_tuple(it.get("fixed")),
        broke=_tuple(it.get("broke")),
        shown=_shown(event.get("shown")),
        tests=event.get("tests") if isinstance(event.get("tests"), dict) else None,
        answer=event.get("answer"),
        notes=tuple(notes),
        flags=_tuple(it.get("flags")),
    )


def describe_event(event: Dict[str, Any]) -> str:
    """One sentence for a journal event that is not an iteration (retries, escalations, intents)."""
    kind, model = event.get("event", "?"), event.get("model", "")
    if kind == "model_retry":
        return f"{model}: retried after {event.get('cause')} (attempt {event.get('attempt')}, waited {event.get('wait')} s)"
    if kind == "model_error":
        return f"{model}: {event.get('error')}: {event.get('message')}"
    if kind == "model_answer_truncated":
        return f"{model}: answer cut from {event.get('chars')} to {event.get('kept')} characters"
    if kind == "candidate_rejected":
        return f"{model}: answer rejected before testing: {event.get('error')}"
    if kind == "escalate":
        return f"left {event.get('frm')} for the next model: {event.get('why')}"
    if kind == "model_dropped":
        return f"dropped {model} for the rest of the run: {event.get('why')}"
    if kind in ("intent", "done"):
        files = ", ".join(event.get("files") or [])
        return f"{event.get('action')} {'started' if kind == 'intent' else 'done'}" + (f": {files}" if files else "")
    if kind == "sandbox":
        if not event.get("confined"):
            return f"WARNING: candidate code ran unconfined: {event.get('detail')}"
        return f"sandbox: {event.get('backend')}, network {'open' if event.get('network') else 'off'}"
    if kind == "flaky":
        return "flaky, left alone: " + ", ".join(event.get("tests") or [])
    if kind == "interrupted":
        return "interrupted (Ctrl-C); the user's files were left as they were"
    if kind == "error":
        return f"error: {event.get('message')}" + (f" (hint: {event['hint']})" if event.get("hint") else "")
    if kind == "crashed":
        return f"internal error: {event.get('error')}"
    if kind == "proposal_error":
        return f"{model}: {event.get('error_class')}: {event.get('message')}"
    if kind == "resumed":
        return (f"resumed with `repairloop resume`: {event.get('answers', 0)} recorded answer(s) replayed; "
                "the iterations shown are the resumed run's")
    return str(kind)


_RUN_LEVEL = {"start", "baseline", "classified", "stopped"}
_ENDINGS = {"flaky", "interrupted", "error", "crashed", "intent", "done", "push_refused", "sandbox"}
_SILENT = {"proposal", "workspace"}  # the answer is in the iteration event; the base commit is not news


def _seconds_between(first: str, last: str) -> Optional[float]:
    try:
        return (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    except (TypeError, ValueError):
        return None


def build_report(run_dir: Path, events: List[Dict[str, Any]], warnings: List[str]) -> RunReport:
    """Fold the journal's events into a RunReport; unknown events become notes."""
    fields: Dict[str, Any] = {"run_id": run_dir.name, "run_dir": str(run_dir)}
    iterations: List[IterationReport] = []
    pending: List[str] = []
    run_notes: List[str] = []
    for event in events:
        kind = event.get("event")
        if kind == "iteration":
            iterations.append(_iteration(event, pending))
            pending = []
        elif kind in _RUN_LEVEL:
            _fold_run_event(fields, event)
        elif kind == "resumed":  # a resume replays the run from its baseline: start the iterations over
            iterations, pending = [], []
            fields.update(outcome="incomplete", stop_reason="", stop_detail="")
            run_notes.append(describe_event(event))
        elif kind in _ENDINGS:
            _fold_ending(fields, event)
            run_notes.append(describe_event(event))
        elif kind not in _SILENT:
            pending.append(describe_event(event))
    if events:
        fields["started"] = str(events[0].get("ts", ""))
        fields["ended"] = str(events[-1].get("ts", ""))
        fields["seconds"] = _seconds_between(fields["started"], fields["ended"])
    patch_file = run_dir / "fix.patch"
    patch = patch_file.read_text(encoding="utf-8") if patch_file.is_file() else None
    return RunReport(iterations=tuple(iterations), patch=patch or None, warnings=tuple(warnings),
                     notes=tuple(run_notes + pending), **fields)


def _fold_run_event(fields: Dict[str, Any], event: Dict[str, Any]) -> None:
    kind = event.get("event")
    if kind == "start":
        fields["run_id"] = str(event.get("run_id") or fields["run_id"])
        fields["project"] = str(event.get("project", ""))
        fields["chain"] = _tuple(event.get("chain"))
    elif kind == "baseline":
        fields["baseline"] = event.get("report") if isinstance(event.get("report"), dict) else None
    elif kind == "classified":
        failures = tuple(f for f in event.get("failures") or [] if isinstance(f, dict))
        fields["failures"] = failures
        kinds: Dict[str, int] = {}
        for failure in failures:
            kinds[str(failure.get("kind"))] = kinds.get(str(failure.get("kind")), 0) + 1
        fields["failure_kinds"] = kinds
    elif kind == "stopped":
        fields["outcome"] = str(event.get("outcome", "incomplete"))
        fields["stop_reason"] = str(event.get("stop_reason", ""))
        fields["stop_detail"] = str(event.get("detail", ""))


def _fold_ending(fields: Dict[str, Any], event: Dict[str, Any]) -> None:
    kind = event.get("event")
    if kind == "flaky":
        fields["flaky"] = _tuple(event.get("tests"))
    elif kind == "interrupted" and fields.get("outcome", "incomplete") == "incomplete":
        fields.update(outcome="interrupted", stop_reason="interrupted", stop_detail="interrupted (Ctrl-C)")
    elif kind in ("error", "crashed") and fields.get("outcome", "incomplete") == "incomplete":
        detail = event.get("message") or event.get("error") or ""
        fields.update(outcome="error", stop_reason="error", stop_detail=str(detail))


def load_run(run_dir: Path) -> RunReport:
    """Read one run directory into a RunReport.

    Raises ProjectError (from ``journal.read_journal``) when a journal line
    before the last is damaged; a torn last line becomes a warning.
    """
    run_dir = Path(run_dir)
    events, warnings = read_journal(run_dir)
    return build_report(run_dir, events, warnings)
