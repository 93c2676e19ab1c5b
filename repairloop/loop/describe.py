"""How the loop layer describes a test run and a blocking failure, for the journal and the
console."""

from __future__ import annotations

from typing import List, Sequence

from repairloop.journal import TestsSummary
from repairloop.textutil import listed
from repairloop.types import Failure, FailureKind, TestReport
from repairloop.workspace.ignored import IgnoredFiles


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


def ignored_files_notes(ignored: IgnoredFiles) -> List[str]:
    """The console's lines about the git-ignored files the workspace brought along or left out
    over its size limits (``workspace.ignored``); [] when there are none."""
    notes = []
    if ignored.brought:
        notes.append(
            f"brought {len(ignored.brought)} git-ignored file(s) your tests need into the copy: "
            + listed(ignored.brought, 8)
        )
    if ignored.too_large:
        notes.append(
            f"left out git-ignored file(s) over the size limit: {listed(ignored.too_large, 8)}"
        )
    return notes
