"""What a test run says of a candidate: the one rule the loop and the offline engine both judge by.

A previously failing test is fixed only when it is reported ``passed`` (not
xpassed, skipped, xfailed or missing; DESIGN.md "The verdict"); a module that
failed to collect is fixed when its tests now run and all pass. A test failing
after the candidate that was not failing before, and is not tolerated (a flaky
test, or a baseline failure nobody asked to repair), is broken. A run whose exit
code no test result explains (pytest's 2-5, or 1 with no failing result) judges
nothing. With no per-test results (a command known only by its exit code) the
suite is one unit: green fixes every failing test, anything else none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence, Tuple

from repairloop.types.kinds import ResultSource
from repairloop.types.reports import TestReport


def passes(test_id: str, report: TestReport) -> bool:
    """Reported ``passed``; a module that failed to collect passes when its tests now run and all
    pass."""
    if test_id in report.passed_only:
        return True
    if "::" in test_id:
        return False
    inside = [r for r in report.results if r.test_id.startswith(test_id + "::")]
    return bool(inside) and all(r.test_id in report.passed_only for r in inside)


@dataclass(frozen=True)
class CandidateVerdict:
    """The run's verdict on a candidate: ``fixed`` and ``still_failing`` split the tests that failed
    before; ``broke`` are new failures; ``failing`` every test failing after it but the tolerated
    ones; ``error`` why the run judges nothing ("" when it does)."""

    fixed: Tuple[str, ...]
    broke: Tuple[str, ...]
    still_failing: Tuple[str, ...]
    failing: Tuple[str, ...]
    error: str = ""

    @property
    def plausible(self) -> bool:
        """Fixes at least one failing test and breaks none: what keeps a candidate."""
        return bool(self.fixed) and not self.broke and not self.error


def judge_run(
    report: TestReport, failing: Sequence[str], tolerated: Collection[str] = ()
) -> CandidateVerdict:
    """The verdict of ``report`` (a run with the candidate applied) on the tests ``failing`` before
    it, ``tolerated`` failures not counting as broken (see the module docstring)."""
    if report.source is ResultSource.EXIT_CODE:
        fixed = tuple(failing) if report.green else ()
        return CandidateVerdict(
            fixed,
            (),
            tuple(t for t in failing if t not in fixed),
            () if report.green else tuple(failing),
        )
    if report.exit_code not in (0, 1) or (report.exit_code == 1 and not report.failing):
        error = (
            f"the test suite exited with code {report.exit_code} without a failing test to "
            f"explain it"
        )
        return CandidateVerdict((), (), tuple(failing), tuple(failing), error)
    still = tuple(t for t in failing if not passes(t, report))
    after = tuple(sorted((set(report.failing_ids) | set(still)) - set(tolerated)))
    fixed = tuple(t for t in failing if t not in still)
    broke = tuple(t for t in after if t not in failing)
    return CandidateVerdict(fixed, broke, still, after)
