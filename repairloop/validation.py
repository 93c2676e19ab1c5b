"""Patch validation (part of the loop layer): a candidate in the workspace, judged by the tests.

The candidate's files are written into the workspace; the previously failing
tests run first (with pytest), then the full suite; a candidate that fixes at
least one failing test and breaks none is kept (and, when nothing is left
failing, must hold up over ``final_runs`` full-suite runs), anything else is
reverted to the checkpoint taken before it was written. Verdicts come from
the runner's structured results and exit codes, never from what tests print.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from repairloop.classify import classify_report
from repairloop.journal import Journal
from repairloop.patch import AppliedPatch, GuardPolicy
from repairloop.suite import TestSuite
from repairloop.types import Decision, Failure, ResultSource, TestFiles, TestReport
from repairloop.workspace import Workspace


@dataclass(frozen=True)
class ValidationSetup:
    """What validating candidates needs, built once per run.

    ``targeted`` is True when the test command takes test ids (pytest), so the
    failing tests can run alone first; ``python`` is the project's interpreter.
    """

    workspace: Workspace
    suite: TestSuite
    journal: Journal
    policy: GuardPolicy
    test_files: TestFiles
    final_runs: int
    targeted: bool
    python: Optional[str]


@dataclass(frozen=True)
class Checked:
    """What the tests said about one applied candidate.

    ``failing`` are the tests failing after it (the ones before it when it
    was reverted), ``failures`` their classification when it was kept;
    ``seconds`` is the test time it cost.
    """

    decision: Decision
    reason: str
    fixed: Tuple[str, ...] = ()
    broke: Tuple[str, ...] = ()
    failing: Tuple[str, ...] = ()
    report: Optional[TestReport] = None
    seconds: float = 0.0
    failures: Tuple[Failure, ...] = ()


def validate(setup: ValidationSetup, applied: AppliedPatch, failing: Tuple[str, ...], flaky: Sequence[str]) -> Checked:
    """Write ``applied`` into the workspace, judge it, keep it or revert it.

    Raises WorkspaceError when the workspace cannot be written or restored.
    """
    ws = setup.workspace
    token = ws.checkpoint()
    try:
        ws.write_files({c.path: c.new_text for c in applied.changes})
        checked = _judge(setup, failing, flaky)
    except BaseException:  # Ctrl-C or a crash mid-validation: an untested candidate never stays
        ws.revert_to(token)
        raise
    if checked.decision is not Decision.KEPT:
        ws.revert_to(token)
        return checked
    if checked.report is None:
        return checked
    failures = classify_report(checked.report, ws.root, python=setup.python)
    return Checked(checked.decision, checked.reason, checked.fixed, checked.broke, checked.failing,
                   checked.report, checked.seconds, failures)


def _judge(setup: ValidationSetup, failing: Tuple[str, ...], flaky: Sequence[str]) -> Checked:
    suite, root = setup.suite, setup.workspace.root
    seconds = 0.0
    if setup.targeted:
        first = suite.run(root, failing)
        seconds += first.seconds
        if first.timed_out:
            return Checked(Decision.REVERTED, "the failing tests timed out with this candidate", failing=failing,
                           seconds=seconds)
        if not _fixed_any(failing, first):
            return Checked(Decision.REVERTED, f"fixed none of the {len(failing)} failing test(s): " + _first_message(first),
                           failing=failing, report=first, seconds=seconds)
    full = suite.run(root)
    seconds += full.seconds
    if full.timed_out:
        return Checked(Decision.REVERTED, "the test suite timed out with this candidate", failing=failing, seconds=seconds)
    now_failing = _failing_after(failing, full, flaky)
    fixed = tuple(t for t in failing if t not in now_failing)
    broke = tuple(t for t in now_failing if t not in failing)
    if fixed and not broke:
        if not now_failing:  # a fix: the full suite must hold up `final_runs` times
            flaky_run, extra = _repeat_full_suite(setup)
            seconds += extra
            if flaky_run:
                return Checked(Decision.REVERTED, f"passed once, then failed on full-suite run {flaky_run} "
                               f"of {setup.final_runs} (a flaky fix)", failing=failing, seconds=seconds)
        reason = f"fixed {len(fixed)} test(s), broke none; {len(now_failing)} still failing"
        return Checked(Decision.KEPT, reason, fixed, broke, now_failing, full, seconds)
    if broke:
        reason = f"fixed {len(fixed)} but broke {len(broke)}: {', '.join(broke[:5])}"
    else:
        reason = f"fixed none of the {len(failing)} failing test(s): " + _first_message(full)
    return Checked(Decision.REVERTED, reason, fixed, broke, now_failing, full, seconds)


def _repeat_full_suite(setup: ValidationSetup) -> Tuple[int, float]:
    """Run the full suite ``final_runs - 1`` more times: (first failing run number or 0, seconds)."""
    seconds = 0.0
    for number in range(2, setup.final_runs + 1):
        again = setup.suite.run(setup.workspace.root)
        seconds += again.seconds
        if not again.green:
            return number, seconds
    return 0, seconds


def _fixed_any(failing: Sequence[str], report: TestReport) -> bool:
    if report.source is ResultSource.EXIT_CODE:
        return report.green
    if report.exit_code not in (0, 1):
        return False
    return any(t not in report.failing_ids for t in failing)


def _failing_after(failing: Sequence[str], report: TestReport, flaky: Sequence[str]) -> Tuple[str, ...]:
    if report.source is ResultSource.EXIT_CODE:
        return () if report.green else tuple(failing)
    return tuple(t for t in report.failing_ids if t not in flaky)


def _first_message(report: TestReport) -> str:
    for result in report.failing:
        text = f"{result.exc_type or 'failure'}: {result.message}".strip()
        return text.splitlines()[0][:300] if text else ""
    return report.output[-300:].strip()
