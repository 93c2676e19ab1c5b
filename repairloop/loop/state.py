"""The data of one run and its updates (part of the loop layer): only ``session.Session`` changes
it, and only through the methods here; the run's result is built from it
(``result.build_result``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional, Tuple

from repairloop.classify import SESSION_ID
from repairloop.loop import stop
from repairloop.loop.chain import ChainState
from repairloop.loop.stop import Refusal
from repairloop.patch import FileChange
from repairloop.types import (
    Decision,
    Evidence,
    Failure,
    Iteration,
    LastAttempt,
    Localisation,
    ResultSource,
    TestReport,
    TestResult,
)

if TYPE_CHECKING:
    from repairloop.loop.attempt import AttemptOutcome


@dataclass
class RunState:
    """The growing data of one run (iterations are frozen records); ``chain`` is where it is in the
    model chain; ``evidence`` and ``raw_patch`` are set by the proof step (the final patch as the
    workspace made it, unredacted, for ``--apply``)."""

    chain: ChainState
    baseline_failing: Tuple[str, ...] = ()
    baseline_ids: FrozenSet[str] = frozenset()  # every test the baseline's run collected
    run_order: Tuple[str, ...] = ()  # the tests the baseline ran, in the order it ran them
    needs_earlier: FrozenSet[str] = frozenset()  # failing tests that depend on earlier tests
    runs_alone: FrozenSet[str] = frozenset()  # failing tests seen failing alone as in order
    failing: Tuple[str, ...] = ()
    results: Dict[str, TestResult] = field(default_factory=dict)
    failures: Tuple[Failure, ...] = ()  # at the baseline
    current_failures: Tuple[Failure, ...] = ()  # of the tests failing now
    flaky: Tuple[str, ...] = ()
    history: Tuple[Iteration, ...] = ()
    signatures: Tuple[str, ...] = ()  # change signatures of every candidate so far
    last_attempt: Optional[LastAttempt] = None
    kept_changes: Tuple[
        FileChange, ...
    ] = ()  # every kept candidate's edits, as the guards approved them
    refused: Optional[Refusal] = None
    interrupted: bool = False
    notes: Tuple[
        str, ...
    ] = ()  # how the run went that the result must say (per-test timeout, weak localisation)
    evidence: Evidence = field(default_factory=Evidence)
    raw_patch: Optional[str] = None
    localisation: Optional[Localisation] = None  # for the code after ``localised_at`` kept changes
    localised_at: int = -1
    start_localisation: Optional[Localisation] = None  # for the start state (the behaviour check)

    @property
    def fixed_tests(self) -> Tuple[str, ...]:
        """The baseline's failing tests that pass now (flaky ones are never counted fixed)."""
        return tuple(
            t for t in self.baseline_failing if t not in self.failing and t not in self.flaky
        )

    def facts(self, *, elapsed: float) -> stop.Facts:
        """What the stop policy decides on now; ``elapsed`` is wall-clock seconds since the run
        started."""
        chain = self.chain
        return stop.Facts(
            history=self.history,
            baseline_failing=len(self.baseline_failing),
            remaining_failing=len(self.failing),
            flaky=len(self.flaky),
            elapsed=elapsed,
            chain=chain.links,
            link=chain.index,
            link_since=chain.since,
            dropped=tuple(chain.dropped),
            refused=self.refused,
            interrupted=self.interrupted,
        )

    def set_localisation(self, found: Localisation) -> None:
        """The fault localisation for the code as it is now (after every kept change so far)."""
        self.localisation, self.localised_at = found, len(self.kept_changes)
        if not self.kept_changes:
            self.start_localisation = found

    def set_failures(self, failures: Tuple[Failure, ...]) -> None:
        """The baseline's failures as classified (what a blocking ending reports, too)."""
        self.failures = self.current_failures = failures

    def set_baseline(self, baseline: TestReport) -> None:
        """The baseline's failing tests (the whole suite as one unit when only an exit code is
        known)."""
        failing = baseline.failing_ids or tuple(f.test_id for f in self.failures) or (SESSION_ID,)
        self.baseline_failing = self.failing = failing
        if baseline.source is not ResultSource.EXIT_CODE:
            self.baseline_ids = frozenset(r.test_id for r in baseline.results)
            self.run_order = tuple(dict.fromkeys(r.test_id for r in baseline.results))
        self.results = {r.test_id: r for r in baseline.failing}

    def order_facts(self) -> Dict[str, Any]:
        """What validation needs to know of the baseline's tests (``ValidationSetup``'s
        ``baseline_ids``, ``run_order``, ``needs_earlier``, ``runs_alone`` and
        ``known_failures``, the last updated in place as candidates are kept)."""
        return {
            "baseline_ids": self.baseline_ids,
            "run_order": self.run_order,
            "needs_earlier": self.needs_earlier,
            "runs_alone": self.runs_alone,
            "known_failures": self.results,
        }

    def set_flaky(self, flaky: FrozenSet[str]) -> None:
        """Tests found flaky before the loop: reported and left alone."""
        self.flaky = tuple(sorted(flaky))
        self.failing = tuple(t for t in self.failing if t not in flaky)

    def add_note(self, note: str) -> bool:
        """Keep ``note`` for the result, once; whether it was new."""
        if not note or note in self.notes:
            return False
        self.notes += (note,)
        return True

    def apply(self, outcome: AttemptOutcome) -> None:
        """The only place an attempt's outcome changes the run's data (the chain moves in the
        session, which journals each move)."""
        self.history += (outcome.iteration,)
        if outcome.signature is not None:
            self.signatures += (outcome.signature,)
        if outcome.last_attempt is not None:
            self.last_attempt = outcome.last_attempt
        checked = outcome.checked
        if checked is not None and checked.decision is Decision.KEPT:
            self.failing = checked.failing
            if outcome.applied is not None:
                self.kept_changes += outcome.applied.changes
            if checked.report is not None:
                self.results.update({r.test_id: r for r in checked.report.failing})
                self.current_failures = checked.failures
        if outcome.refused is not None:
            self.refused = outcome.refused
