"""Typed journal events: one record per kind, the same classes write and read, older journals still
read.

The old journal is a real one: ``fixtures/journals/`` holds a run directory
that the previous version of repairloop wrote (see its README). The type
checking test runs mypy on the real package with a record field renamed in each
of two modules (``--shadow-file``, one run for both) and watches each field's
writer and reader fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import FIXTURES

from repairloop.cli import main
from repairloop.journal import (
    EVENT_CLASSES,
    AnswerTruncatedEvent,
    BaselineEvent,
    CandidateRejectedEvent,
    ClassifiedEvent,
    CrashedEvent,
    DoneEvent,
    EditFormatSwitchedEvent,
    ErrorEvent,
    EscalateEvent,
    FlakyEvent,
    IntentEvent,
    InterruptedEvent,
    IterationEvent,
    Journal,
    JournalEvent,
    ModelDroppedEvent,
    ModelErrorEvent,
    ModelRetryEvent,
    NoteEvent,
    ParamDroppedEvent,
    ProofEvent,
    ProposalErrorEvent,
    ProposalEvent,
    PushRefusedEvent,
    ResumedEvent,
    SandboxEvent,
    Shown,
    StartEvent,
    StoppedEvent,
    TestFilesEvent,
    TestsSummary,
    UnknownEvent,
    WarmEvent,
    WorkspaceEvent,
    read_events,
    run_dir_for,
)
from repairloop.loop.resume import load_recorded
from repairloop.reports import load_run, render
from repairloop.types import (
    Budget,
    Decision,
    Evidence,
    Failure,
    FailureKind,
    Flag,
    FlagKind,
    Frame,
    Iteration,
    JournalKind,
    Outcome,
    Proof,
    ResultSource,
    StopReason,
    Usage,
)

ROOT = Path(__file__).resolve().parent.parent
OLD_RUN = FIXTURES / "journals" / "20261201-163120-8aeb"

ITERATION = Iteration(
    number=2,
    engine="llm",
    model="openai/m",
    usage=Usage(300, 40, None, 0.25, 2),
    decision=Decision.KEPT,
    reason="fixed 1 test(s)",
    diff="-a\n+b\n",
    similarity_to_previous=0.5,
    similarity_max=0.75,
    tests_failed=0,
    fixed=("t::a",),
    seconds_model=0.25,
    seconds_tests=1.5,
    seconds_total=2.0,
    attempts=2,
    candidates=1,
    flags=(Flag(FlagKind.SUSPECTED_OVERFITTING, "calc.py:3 compares with 42"),),
)

# One of every kind, with values other than the defaults where there are any.
EXAMPLES: List[JournalEvent] = [
    StartEvent(
        run_id="r1", project="/p", chain=("openai/m", "builtin"), settings={"max_iterations": 3}
    ),
    ResumedEvent(answers=2, chain=("builtin",)),
    WorkspaceEvent(base="abc", head=None),
    InterruptedEvent(seconds=3.5),
    ErrorEvent(message="no tests", hint="add one"),
    CrashedEvent(error="ValueError: x"),
    SandboxEvent(confined=False, backend="none", detail="no bwrap on this machine", network=True),
    BaselineEvent(
        report=TestsSummary(
            exit_code=1,
            failing=("t::a",),
            passed=3,
            seconds=1.25,
            timed_out=True,
            source=ResultSource.PLUGIN,
            output_tail="E assert 1 == 2\n",
        )
    ),
    ClassifiedEvent(
        failures=(
            Failure(
                "t::a",
                FailureKind.LOGIC,
                True,
                "assert 1 == 2",
                "t.py:3",
                "look",
                "AssertionError",
                (Frame("t.py", 3, "test_a"), Frame("c.py", 9)),
            ),
        )
    ),
    TestFilesEvent(added=("checks/probe.py",)),
    FlakyEvent(tests=("t::b",)),
    EscalateEvent(model="openai/m", why="stagnation"),
    ModelDroppedEvent(model="openai/m", why="bad key"),
    ProposalEvent(
        iteration=1,
        round=1,
        model="openai/m",
        engine="llm",
        answer="diff",
        usage=Usage(1, 2, 0.5, 0.1, 1),
        notes={"finish_reason": "stop"},
    ),
    ProposalErrorEvent(
        iteration=1,
        round=0,
        model="openai/m",
        error_class="BudgetExhausted",
        message="no budget",
        usage=Usage(),
        attempts=0,
        budget=Budget.TOKENS,
        notes={"k": [1]},
    ),
    CandidateRejectedEvent(iteration=1, model="openai/m", answer="text", error="no patch found"),
    IterationEvent(
        iteration=ITERATION,
        shown=Shown(("t::a",), "boom", "tb", ("c.py:1-3 f",), 120, ("slice",), "why"),
        answer="diff",
        engine_notes={"counts": {"tried": 3}},
        tests=TestsSummary(0, (), 4, 2.0),
    ),
    ModelRetryEvent(model="openai/m", cause="rate_limit", attempt=1, wait=1.5, error="429"),
    ModelErrorEvent(model="openai/m", error="ModelError", message="refused", attempts=2),
    AnswerTruncatedEvent(model="openai/m", chars=200_000, kept=100_000),
    EditFormatSwitchedEvent(
        model="openai/m", from_format="diff", to_format="whole", error="did not apply"
    ),
    ParamDroppedEvent(model="openai/m", param="temperature", error="400"),
    ProofEvent(
        proof=Proof(
            passed=False,
            held=1,
            required=2,
            guards=True,
            detail="run 2: t::a did not pass",
            seconds=3.5,
        )
    ),
    StoppedEvent(
        outcome=Outcome.PARTIALLY_FIXED,
        stop_reason=StopReason.NO_PROGRESS,
        detail="3 without progress",
        seconds=12.5,
        fixed_tests=("t::a",),
        still_failing=("t::c",),
        flaky_tests=("t::b",),
        notes=("n",),
        evidence=Evidence(
            plausible=True, proof=Proof(True, 2, 2), flags=("suspected_overfitting: m.py:3",)
        ),
    ),
    IntentEvent(
        action="push", key="k", remote="origin", branch="repairloop/x", commit="c0ffee", expect=None
    ),
    DoneEvent(action="open_pr", key="k", number=7, url="https://forge.invalid/pull/7"),
    NoteEvent(action="open_pr", key="k", attempt=1, unknown="timed out"),
    PushRefusedEvent(key="k", found="beef"),
    WarmEvent(where="loop", action="closed", why="", seconds=1.5, collected=12, served=3, fresh=1),
]


def test_every_kind_has_exactly_one_record_class() -> None:
    kinds = [cls.kind for cls in EVENT_CLASSES]
    assert len(kinds) == len(set(kinds)) and set(kinds) == set(JournalKind)


def test_every_event_reads_back_as_the_record_that_was_written(tmp_path: Path) -> None:
    assert {type(e) for e in EXAMPLES} == set(EVENT_CLASSES)  # the examples cover every kind
    journal = Journal(tmp_path / "run")
    for event in EXAMPLES:
        journal.record(event)
    entries, warnings = read_events(tmp_path / "run")
    assert warnings == []
    for written, entry in zip(EXAMPLES, entries):
        assert entry.event == written


def test_the_on_disk_shape_is_the_one_older_journals_have(tmp_path: Path) -> None:
    """Keys older readers (and tests that read journal.jsonl) look for stay where they were."""
    journal = Journal(tmp_path / "run")
    for event in EXAMPLES:
        journal.record(event)
    lines = {
        d["event"]: d
        for d in map(json.loads, (tmp_path / "run" / "journal.jsonl").read_text().splitlines())
    }
    assert (
        lines["escalate"]["frm"] == "openai/m" and lines["edit_format_switched"]["from"] == "diff"
    )
    assert lines["iteration"]["iteration"] == ITERATION.to_json()
    assert lines["iteration"]["shown"]["failing_tests"] == ["t::a"]
    assert lines["iteration"]["tests"] == {
        "exit_code": 0,
        "timed_out": False,
        "seconds": 2.0,
        "failing": [],
        "passed": 4,
    }
    assert lines["proposal"]["usage"] == {
        "prompt_tokens": 1,
        "completion_tokens": 2,
        "cost_usd": 0.5,
        "seconds": 0.1,
        "calls": 1,
    }
    assert (
        lines["classified"]["failures"][0]["kind"] == "logic"
        and lines["baseline"]["report"]["source"] == "plugin"
    )
    assert (
        lines["stopped"]["outcome"] == "partially_fixed"
        and lines["proposal_error"]["budget"] == "tokens"
    )
    assert lines["intent"]["action"] == "push" and lines["done"]["number"] == 7


def old_project(tmp_path: Path) -> Path:
    """A project directory holding the previous version's run directory."""
    project = tmp_path / "project"
    shutil.copytree(OLD_RUN, run_dir_for(project, OLD_RUN.name))
    return project


def test_a_journal_of_the_previous_version_reads_as_records(tmp_path: Path) -> None:
    run_dir = run_dir_for(old_project(tmp_path), OLD_RUN.name)
    entries, warnings = read_events(run_dir)
    assert warnings == [] and not [e for e in entries if isinstance(e.event, UnknownEvent)]
    kinds = [e.event.kind.value for e in entries if not isinstance(e.event, UnknownEvent)]
    assert kinds == [
        "start",
        "workspace",
        "baseline",
        "classified",
        "model_retry",
        "proposal",
        "iteration",
        "proposal",
        "candidate_rejected",
        "edit_format_switched",
        "proposal",
        "iteration",
        "proposal",
        "iteration",
        "stopped",
        "intent",
        "done",
    ]
    summary = json.loads((OLD_RUN / "summary.json").read_text())
    iterations = [e.event.iteration for e in entries if isinstance(e.event, IterationEvent)]
    assert [it.to_json() for it in iterations] == summary["iterations"]
    classified = next(e.event for e in entries if isinstance(e.event, ClassifiedEvent))
    assert [f.to_json() for f in classified.failures] == summary["failures"]
    stopped = next(e.event for e in entries if isinstance(e.event, StoppedEvent))
    assert (stopped.outcome, stopped.stop_reason, stopped.seconds) == (
        Outcome.FIXED,
        StopReason.SUCCESS,
        None,
    )
    switched = next(e.event for e in entries if isinstance(e.event, EditFormatSwitchedEvent))
    assert (switched.from_format, switched.to_format) == ("diff", "whole")


def test_a_journal_of_the_previous_version_still_reports_and_resumes(
    tmp_path: Path, capsys
) -> None:
    project = old_project(tmp_path)
    report = load_run(run_dir_for(project, OLD_RUN.name))
    assert report.outcome == "fixed" and report.stop_reason == "success"
    shown = [it.detail.shown for it in report.iterations]
    assert all(
        s is not None and s.failing_tests == ("tests/test_lists.py::test_last_n",) for s in shown
    )
    assert all(
        it.detail.tests is not None
        for it in report.iterations
        if it.record.decision is not Decision.REJECTED
    )
    text = render(report, "text")
    assert (
        "shown: 1 failing test(s)" in text and "assert [2, 3, 4] == [3, 4]" in text
    )  # what the model was shown
    assert (
        "retried after rate_limit" in text
        and "answer rejected before testing: no patch found" in text
    )
    assert (
        "iteration 3: openai/scripted (llm) -> kept" in text
        and "totals: 3 iterations, 5 model calls" in text
    )
    assert main(["report", "-C", str(project), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["iterations"][2]["decision"] == "kept"
    recorded = load_recorded(project, None, {})
    assert sorted(recorded.answers) == [(1, 0), (2, 0), (2, 1), (3, 0)]
    assert recorded.finished and recorded.pending == () and recorded.base is not None
    assert (
        isinstance(recorded.answers[(2, 0)], ProposalEvent)
        and recorded.answers[(2, 0)].usage.calls == 1
    )


def test_the_result_read_from_a_previous_journal_is_its_summary(tmp_path: Path) -> None:
    """Everything the previous version journalled comes back as its ``run --json`` said; what it did
    not journal (the run's own seconds, the fixed and still failing tests, notes) reads as
    unknown."""
    result = load_run(run_dir_for(old_project(tmp_path), OLD_RUN.name)).result
    summary = json.loads((OLD_RUN / "summary.json").read_text())
    doc = result.to_json()
    for key in ("totals", "fixed_tests", "run_dir", "sandbox"):
        doc.pop(key), summary.pop(key, None)
    assert (
        doc.pop("evidence") == Evidence().to_json()
    )  # journalled since the proof run: unknown before it
    assert doc == summary
    # from the journal's times
    assert result.fixed_tests == () and result.seconds == pytest.approx(23.19, abs=0.01)


def test_unknown_kinds_fields_and_values_are_read_tolerantly(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    iteration = dict(ITERATION.to_json(), decision="pondered")
    lines = [
        {
            "event": "start",
            "ts": "2024-05-02T10:00:00+00:00",
            "run_id": "r",
            "chain": ["builtin"],
            "newer": 1,
        },
        {"event": "future_event", "ts": "2024-05-02T10:00:01+00:00", "what": "something new"},
        {"event": "iteration", "ts": "2024-05-02T10:00:02+00:00", "iteration": iteration},
        {
            "event": "stopped",
            "ts": "2024-05-02T10:00:03+00:00",
            "outcome": "not_fixed",
            "stop_reason": "stagnation",
        },
    ]
    (run_dir / "journal.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    entries, warnings = read_events(run_dir)
    events = [e.event for e in entries]
    # missing: empty
    assert events[0] == StartEvent(run_id="r", project="", chain=("builtin",), settings={})
    assert isinstance(events[1], UnknownEvent) and events[1].name == "future_event"
    assert isinstance(events[2], UnknownEvent) and "pondered" in events[2].problem
    assert events[3] == StoppedEvent(
        outcome=Outcome.NOT_FIXED, stop_reason=StopReason.STAGNATION, detail=""
    )
    assert len(warnings) == 2 and "future_event" in warnings[0] and "iteration" in warnings[1]
    report = load_run(run_dir)
    assert report.outcome == "not_fixed" and report.iterations == ()
    assert "warning: event 3 (iteration): could not read this iteration event" in render(
        report, "text"
    )


RENAMES = [
    # (module, the field as declared, renamed, modules whose type check must fail: a writer and a
    # reader)
    (
        "repairloop/journal/iteration_events.py",
        "    shown: Optional[Shown] = None",
        "    seen: Optional[Shown] = None",
        {"repairloop/loop/attempt.py", "repairloop/reports/read.py"},
    ),
    (
        "repairloop/types/model_events.py",
        "    wait: float  # seconds",
        "    delay: float  # seconds",
        {"repairloop/propose/llm.py", "repairloop/reports/read.py"},
    ),
]


def field(declaration: str) -> str:
    """The quoted name a declaration such as ``    wait: float`` declares, as mypy names it."""
    return '"' + declaration.split(":", 1)[0].strip() + '"'


@pytest.fixture(scope="module")
def renamed_check(tmp_path_factory: pytest.TempPathFactory) -> Tuple[int, List[str]]:
    """One mypy run with every rename of RENAMES shadowed in (the modules are apart, and each error
    names the field it is about: the old name where it is used, the new one where it is missing):
    (exit code, its error lines)."""
    tmp_path = tmp_path_factory.mktemp("renames")
    shadows: List[str] = []
    for module, declared, renamed, _ in RENAMES:
        source = (ROOT / module).read_text(encoding="utf-8")
        assert source.count(declared) == 1
        shadow = tmp_path / Path(module).name
        shadow.write_text(source.replace(declared, renamed), encoding="utf-8")
        shadows += ["--shadow-file", module, str(shadow)]
    cache = tmp_path / "mypy_cache"
    if (
        ROOT / ".mypy_cache"
    ).is_dir():  # make lint's cache: only what the renames touch is checked again
        shutil.copytree(ROOT / ".mypy_cache", cache)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "repairloop", "--cache-dir", str(cache), *shadows],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return run.returncode, [line for line in run.stdout.splitlines() if ": error:" in line]


@pytest.mark.slow
@pytest.mark.xdist_group("journal_renamed_check")  # one worker makes the module's mypy run
@pytest.mark.parametrize("module, declared, renamed, failing", RENAMES, ids=["shown", "wait"])
def test_a_renamed_field_fails_type_checking_in_writer_and_reader(
    renamed_check: Tuple[int, List[str]], module, declared, renamed, failing
) -> None:
    code, lines = renamed_check
    names: Dict[str, Tuple[str, str]] = {r[0]: (field(r[1]), field(r[2])) for r in RENAMES}

    def about(line: str, pair: Tuple[str, str]) -> bool:
        return any(name in line for name in pair)

    # every error is about one of the renamed fields, and only one
    assert all(sum(about(line, pair) for pair in names.values()) == 1 for line in lines), lines
    errors = {line.split(":", 1)[0] for line in lines if about(line, names[module])}
    assert code == 1 and errors == failing, lines
