"""The growing state of one run (part of the loop layer); only ``session.Session`` writes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional, Tuple

from repairloop.loop import stop
from repairloop.loop.chain import ChainState
from repairloop.loop.stop import Refusal
from repairloop.patch import FileChange
from repairloop.types import Failure, Iteration, LastAttempt, TestResult


@dataclass
class RunState:
    """The growing state of one run (iterations are frozen records). Only ``Session`` writes it."""

    baseline_failing: Tuple[str, ...] = ()
    baseline_ids: FrozenSet[str] = frozenset()  # every test the baseline's run collected
    failing: Tuple[str, ...] = ()
    results: Dict[str, TestResult] = field(default_factory=dict)
    failures: Tuple[Failure, ...] = ()  # at the baseline
    current_failures: Tuple[Failure, ...] = ()  # of the tests failing now
    flaky: Tuple[str, ...] = ()
    history: Tuple[Iteration, ...] = ()
    signatures: Tuple[str, ...] = ()  # change signatures of every candidate so far
    last_attempt: Optional[LastAttempt] = None
    kept_changes: Tuple[FileChange, ...] = ()  # every kept candidate's edits, as the guards approved them
    refused: Optional[Refusal] = None
    interrupted: bool = False
    notes: Tuple[str, ...] = ()  # how the run went that the result must say (per-test timeout, weak localisation)

    def facts(self, chain: ChainState, *, elapsed: float) -> stop.Facts:
        """What the stop policy decides on now; ``elapsed`` is wall-clock seconds since the run started."""
        return stop.Facts(
            history=self.history, baseline_failing=len(self.baseline_failing), remaining_failing=len(self.failing),
            flaky=len(self.flaky), elapsed=elapsed, chain=chain.links, link=chain.index, link_since=chain.since,
            dropped=tuple(chain.dropped), refused=self.refused, interrupted=self.interrupted,
        )
