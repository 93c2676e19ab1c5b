"""Patch validation (part of the loop layer): a candidate in the workspace, judged by the tests.

The candidate's files are written into the workspace; the previously failing
tests run first (with pytest), then the full suite; a candidate that fixes at
least one failing test and breaks none is kept (the proof run, ``proof.py``,
later repeats the full suite ``final_runs`` times on a fresh copy), anything
else is reverted to the checkpoint taken before it was written. Verdicts come from
the runner's structured results and exit codes, never from what tests print,
and a run counts only when it could not have been forged (DESIGN.md "The
verdict"): it reached its normal end, its two witnesses agree
(``runner.crosscheck``), the test and protected files are as they were before
it, and it collected every test the baseline collected. A test is fixed only
when it is reported ``passed``: skipped, xfailed, deselected or missing is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from repairloop.classify import classify_report
from repairloop.journal import Journal
from repairloop.loop.partials import misses_shared_fault
from repairloop.loop.prefilter import JournalledWarm, WarmSlot
from repairloop.loop.test_ids import moved_note, reconciled, unmatched
from repairloop.patch import AppliedPatch, GuardPolicy
from repairloop.types import (
    Decision,
    Failure,
    InterpreterQuery,
    Localisation,
    ResultSource,
    TestFiles,
    TestReport,
    TestResult,
    TestRunner,
    judge_run,
)
from repairloop.workspace import Workspace
from repairloop.workspace.fingerprint import Fingerprint, changed_files, fingerprint

MAX_EARLIER = 200  # tests before a failing test in its module that a targeted run includes


@dataclass(frozen=True)
class ValidationSetup:
    """What validating candidates needs, built once per run.

    ``targeted`` is True when the test command takes test ids (pytest), so the
    failing tests can run alone first; ``interpreter`` asks the project's interpreter (classify);
    ``guarded`` tells the files no run may change (tests, protected files);
    ``baseline_ids`` are the tests the baseline's full run collected;
    ``warm`` runs the failing tests in a warm process first (``warm.py``;
    the workspace's, kept in ``slot`` and ended by ``close``).
    ``run_order`` is the order the baseline ran its tests in; ``needs_earlier``
    the failing tests that fail otherwise alone (``flaky.Confirmation``), which
    the targeted run gives the tests before them in their module, and
    ``runs_alone`` those seen failing alone just as in order;
    ``known_failures`` each failing test's latest failure (the baseline's, then
    the kept candidates'), so a targeted run whose failure changed kind leaves
    the verdict to the full suite, unless the test is in ``runs_alone``.
    """

    workspace: Workspace
    suite: TestRunner
    journal: Journal
    policy: GuardPolicy
    test_files: TestFiles
    final_runs: int
    targeted: bool
    interpreter: Optional[InterpreterQuery]
    guarded: Callable[[str], bool] = lambda path: False
    baseline_ids: FrozenSet[str] = frozenset()
    warm: bool = False
    slot: WarmSlot = field(default_factory=WarmSlot, compare=False)
    run_order: Tuple[str, ...] = ()
    needs_earlier: FrozenSet[str] = frozenset()
    runs_alone: FrozenSet[str] = frozenset()
    known_failures: Mapping[str, TestResult] = field(default_factory=dict)

    def targeted_ids(self, failing: Sequence[str]) -> Tuple[str, ...]:
        """The tests a candidate's targeted run runs: ``failing``, each one in ``needs_earlier``
        after the tests the baseline ran before it in its module (the last ``MAX_EARLIER`` of
        them), in the suite's order."""
        wanted = set(failing)
        for test_id in failing:
            if test_id not in self.needs_earlier or test_id not in self.run_order:
                continue
            module = test_id.split("::", 1)[0] + "::"
            earlier = self.run_order[: self.run_order.index(test_id)]
            wanted.update([t for t in earlier if t.startswith(module)][-MAX_EARLIER:])
        in_order = [t for t in self.run_order if t in wanted]
        return tuple(in_order + [t for t in failing if t not in in_order])

    def failure_changed(self, report: TestReport, failing: Sequence[str]) -> List[str]:
        """The ``failing`` tests that fail in ``report`` with another exception type than their
        latest known failure, but for those known to run alone as in order (``runs_alone``: a
        changed failure is then the candidate's)."""
        before = self.known_failures
        return [
            r.test_id
            for r in report.failing
            if r.test_id in failing
            and r.test_id not in self.runs_alone
            and r.test_id in before
            and r.exc_type != before[r.test_id].exc_type
        ]

    def warm_process(self) -> Optional[JournalledWarm]:
        """The workspace's warm process, started (before a candidate is written); None when off or
        refused."""
        if not (self.warm and self.targeted):
            return None
        root = self.workspace.root
        warm = self.slot.get(
            lambda: JournalledWarm(
                self.suite.warm(root, tuple(fingerprint(root, self.guarded))), self.journal, "loop"
            )
        )
        return warm if warm.ready() else None

    def close(self) -> None:
        """End the warm process (the loop is over; proof runs are fresh)."""
        self.slot.close()


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


def validate(
    setup: ValidationSetup,
    applied: AppliedPatch,
    failing: Tuple[str, ...],
    flaky: Sequence[str],
    prefilter: bool = True,
    localisation: Optional[Localisation] = None,
) -> Checked:
    """Write ``applied`` into the workspace, judge it, keep it or revert it.

    With ``prefilter`` the failing tests run alone first (warm when it can),
    so a candidate that fixes none of them costs no full run; without it (a
    candidate whose whole suite already passed in the proposer's own copy,
    ``Proposal.validated``) only the fresh full run is paid. Either way the
    fresh full run alone decides "kept"; a partial fix that does not reach the fault all
    failing tests share (``partials``, on ``localisation``, the code's before ``applied``) is
    reverted. Raises WorkspaceError when the workspace cannot be written or restored.
    """
    ws = setup.workspace
    warm = setup.warm_process() if prefilter else None
    token = ws.checkpoint()
    try:
        ws.write_files({c.path: c.new_text for c in applied.changes})
        oracle = fingerprint(ws.root, setup.guarded)  # the candidate's own (allowed) edits included
        targeted = _Targeted(warm, tuple(c.path for c in applied.changes)) if prefilter else None
        checked = _judge(setup, failing, flaky, oracle, targeted)
        missed = checked.decision is Decision.KEPT and misses_shared_fault(
            localisation, applied, failing, checked.failing, setup.test_files
        )
        if missed:
            checked = replace(checked, decision=Decision.REVERTED, reason=missed, failing=failing)
    except BaseException:  # Ctrl-C or a crash mid-validation: an untested candidate never stays
        ws.revert_to(token)
        raise
    if checked.decision is not Decision.KEPT:
        ws.revert_to(token)
        return checked
    if checked.report is None:
        return checked
    failures = classify_report(checked.report, ws.root, interpreter=setup.interpreter)
    return Checked(
        checked.decision,
        checked.reason,
        checked.fixed,
        checked.broke,
        checked.failing,
        checked.report,
        checked.seconds,
        failures,
    )


@dataclass(frozen=True)
class _Targeted:
    """How the failing tests run alone: in ``warm`` (the candidate's files being ``changed``) when
    it can."""

    warm: Optional[JournalledWarm]
    changed: Tuple[str, ...]

    def run(
        self, setup: ValidationSetup, failing: Tuple[str, ...], oracle: Fingerprint
    ) -> TestReport:
        """A warm run only rejects: a candidate it passes still has to pass the fresh full suite."""
        if self.warm is not None:
            report = self.warm.run(failing, self.changed, setup.suite.time_limit())
            if report is not None:
                return report
        return setup.suite.run(setup.workspace.root, failing, protect=tuple(oracle))


def _rejected_first(
    setup: ValidationSetup, failing: Tuple[str, ...], oracle: Fingerprint, targeted: _Targeted
) -> Tuple[Optional[Checked], float]:
    """The targeted run of the failing tests: (a reverting Checked when it rejects the candidate,
    else None; its seconds)."""
    first = targeted.run(setup, setup.targeted_ids(failing), oracle)
    untrusted = untrusted_run(setup, first, setup.workspace.root, oracle, full=False)
    if untrusted:
        return Checked(Decision.REVERTED, untrusted, failing=failing), first.seconds
    # A failure that changed kind in the targeted run may be the tests' order, not the
    # candidate, and a failing test it did not run may have moved (an id made from unordered
    # values): the full suite, in the suite's order, decides.
    ran = {r.test_id for r in first.results}
    if (
        judge_run(first, failing).fixed
        or setup.failure_changed(first, failing)
        or not all(t in ran for t in failing)
    ):
        return None, first.seconds
    reason = f"fixed none of the {len(failing)} failing test(s): " + _first_message(first)
    return Checked(Decision.REVERTED, reason, failing=failing, report=first), first.seconds


def _judge(
    setup: ValidationSetup,
    failing: Tuple[str, ...],
    flaky: Sequence[str],
    oracle: Fingerprint,
    targeted: Optional[_Targeted],
) -> Checked:
    suite, root = setup.suite, setup.workspace.root
    seconds = 0.0
    if (
        targeted is not None and setup.targeted and not any(t.startswith("<") for t in failing)
    ):  # <session>: the suite is the unit
        rejected, seconds = _rejected_first(setup, failing, oracle, targeted)
        if rejected is not None:
            return replace(rejected, seconds=seconds)
    full, moved = reconciled(
        suite.run(root, protect=tuple(oracle)), setup.baseline_ids, (*failing, *flaky)
    )
    seconds += full.seconds
    untrusted = untrusted_run(setup, full, root, oracle, full=True)
    if untrusted:
        return Checked(Decision.REVERTED, untrusted, failing=failing, seconds=seconds)
    verdict = judge_run(full, failing, flaky)
    if verdict.plausible:  # the proof run (proof.py) repeats the full suite `final_runs` times
        reason = (
            f"fixed {len(verdict.fixed)} test(s), broke none; {len(verdict.failing)} still failing"
            + moved_note(moved)
        )
        return Checked(Decision.KEPT, reason, verdict.fixed, (), verdict.failing, full, seconds)
    if verdict.error:
        reason = verdict.error
    elif verdict.broke:
        reason = (
            f"fixed {len(verdict.fixed)} but broke {len(verdict.broke)}: "
            f"{', '.join(verdict.broke[:5])}"
        )
    else:
        reason = f"fixed none of the {len(failing)} failing test(s): " + _first_message(full)
    return Checked(
        Decision.REVERTED, reason, verdict.fixed, verdict.broke, verdict.failing, full, seconds
    )


def untrusted_run(
    setup: ValidationSetup, report: TestReport, root: Path, oracle: Fingerprint, *, full: bool
) -> str:
    """Why this run cannot judge the candidate, or "": timed out, stopped early, witnesses disagree,
    a test or protected file changed while it ran, or (a full run) tests the baseline had went
    missing."""
    if report.timed_out:
        which = "test suite" if full else "failing tests"
        if (
            setup.suite.deadline() <= 1.0
        ):  # the run was cut to what was left of --timeout, and that ran out
            return (
                f"the run's time budget (--timeout) ran out while the {which} ran with this "
                f"candidate: not judged"
            )
        return f"the {which} timed out with this candidate"
    if not report.complete:
        return (
            "the test run ended before pytest finished (a crash or an early exit), so nothing "
            "it reported counts"
        )
    if report.distrust:
        return f"the test results cannot be trusted: {report.distrust}"
    changed = changed_files(oracle, fingerprint(root, setup.guarded))
    if changed:
        return (
            "while the tests ran, the candidate's code changed test, protected or compiled "
            "bytecode file(s): "
            + ", ".join(changed[:5])
            + "; tests are the oracle and may not be rewritten, nor the code "
            "an import runs"
        )
    if full and report.source is not ResultSource.EXIT_CODE and setup.baseline_ids:
        seen = {r.test_id for r in report.results}
        missing = sorted(t for t in setup.baseline_ids if "::" in t and t not in seen)
        missing = unmatched(missing, sorted(seen - setup.baseline_ids))
        if missing:
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            return (
                f"{len(missing)} test(s) the baseline ran were not run with this candidate: "
                + ", ".join(missing[:3])
                + more
            )
    return ""


def _first_message(report: TestReport) -> str:
    for result in report.failing:
        text = f"{result.exc_type or 'failure'}: {result.message}".strip()
        return text.splitlines()[0][:300] if text else ""
    return report.output[-300:].strip()
