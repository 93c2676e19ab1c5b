"""A TestRunner that replays canned reports: the loop's decisions without a pytest subprocess.

The loop knows a ``repairloop.types.TestRunner`` (``loop.suite.TestSuite`` is the real one).
Tests of what the loop *decides* (stop reasons, hand-overs, budgets, resume, reports, exit
codes, CI and hook outcomes) pass ``runner=Canned(script)`` to ``loop.driver.iterate`` /
``repair`` / ``classify_project``, or to ``repairloop.cli.main``; the workspace, journal,
CLI and scripted model server stay real. What only a real subprocess can show (the
sandbox, forged verdicts, hostile candidates, real projects, the offline engine, warm
validation) keeps the real runner.

A script says, for the tree as it is now, which tests pass and which fail with which
exception and message: ``script(tree) -> {test id: None (passed) or Fail(...)}``, in the
suite's order, or ``TIMED_OUT`` for a run killed at its time limit. ``tree`` reads the
files of the copy under test (the workspace, the proof's fresh copy, a verify worktree),
so a candidate the loop wrote is what the script sees. The reports are real
``TestReport``/``TestResult`` records, as the plugin would give them (``source`` plugin,
complete, two witnesses agreeing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

from repairloop.settings import Settings
from repairloop.types import (
    Frame,
    InterpreterQuery,
    ResultSource,
    SandboxStatus,
    TestOutcome,
    TestReport,
    TestResult,
    WarmStart,
)

COMMAND: Tuple[str, ...] = ("python", "-m", "pytest")
NO_WARM = "canned test runs (tests/canned_runner.py) have no warm process"
SANDBOX = SandboxStatus(
    False, "none", "canned test runs (tests/canned_runner.py): no test code runs"
)


@dataclass(frozen=True)
class Fail:
    """One test's failure as the plugin reports it: ``exc_type`` and ``message``; ``frames``
    outermost first (project-relative paths); ``phase`` ``call``, ``setup`` or ``collect`` (a
    module's id)."""

    exc_type: str
    message: str
    frames: Tuple[Frame, ...] = ()
    phase: str = "call"
    exc_module: str = "builtins"


class TimedOut:
    """What a script returns for a run killed at its time limit (``TIMED_OUT``)."""

    def __repr__(self) -> str:
        return "TIMED_OUT"


TIMED_OUT = TimedOut()  # the whole run was killed at its time limit (no results, no exit code)
Verdicts = Mapping[str, Optional[Fail]]
Script = Callable[["Tree"], Union[Verdicts, TimedOut]]


@dataclass(frozen=True)
class Tree:
    """The copy under test as a script sees it (``root``: the workspace, a proof's fresh copy,
    ...)."""

    root: Path

    def read(self, rel: str) -> str:
        """The text of ``rel`` (project-relative), "" when it does not exist."""
        path = self.root / rel
        return path.read_text(encoding="utf-8") if path.is_file() else ""


@dataclass(frozen=True)
class CannedInterpreter:
    """The project's interpreter as classification asks it: a module is installed when in
    ``installed``."""

    installed: FrozenSet[str] = frozenset()

    def __call__(self, args: Sequence[str], timeout: float) -> Optional[str]:
        module = args[2] if len(args) > 2 else ""
        dist = args[3] if len(args) > 3 else module
        return json.dumps({"found": module in self.installed, "dist": dist, "version": None})


@dataclass
class NoWarm:
    """The warm process a canned runner makes: refused at its first start, as the real one is for a
    command that is not pytest; every run then goes to a fresh (canned) run."""

    why: str = ""
    refused: str = ""
    running: bool = False
    last_start: Optional[WarmStart] = None

    def ready(self) -> bool:
        self.refused = self.refused or NO_WARM
        self.last_start = WarmStart(False, self.refused)
        return False

    def run(
        self, test_ids: Sequence[str], changed: Sequence[str], timeout: float
    ) -> Optional[TestReport]:
        self.why = self.refused or "the warm server is not running"
        return None

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class Run:
    """One run a canned runner answered: where, which ids (() all), with what limits (seconds)."""

    root: Path
    test_ids: Tuple[str, ...]
    timeout: float
    past_deadline: bool


def selected(verdicts: Verdicts, test_ids: Sequence[str]) -> List[str]:
    """The ids of ``verdicts`` a pytest run of ``test_ids`` reports: all for (), else each id asked
    for and the tests inside a module asked for, in the suite's order."""
    if not test_ids:
        return list(verdicts)
    return [t for t in verdicts if any(t == a or t.startswith(a + "::") for a in test_ids)]


def report_of(
    verdicts: Union[Verdicts, TimedOut], test_ids: Sequence[str], seconds: float
) -> TestReport:
    """The TestReport a pytest run of ``test_ids`` with these verdicts gives (``seconds`` of wall
    time)."""
    argv = COMMAND + tuple(test_ids)
    if isinstance(verdicts, TimedOut):
        return TestReport(
            argv, None, output=f"timed out after {seconds:g} s", seconds=seconds, timed_out=True
        )
    results = []
    for test_id in selected(verdicts, test_ids):
        fail = verdicts[test_id]
        if fail is None:
            results.append(TestResult(test_id, TestOutcome.PASSED, 0.001))
            continue
        outcome = TestOutcome.FAILED if fail.phase == "call" else TestOutcome.ERROR
        results.append(
            TestResult(
                test_id,
                outcome,
                0.001,
                fail.phase,
                fail.exc_type,
                fail.message,
                fail.frames,
                longrepr=f"{fail.exc_type}: {fail.message}",
                exc_module=fail.exc_module,
            )
        )
    failed = [r for r in results if r.failed]
    lines = [
        f"FAILED {r.test_id} - {r.exc_type}: {r.message.splitlines()[0] if r.message else ''}"
        for r in failed
    ]
    lines.append(f"{len(failed)} failed, {len(results) - len(failed)} passed in 0.01s")
    exit_code = 1 if failed else (0 if results else 5)
    return TestReport(
        argv,
        exit_code,
        tuple(results),
        "\n".join(lines),
        0.01,
        source=ResultSource.PLUGIN,
        collected=sum(1 for r in results if r.phase != "collect"),
    )


@dataclass
class CannedRunner:
    """A ``types.TestRunner`` answering every run from ``script`` (see the module docstring).

    ``deadline`` gives the seconds left in the run (the session's clock); ``timeout`` is one run's
    limit in seconds; ``log`` collects every ``Run`` (shared with the factory).
    """

    script: Script
    deadline: Callable[[], float] = lambda: 3600.0
    timeout: float = 300.0
    scratch_dir: Optional[Path] = None
    installed: FrozenSet[str] = frozenset()
    log: List[Run] = field(default_factory=list)

    command: Tuple[str, ...] = COMMAND
    sandbox_status: SandboxStatus = SANDBOX
    redirected: Tuple[str, ...] = ()

    @property
    def interpreter(self) -> Optional[InterpreterQuery]:
        return CannedInterpreter(self.installed)

    def run(
        self,
        root: Path,
        test_ids: Sequence[str] = (),
        *,
        coverage: bool = False,
        timeout: Optional[float] = None,
        past_deadline: bool = False,
        protect: Sequence[str] = (),
    ) -> TestReport:
        limit = self.time_limit(timeout, past_deadline)
        self.log.append(Run(Path(root), tuple(test_ids), limit, past_deadline))
        verdicts = self.script(Tree(Path(root)))
        return report_of(verdicts, test_ids, limit if isinstance(verdicts, TimedOut) else 0.01)

    def time_limit(self, timeout: Optional[float] = None, past_deadline: bool = False) -> float:
        limit = timeout or self.timeout
        return limit if past_deadline else min(limit, max(self.deadline(), 1.0))

    def for_candidates(self, baseline: TestReport) -> Tuple["CannedRunner", str]:
        return self, ""

    def plain(self) -> "CannedRunner":
        return self

    def warm(self, root: Path, protect: Sequence[str] = ()) -> NoWarm:
        return NoWarm()


@dataclass
class Canned:
    """A ``loop.suite.RunnerFactory`` whose runners replay ``script``; ``runs`` holds every run they
    made."""

    script: Script
    installed: FrozenSet[str] = frozenset()
    runs: List[Run] = field(default_factory=list)

    def __call__(
        self,
        settings: Settings,
        project: Path,
        environ: Mapping[str, str],
        deadline: Callable[[], float],
        scratch_dir: Optional[Path] = None,
    ) -> CannedRunner:
        return CannedRunner(
            self.script, deadline, settings.test_timeout, scratch_dir, self.installed, self.runs
        )
