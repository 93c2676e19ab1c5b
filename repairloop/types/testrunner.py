"""What runs a project's tests for the loop: the TestRunner protocol and the warm process it makes.

The loop (``loop.session``, ``loop.validation``, ``loop.proof``, ``loop.flaky``) and
the offline engine (through ``loop.chain.build_proposer``) know a ``TestRunner``,
not how a run is confined or which plugin reports it. ``loop.suite.TestSuite``
is the real one: pytest (or the user's command) in a subprocess, in the
sandbox, reported by the bundled plugin with JUnit XML as a second witness.
A test may bring another (``tests/canned_runner.py`` replays canned reports);
the loop's decisions are the same whoever answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol, Sequence, Tuple, Union

from repairloop.types.confinement_status import SandboxStatus
from repairloop.types.proposals import InterpreterQuery
from repairloop.types.reports import TestReport

TestCommand = Union[
    Tuple[str, ...], str
]  # an argv, or a shell command line (``--test-cmd "make check"``)


@dataclass(frozen=True)
class WarmStart:
    """How a warm process's start went: ``ready``, or ``why`` not; ``seconds`` it took;
    ``collected`` tests."""

    ready: bool
    why: str = ""
    seconds: float = 0.0
    collected: int = 0


class WarmTestProcess(Protocol):
    """A warm test process serving one copy of the project (``runner.warm.WarmProcess``).

    ``ready`` starts it unless it runs or was ``refused`` (a reason, set for good; "" while it may
    start) and says whether it runs now: call it before a candidate is written. ``run`` answers
    the report of ``test_ids`` with the copy as it is now, ``changed`` (project-relative paths)
    being the candidate's files, within ``timeout`` seconds; or None when the tests must run
    fresh, with the reason in ``why``. ``last_start`` is how the latest start went (None: never
    started); ``running`` whether a process is up. A warm answer only filters candidates: every
    keep decision comes from a fresh ``TestRunner.run``.
    """

    @property
    def why(self) -> str: ...

    @property
    def refused(self) -> str: ...

    @property
    def running(self) -> bool: ...

    @property
    def last_start(self) -> Optional[WarmStart]: ...

    def ready(self) -> bool: ...

    def run(
        self, test_ids: Sequence[str], changed: Sequence[str], timeout: float
    ) -> Optional[TestReport]: ...

    def close(self) -> None: ...


class TestRunner(Protocol):
    """Runs the project's tests in any copy of it (the workspace, an engine's scratch copy, the
    proof's).

    Read-only facts:

    * ``command``: the test command (``is_pytest_command`` tells pytest apart: only pytest
      takes test ids, so only then are the failing tests run alone first);
    * ``sandbox_status``: where candidate code runs (journalled, and in every report);
    * ``interpreter``: asks the project's interpreter about its environment, confined like a
      run (classification's "is this module installed"); None: this process answers;
    * ``redirected``: the top-level modules the user's environment imports from the user's tree
      that every run imports from the copy under test instead; () when none (then ``plain``
      runs the same world and the fidelity check is skipped);
    * ``scratch_dir``: where runs (and the offline engine's copies) put temporary directories;
      None: the system's temporary directory.

    Runs: ``run`` runs ``test_ids`` (() for the whole suite) in ``root`` and returns the
    TestReport; a run killed at its limit has ``timed_out``. ``deadline()`` is the seconds left in
    the whole run; ``time_limit`` the seconds one run may take. Raises nothing for the project's
    faults (a crash, a hang, a missing interpreter are in the report).

    Copies: ``for_candidates`` is this runner with a short per-test timeout for candidate runs
    when a test hung at the baseline, and a sentence saying so ("" when unchanged); ``plain`` is
    this runner in the user's own world (no redirection: imports from the user's tree), for the
    fidelity check before any candidate exists. ``warm`` makes (does not start) a warm process
    for ``root``.
    """

    @property
    def command(self) -> TestCommand: ...

    @property
    def sandbox_status(self) -> SandboxStatus: ...

    @property
    def interpreter(self) -> Optional[InterpreterQuery]: ...

    @property
    def redirected(self) -> Tuple[str, ...]: ...

    @property
    def scratch_dir(self) -> Optional[Path]: ...

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
        """One run in ``root``: ``test_ids`` (() for all), within ``timeout`` seconds (None: the
        runner's own) and the seconds left in the run unless ``past_deadline`` (the proof run is
        never cut short). ``coverage`` records per-test coverage (``TestReport.coverage_file``);
        ``protect`` are project-relative files the run may not change."""
        ...

    def deadline(self) -> float:
        """Seconds left in the whole run (may be negative once it ran out)."""
        ...

    def time_limit(self, timeout: Optional[float] = None, past_deadline: bool = False) -> float:
        """Seconds one run may take: ``timeout`` (None: the runner's own), within ``deadline()`` (at
        least 1 s) unless ``past_deadline``."""
        ...

    def for_candidates(self, baseline: TestReport) -> Tuple["TestRunner", str]:
        """(this runner with a short per-test timeout for candidate runs, chosen from ``baseline``,
        when a test hung there, else this runner unchanged; a sentence saying so, "" when
        unchanged)."""
        ...

    def plain(self) -> "TestRunner":
        """This runner without the import redirection: the user's own world."""
        ...

    def warm(self, root: Path, protect: Sequence[str] = ()) -> WarmTestProcess:
        """A warm test process for ``root``, not started, run like ``run`` with ``protect``
        read-only."""
        ...
