"""Scratch copies of the project and candidate validation inside them.

The project root (the loop's workspace) is never written: each worker gets
its own copy, made once per ``propose()`` call, and a candidate is validated by
writing the changed files into one copy, running the tests, and writing the
original text back. Validation is cheapest first (shared with the loop's own
order): the previously failing tests with a per-candidate timeout (mutants
often loop forever), then the whole suite. Like the loop's own judge
(README, "How a run stops"), a candidate is plausible when it makes at least
one failing test pass and no test fail that passed at the baseline; tests that
failed at the baseline may stay failing (an unrelated broken test must not
block the fix of another bug).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from repairloop.types import TestReport, copy_ignore, judge_run

RunTests = Callable[[Path, Sequence[str], float, bool], TestReport]


def copy_project(src: Path, dst: Path) -> Path:
    """Copy the project to ``dst`` without VCS data, caches, virtualenvs or run data."""
    shutil.copytree(src, dst, symlinks=True, ignore=copy_ignore)
    return dst


@contextlib.contextmanager
def scratch_copy(src: Path, scratch_dir: Optional[Path]) -> Iterator[Path]:
    """A throw-away copy of the project (``copy_project``), removed on exit."""
    if scratch_dir is not None:
        scratch_dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="repairloop-builtin-", dir=scratch_dir))
    try:
        yield copy_project(src, base / src.name)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@dataclass(frozen=True)
class ValidationPlan:
    """How candidates are validated: target test ids, tolerated failures, timeouts in seconds.

    ``targets`` are every currently failing test, the group being repaired first;
    ``group`` is that group (the loop's ``RepairContext.failing_tests``; empty means
    all targets). ``allowed_failing`` may fail after a candidate without counting
    as broken: the targets themselves and baseline failures nobody asked to repair.
    """

    targets: Tuple[str, ...]
    allowed_failing: FrozenSet[str]
    target_timeout: float
    suite_timeout: float
    probe: Tuple[str, ...] = ()  # a cheap subset of the targets run first when all of them are slow
    probe_timeout: float = 0.0
    group: Tuple[str, ...] = ()
    targeted_run: Tuple[str, ...] = ()  # targets with the earlier tests they need, in order

    @property
    def group_ids(self) -> Tuple[str, ...]:
        return self.group or self.targets

    @property
    def target_run(self) -> Tuple[str, ...]:
        """The tests a run of the targets runs: ``targeted_run`` when it has them all, else
        the targets alone."""
        run = self.targeted_run
        return run if run and set(self.targets) <= set(run) else self.targets


@dataclass(frozen=True)
class Verdict:
    """What validating one candidate showed.

    ``status`` is ``plausible``, ``failing`` (fixed no target), ``timeout``,
    ``broke_passing`` or ``error`` (``passed``/``partial`` only between stages);
    ``fixed`` counts targets that passed; ``missed_group`` counts tests of the
    repaired group still failing (0 for a plausible patch that fixes the group),
    ``missed`` every target (group and other failing tests) still failing, ``still`` their ids.
    """

    status: str
    reason: str
    fixed: int = 0
    seconds: float = 0.0
    missed_group: int = 0
    missed: int = 0
    still: Tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Plausible and every failing test passes: what ends the search early.

        A patch that fixes only the group does not: the group can be a part of
        one fault (``% 400 != 0`` fixes 2024 but not 2000, where ``and`` → ``or``
        fixes both), so the search goes on and such a patch is kept for the end.
        """
        return self.status == "plausible" and self.missed == 0


def _short(ids: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(sorted(ids)[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def judge_targets(report: TestReport, targets: Sequence[str], timeout: float) -> Verdict:
    """Verdict of the run of the target (previously failing) tests only (``types.judge_run``'s
    rule).

    ``passed``: all of them pass; ``partial``: some do (worth a suite run);
    ``failing``: none does; ``timeout``: the run was stopped.
    """
    if report.timed_out or report.exit_code is None:
        return Verdict("timeout", f"failing tests did not finish within {timeout:.1f}s")
    verdict = judge_run(report, targets)
    if verdict.fixed and not verdict.still_failing and not verdict.error:
        return Verdict("passed", "", len(verdict.fixed))
    first = next((r for r in report.failing), None)
    detail = f" ({first.exc_type}: {first.message[:120]})" if first and first.exc_type else ""
    status = "partial" if verdict.fixed and not verdict.error else "failing"
    still = _short(verdict.still_failing) or f"exit code {report.exit_code}"
    return Verdict(status, f"still failing: {still}{detail}", len(verdict.fixed))


def judge_suite(report: TestReport, plan: ValidationPlan, timeout: float) -> Verdict:
    """Verdict of the whole-suite run of a candidate that made some target test pass
    (``types.judge_run``: plausible when a target passes and nothing outside
    ``plan.allowed_failing`` fails); ``fixed``/``missed_group`` are counted here."""
    if report.timed_out or report.exit_code is None:
        return Verdict("timeout", f"the test suite did not finish within {timeout:.1f}s")
    verdict = judge_run(report, plan.targets, plan.allowed_failing)
    if verdict.broke:
        return Verdict("broke_passing", f"breaks tests that passed: {_short(verdict.broke)}")
    if verdict.error:
        return Verdict("error", verdict.error)
    if not verdict.fixed:
        return Verdict("failing", "the failing tests pass alone but not in the whole suite")
    still = verdict.still_failing
    missed = [t for t in plan.group_ids if t in still]
    if not still:
        reason = "passes the failing tests and the whole suite"
    else:
        reason = (
            f"fixes {len(verdict.fixed)} of {len(plan.targets)} failing tests and breaks none "
            f"(still failing: {_short(still)})"
        )
    return Verdict(
        "plausible",
        reason,
        len(verdict.fixed),
        missed_group=len(missed),
        missed=len(still),
        still=still,
    )


def remove_coverage(coverage_file: Optional[str]) -> None:
    """The caller owns the runner's coverage data file (and its private temp dir)."""
    if not coverage_file:
        return
    data = Path(coverage_file)
    if data.parent.name.startswith("repairloop-coverage-"):
        shutil.rmtree(data.parent, ignore_errors=True)
    else:
        for leftover in data.parent.glob(data.name + "*"):
            leftover.unlink(missing_ok=True)


def snapshot(sources: Dict[str, str]) -> Tuple[Tuple[str, int], ...]:
    """A cheap fingerprint of the sources, to notice that the workspace changed."""
    return tuple(sorted((p, hash(t)) for p, t in sources.items()))


__all__: List[str] = [
    "RunTests",
    "ValidationPlan",
    "Verdict",
    "copy_project",
    "judge_suite",
    "judge_targets",
    "remove_coverage",
    "scratch_copy",
    "snapshot",
]
