"""What a run of the test command reports: per-test results, the whole report, classified
failures."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, FrozenSet, Mapping, Optional, Sequence, Tuple

from repairloop.types.kinds import FailureKind, ResultSource, TestOutcome


@dataclass(frozen=True)
class Frame:
    """One traceback frame. ``path`` is relative to the project root when inside it."""

    path: str
    line: int
    function: str = ""


@dataclass(frozen=True)
class TestResult:
    """One test id's result from one test-suite run.

    ``phase`` is where it ended: ``setup``, ``call``, ``teardown`` or ``collect``
    (a collection error, whose ``test_id`` is the module's node id). ``frames``
    run outermost first; ``output`` is the tail of captured stdout/stderr.
    """

    __test__ = False

    test_id: str
    outcome: TestOutcome
    duration: float = 0.0  # seconds
    phase: str = "call"
    exc_type: Optional[str] = None
    message: str = ""
    frames: Tuple[Frame, ...] = ()
    output: str = ""
    longrepr: str = ""
    exc_module: str = ""  # the exception class's module ("redis.exceptions"; "builtins")
    causes: Tuple[
        str, ...
    ] = ()  # "module.Type: message" of what it was raised from, outermost first
    endpoint: str = ""  # "host:port" a failed connection tried, when the frames held it
    doctest: str = (
        ""  # "module" (a module's docstring examples) or "text" (a text file's) for a doctest item
    )

    @property
    def failed(self) -> bool:
        return self.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)


@dataclass(frozen=True)
class TestReport:
    """The structured result of one run of the test command.

    ``exit_code`` is None when the run was killed (timeout or signal).
    ``source`` says where per-test results came from: ``plugin`` (our pytest
    plugin), ``junit`` (a JUnit XML file) or ``exit_code`` (nothing structured;
    only the exit code and the output are known). ``output`` is the combined,
    capped output (head and tail kept). ``coverage_file`` is a coverage.py data
    file with one dynamic context per test, when coverage was requested.
    ``complete`` is False when pytest started but never reached its normal end
    (a crash, ``os._exit``, a kill); ``distrust`` says why the per-test results
    cannot be trusted ("" when they can: ``runner.crosscheck``). The ``failing``,
    ``failing_ids``, ``passed_ids`` and ``passed_only`` views are computed once.
    """

    __test__ = False

    command: Tuple[str, ...]
    exit_code: Optional[int]
    results: Tuple[TestResult, ...] = ()
    output: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    source: ResultSource = ResultSource.EXIT_CODE
    collected: Optional[int] = None
    coverage_file: Optional[str] = None
    signal: Optional[int] = None
    complete: bool = True
    distrust: str = ""

    @cached_property
    def failing(self) -> Tuple[TestResult, ...]:
        return tuple(r for r in self.results if r.failed)

    @cached_property
    def failing_ids(self) -> Tuple[str, ...]:
        return tuple(sorted({r.test_id for r in self.failing}))

    @cached_property
    def passed_only(self) -> FrozenSet[str]:
        """Test ids reported ``passed`` (not xpassed, skipped, xfailed) and never failing: what
        "fixed" needs."""
        failing = set(self.failing_ids)
        return frozenset(
            r.test_id
            for r in self.results
            if r.outcome is TestOutcome.PASSED and r.test_id not in failing
        )

    @cached_property
    def passed_ids(self) -> Tuple[str, ...]:
        failing = set(self.failing_ids)
        return tuple(
            sorted(
                {
                    r.test_id
                    for r in self.results
                    if r.outcome in (TestOutcome.PASSED, TestOutcome.XPASSED)
                    and r.test_id not in failing
                }
            )
        )

    @property
    def green(self) -> bool:
        """True only when the run passed by its structured results and exit code.

        A suite that collected nothing (pytest exit 5), a command that was not
        found (127), a killed run, or any failing result is never green; what
        the tests print is never read for this verdict.
        """
        if (
            self.timed_out
            or self.exit_code != 0
            or self.failing
            or not self.complete
            or self.distrust
        ):
            return False
        if self.source is ResultSource.EXIT_CODE:
            return True
        return bool(self.passed_ids) or (self.collected or 0) > 0


@dataclass(frozen=True)
class Failure:
    """A classified failing test: DESIGN.md's ``classify --json`` failure record."""

    test_id: str
    kind: FailureKind
    retryable: bool
    message: str
    location: Optional[str] = None  # "path:line"
    hint: str = ""
    exc_type: Optional[str] = None
    frames: Tuple[Frame, ...] = ()

    def to_json(self, *, full: bool = False) -> Dict[str, Any]:
        """DESIGN.md's ``classify --json`` record; ``full`` adds the exception type and frames (the
        journal's)."""
        data: Dict[str, Any] = {
            "test_id": self.test_id,
            "kind": self.kind.value,
            "retryable": self.retryable,
            "message": self.message,
            "location": self.location,
            "hint": self.hint,
        }
        if full:
            data["exc_type"] = self.exc_type
            data["frames"] = [
                {"path": f.path, "line": f.line, "function": f.function} for f in self.frames
            ]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Failure":
        """The Failure ``to_json`` wrote (either shape; missing keys read as empty).

        Raises ValueError for an unknown kind, TypeError/KeyError for a record that is not one.
        """
        frames = tuple(
            Frame(str(f["path"]), int(f["line"]), str(f.get("function") or ""))
            for f in data.get("frames") or ()
        )
        return cls(
            test_id=str(data["test_id"]),
            kind=FailureKind(data["kind"]),
            retryable=bool(data.get("retryable")),
            message=str(data.get("message") or ""),
            location=data.get("location"),
            hint=str(data.get("hint") or ""),
            exc_type=data.get("exc_type"),
            frames=frames,
        )


def failure_kinds(failures: Sequence[Failure], flaky: Sequence[str]) -> Dict[str, int]:
    """Kind -> count at the baseline; a flaky test counts as flaky, not as the logic failure it
    looked like.

    The live run (``ending.build_result``) and a report read from a journal count the same way.
    """
    kinds: Dict[str, int] = {}
    for failure in failures:
        kinds[failure.kind.value] = kinds.get(failure.kind.value, 0) + 1
    for _ in flaky:
        kinds[FailureKind.FLAKY.value] = kinds.get(FailureKind.FLAKY.value, 0) + 1
        kinds[FailureKind.LOGIC.value] = max(kinds.get(FailureKind.LOGIC.value, 1) - 1, 0)
    return {k: v for k, v in kinds.items() if v}
