"""How the loop layer describes a test run and a blocking failure, for the journal and the
console."""

from __future__ import annotations

from typing import Sequence

from repairloop.journal import TestsSummary
from repairloop.types import Failure, FailureKind, TestReport


def report_summary(report: TestReport) -> TestsSummary:
    """A test run as the journal keeps it: exit code, failing ids, passed count, time, source,
    output tail."""
    return TestsSummary(
        exit_code=report.exit_code,
        failing=report.failing_ids,
        passed=len(report.passed_ids),
        seconds=round(report.seconds, 3),
        timed_out=report.timed_out,
        source=report.source,
        output_tail=report.output[-2000:],
    )


def describe_run(report: TestReport) -> str:
    """One line for the console: how many passed and failed, or that the run was killed."""
    if report.timed_out:
        return f"the test run was killed after {report.seconds:.0f} s"
    return (
        f"{len(report.passed_ids)} passed, {len(report.failing_ids)} failing (exit "
        f"{report.exit_code})"
    )


def blocking_detail(kind: FailureKind, failures: Sequence[Failure]) -> str:
    """The stop detail for a blocking failure kind: the first such failure, where, and its hint."""
    first = next(f for f in failures if f.kind is kind)
    where = f" at {first.location}" if first.location else ""
    hint = f"; {first.hint}" if first.hint else ""
    return f"{kind.value} failure{where}: {first.message}{hint}"
