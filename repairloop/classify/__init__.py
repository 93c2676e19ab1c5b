"""Failure to kind: an ordered rule table over a test run's structured results.

DESIGN.md's "Failure kinds" table is the spec. Each failing ``TestResult``
goes through ``rules.RULES`` (first match wins): environment, timeout,
test_config, syntax, imports (dependency, or a project module: logic /
test_config; an extension not built is environment), conftest, logic. A run that was killed, or is
not green without any failing result (command not found, broken conftest, no tests collected), adds
one ``<session>`` failure classified by ``session.py`` from the exit code and the output. flaky is
never set here: the loop decides it by re-runs.

Submodules: ``evidence`` (normalising a result, the run's facts), ``rules``,
``imports`` (import failures), ``services`` (an unreachable service and its
address), ``build`` (the project's extensions and build command), ``session``,
``packages`` (import name -> PyPI distribution, installed probe).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import FrozenSet, Optional, Sequence, Tuple

from repairloop.classify.evidence import project_modules, run_facts
from repairloop.classify.packages import distribution_for
from repairloop.classify.rules import classify_result
from repairloop.classify.whole_run import SESSION_ID, session_failure, signal_of
from repairloop.types import Failure, FailureKind, InterpreterQuery, TestReport

__all__ = [
    "BLOCKING_PRIORITY",
    "SESSION_ID",
    "blocking_kind",
    "classify_report",
    "distribution_for",
    "overall_kind",
]

# Blocking kinds, most fundamental first: a broken interpreter or test setup hides
# everything below it, so it is what the user must fix first.
BLOCKING_PRIORITY: Tuple[FailureKind, ...] = (
    FailureKind.ENVIRONMENT,
    FailureKind.TEST_CONFIG,
    FailureKind.SYNTAX,
    FailureKind.DEPENDENCY,
    FailureKind.TIMEOUT,
)


def classify_report(
    report: TestReport, project: Path, *, interpreter: Optional[InterpreterQuery] = None
) -> Tuple[Failure, ...]:
    """Classify every failing result of ``report`` (DESIGN.md "Failure kinds").

    Returns one ``Failure`` per failing ``TestResult`` (collection errors
    included) in the report's order, plus one ``<session>`` failure when the
    run was killed (timeout, signal) or is not green without a failing result
    (exit 127, exit 4 conftest error, exit 5 no tests, ...). A green report
    gives (). ``project`` is the root that frame paths are relative to.
    ``interpreter`` asks the project's interpreter, confined, whether a package
    is installed and at which version (None: this process is asked). Never raises on odd
    input: evidence no rule recognises is ``logic``.
    """
    project = Path(project)

    @functools.lru_cache(maxsize=1)
    def modules() -> FrozenSet[str]:  # walked at most once, and only when a rule needs it
        return project_modules(project)

    facts = run_facts(report)
    failures = tuple(
        classify_result(r, project, interpreter, modules, facts) for r in report.failing
    )
    killed = report.timed_out or signal_of(report) is not None
    if report.green or (failures and not killed):
        return failures
    return failures + (session_failure(report, project, interpreter, modules),)


def blocking_kind(
    failures: Sequence[Failure], retry_kinds: Sequence[str] = ("logic",)
) -> Optional[FailureKind]:
    """The first kind of ``BLOCKING_PRIORITY`` present in ``failures`` and not in ``retry_kinds``,
    or None.

    ``retry_kinds`` holds kind values (settings' ``retry_kinds``). logic and
    flaky failures never block.
    """
    present = {f.kind for f in failures}
    for kind in BLOCKING_PRIORITY:
        if kind in present and kind.value not in retry_kinds:
            return kind
    return None


def overall_kind(failures: Sequence[Failure]) -> str:
    """``classify --json``'s ``kind``: the blocking kind's value, else ``logic``, else ``none``.

    With only flaky failures it is ``flaky``.
    """
    blocking = blocking_kind(failures)
    if blocking is not None:
        return blocking.value
    if not failures:
        return "none"
    kinds = {f.kind for f in failures}
    return FailureKind.LOGIC.value if FailureKind.LOGIC in kinds else failures[0].kind.value
