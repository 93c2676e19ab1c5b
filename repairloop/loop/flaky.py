"""Before the first model call: do the baseline's failures reproduce?

Part of the loop layer. ``confirm_failures`` re-runs the failing tests in the
suite's order (the whole suite, as the user's command runs it) and each one
alone, ``confirm_runs`` times (DESIGN.md, "The loop"): a test whose outcome
changes between identical runs is flaky; one that passes alone but fails in
the suite's order is flaky (order-dependent), and the earlier test that makes
it fail is looked for by bisection so the report can show a short command.
Flaky tests are reported and left alone; nothing is spent on them. A test
that fails alone with another exception than in the suite's order needs the
tests before it (``Confirmation.needs_earlier``). Whether the failures happen
in the user's world too is ``loop.fidelity``'s.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from repairloop.classify import SESSION_ID
from repairloop.loop.test_ids import reconciled
from repairloop.runner import is_pytest_command
from repairloop.runner.command import with_arguments
from repairloop.types import Failure, FailureKind, TestReport, TestRunner

ALONE_LIMIT = 20  # failing tests re-run one by one; the rest are re-run together
BISECT_LIMIT = 3  # order-dependent tests whose polluter is looked for
BISECT_STEPS = 8  # test runs spent looking for one polluter (halves 2**7 candidates)


@dataclass(frozen=True)
class FlakyTest:
    """A failing test left alone: why (``reason``) and a command that shows it."""

    test_id: str
    reason: str
    command: str


@dataclass(frozen=True)
class Confirmation:
    """What the re-runs showed.

    ``flaky`` are baseline failures whose outcome changed or that pass alone;
    ``confirmed`` failed in every run. ``unstable`` are tests that passed at
    the baseline and failed in a re-run of the same suite (flaky too, though
    nothing was going to repair them). ``needs_earlier`` are confirmed tests
    that fail alone with another exception than in the suite's order: they
    depend on tests before them, which a targeted run must then include;
    ``runs_alone`` those that fail alone just as in the suite's order.
    ``runs`` counts test-command runs.
    """

    flaky: Tuple[FlakyTest, ...] = ()
    confirmed: Tuple[str, ...] = ()
    unstable: Tuple[str, ...] = ()
    runs: int = 0
    notes: Tuple[str, ...] = ()
    needs_earlier: Tuple[str, ...] = ()
    runs_alone: Tuple[str, ...] = ()

    def console_notes(self) -> List[str]:
        """What the console says about the re-runs: the tests that need earlier ones, each flaky
        test with its reason and command."""
        notes = [
            f"{len(self.needs_earlier)} failing test(s) fail otherwise when run alone: "
            "candidates run them after the tests before them in their module"
        ][: bool(self.needs_earlier)]
        return notes + [
            f"flaky, left alone: {f.test_id} ({f.reason}; see: {f.command})" for f in self.flaky
        ]


def show(suite: TestRunner, test_ids: Sequence[str] = ()) -> str:
    """The suite's command (with ``test_ids``) as a user would type it."""
    command = with_arguments(suite.command, tuple(test_ids)) if test_ids else suite.command
    return command if isinstance(command, str) else shlex.join(command)


@dataclass
class _Tally:
    in_order: List[bool] = field(default_factory=lambda: [True])  # failed? The baseline failed it.
    alone: List[bool] = field(default_factory=list)
    alone_errors: List[Optional[str]] = field(default_factory=list)  # exception types, alone


def confirm_failures(
    suite: TestRunner, root: Path, failing: Sequence[str], baseline: TestReport, confirm_runs: int
) -> Confirmation:
    """Re-run ``failing`` (test ids of ``baseline``) in order and alone, ``confirm_runs`` times.

    ``baseline.results`` gives the suite's order. Test ids are passed only to
    a pytest command; any other command is re-run whole, which shows changing
    outcomes but not order dependence. A re-run that times out or gives no
    per-test results ends the confirmation (nothing can be told from it).
    """
    ids = [t for t in failing if t != SESSION_ID]
    if confirm_runs <= 0 or not ids:
        return Confirmation(confirmed=tuple(failing))
    tally: Dict[str, _Tally] = {t: _Tally() for t in ids}
    unstable: List[str] = []
    runs, notes = 0, []
    for _ in range(confirm_runs):
        spent, stop_note = _rerun(suite, root, ids, baseline, tally, unstable)
        runs += spent
        if stop_note:
            notes.append(stop_note)
            break
    flaky, confirmed = [], []
    order = [r.test_id for r in baseline.results]
    bisected = 0
    for t in ids:
        record = _judge(suite, t, tally[t])
        if (
            record is not None
            and record.reason.startswith("order-dependent")
            and bisected < BISECT_LIMIT
        ):
            bisected += 1
            polluter, spent = _find_polluter(suite, root, t, order)
            runs += spent
            if polluter:
                record = FlakyTest(
                    t, f"{record.reason}; it fails after {polluter}", show(suite, [polluter, t])
                )
        if record is None:
            confirmed.append(t)
        else:
            flaky.append(record)
    errors = {r.test_id: r.exc_type for r in baseline.failing}
    earlier = tuple(t for t in confirmed if any(e != errors.get(t) for e in tally[t].alone_errors))
    alone = tuple(t for t in confirmed if tally[t].alone_errors and t not in earlier)
    confirmed += [t for t in failing if t == SESSION_ID]
    return Confirmation(
        tuple(flaky), tuple(confirmed), tuple(unstable), runs, tuple(notes), earlier, alone
    )


def _rerun(
    suite: TestRunner,
    root: Path,
    ids: Sequence[str],
    baseline: TestReport,
    tally: Dict[str, _Tally],
    unstable: List[str],
) -> Tuple[int, str]:
    """One re-run of the suite and of ``ids`` alone, into ``tally`` and ``unstable``: (runs, why
    the confirmation must stop, or "")."""
    full = suite.run(root)
    if full.timed_out or full.source == "exit_code":
        return (
            1,
            "a re-run of the suite timed out or gave no per-test results: flaky tests not checked",
        )
    ran_ids = frozenset(r.test_id for r in baseline.results)
    full, _ = reconciled(full, ran_ids, ids)  # ids that moved (test_ids) are the same tests
    failed_now, ran_now = set(full.failing_ids), {r.test_id for r in full.results}
    for t in ids:
        if t in ran_now or "::" not in t:
            tally[t].in_order.append(t in failed_now)
    unstable += [
        t
        for t in full.failing_ids
        if t not in tally and t in baseline.passed_ids and t not in unstable
    ]
    alone = _run_alone(suite, root, ids, tally) if is_pytest_command(suite.command) else 0
    return 1 + alone, ""


def _run_alone(suite: TestRunner, root: Path, ids: Sequence[str], tally: Dict[str, _Tally]) -> int:
    """One run per test (each in its own process), the ones past ALONE_LIMIT together; returns
    runs."""
    runs = 0
    for t in ids[:ALONE_LIMIT]:
        report = suite.run(root, [t])
        runs += 1
        ran = {r.test_id for r in report.results}
        # a test whose id moved (test_ids) is not found alone: that run tells nothing
        if not report.timed_out and report.source != "exit_code" and t in ran:
            tally[t].alone.append(t in report.failing_ids)
            tally[t].alone_errors += [r.exc_type for r in report.failing if r.test_id == t]
    rest = list(ids[ALONE_LIMIT:])
    if rest:
        report = suite.run(root, rest)
        runs += 1
        ran = {r.test_id for r in report.results}
        for t in rest:
            if not report.timed_out and report.source != "exit_code" and t in ran:
                tally[t].alone.append(t in report.failing_ids)
    return runs


def _judge(suite: TestRunner, test_id: str, tally: _Tally) -> Optional[FlakyTest]:
    """Flaky (with reason and command) or None for a test that failed every time."""
    in_order, alone = tally.in_order, tally.alone
    if not all(in_order):
        failed = sum(in_order)
        return FlakyTest(
            test_id,
            f"outcome changes between identical runs: the suite failed it in {failed} of "
            f"{len(in_order)} runs",
            show(suite),
        )
    if alone and not any(alone):
        return FlakyTest(
            test_id,
            f"order-dependent: it passes alone ({len(alone)} of {len(alone)} runs) and fails "
            "in the suite's order",
            show(suite),
        )
    if alone and not all(alone):
        return FlakyTest(
            test_id,
            f"outcome changes between identical runs: alone it failed in {sum(alone)} of "
            f"{len(alone)} runs",
            show(suite, [test_id]),
        )
    return None


def _find_polluter(
    suite: TestRunner, root: Path, test_id: str, order: Sequence[str]
) -> Tuple[Optional[str], int]:
    """The earlier test after which ``test_id`` fails, by bisecting the tests before it; (test or
    None, runs).

    Each step runs a half of the candidates and then ``test_id``; the half
    that still makes it fail is kept. When neither half does alone (it takes
    more than one test), or the budget of steps is spent, no single test is named.
    """
    if test_id not in order:
        return None, 0
    candidates = [t for t in order[: order.index(test_id)] if "::" in t and t != test_id]
    runs = 0
    while len(candidates) > 1 and runs < BISECT_STEPS:
        half = len(candidates) // 2
        for part in (candidates[:half], candidates[half:]):
            report = suite.run(root, [*part, test_id])
            runs += 1
            if test_id in report.failing_ids:
                candidates = part
                break
        else:
            return None, runs
    if len(candidates) == 1 and runs < BISECT_STEPS:
        report = suite.run(root, [candidates[0], test_id])
        runs += 1
        if test_id in report.failing_ids:
            return candidates[0], runs
    return None, runs


def with_flaky(failures: Sequence[Failure], found: Confirmation) -> Tuple[Failure, ...]:
    """``failures`` with each flaky test's kind set to ``flaky`` and its reason and command as the
    hint."""
    flaky = {f.test_id: f for f in found.flaky}
    out = []
    for failure in failures:
        record = flaky.get(failure.test_id)
        if record is None:
            out.append(failure)
        else:
            out.append(
                replace(
                    failure,
                    kind=FailureKind.FLAKY,
                    retryable=False,
                    hint=f"flaky, {record.reason}: {record.command}",
                )
            )
    return tuple(out)
