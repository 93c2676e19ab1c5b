"""The report model: one run, the ``RunResult`` the loop made plus what only its journal knows.

A ``RunReport`` read from a journal (``read.load_run``) holds the RunResult
the run ended with, rebuilt from the records the loop journalled, and beside
it the start and end times, the project, the model chain, the baseline, per
iteration what the model was shown, its answer, what the tests said and the
notes, the warnings, and a status for a run that never stopped.
``RunReport.of(result)`` is the same view of a live result, so every output
format (``formats.py``) renders one type, whichever way the run arrived.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, Optional, Tuple

from repairloop.journal import Shown, TestsSummary
from repairloop.types import Iteration, RunResult, TestFiles


class RunStatus(str, enum.Enum):
    """How a run's journal ends."""

    STOPPED = "stopped"  # a ``stopped`` event: the result's outcome and stop reason stand
    INCOMPLETE = "incomplete"  # no ``stopped`` event: the run is going on, or was killed
    # Ctrl-C before the run could stop (journals of older versions; set-up, clean-up)
    INTERRUPTED = "interrupted"
    ERROR = "error"  # a usage or project error, or a crash, ended it


@dataclass(frozen=True)
class IterationDetail:
    """What only the journal knows about one iteration: what the model was shown, its answer,
    what the tests said (None: the candidate was never tested) and the notes of the events
    during it (retries, rejected answers, escalations)."""

    shown: Optional[Shown] = None
    tests: Optional[TestsSummary] = None
    answer: Optional[str] = None
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class IterationReport:
    """One iteration: the loop's ``Iteration`` record and the journal's detail about it."""

    record: Iteration
    detail: IterationDetail = field(default_factory=IterationDetail)


@dataclass(frozen=True)
class RunReport:
    """A whole run: its ``RunResult`` and what only the journal knows.

    For a run that never stopped (``status`` is not STOPPED) the result holds
    what the journal has so far, with outcome NOT_FIXED and stop reason
    INTERRUPTED (the run can be resumed, as after Ctrl-C); ``outcome`` and
    ``stop_reason`` then say the status instead. ``started``/``ended`` are
    ISO 8601 text (UTC) of the first and last journal line; ``details`` go
    with ``result.iterations``, one each. ``test_files`` is the run's own rule
    for which files are tests (its ``test_globs`` and the files its baseline
    collected tests from beyond them); None for a live result or a journal
    whose start does not say.
    """

    result: RunResult
    status: RunStatus = RunStatus.STOPPED
    project: str = ""
    started: str = ""
    ended: str = ""
    chain: Tuple[str, ...] = ()
    baseline: Optional[TestsSummary] = None
    details: Tuple[IterationDetail, ...] = ()
    notes: Tuple[
        str, ...
    ] = ()  # the journal's events that are not an iteration's (interruptions, intents)
    warnings: Tuple[
        str, ...
    ] = ()  # about the journal itself (a torn last line, an unreadable event)
    test_files: Optional[TestFiles] = None

    @classmethod
    def of(cls, result: RunResult) -> "RunReport":
        """The view of a live result: nothing the journal alone knows."""
        return cls(result=result)

    @property
    def run_id(self) -> str:
        return self.result.run_id

    @property
    def outcome(self) -> str:
        """The result's outcome value, or the status of a run that never stopped."""
        return self.result.outcome.value if self.status is RunStatus.STOPPED else self.status.value

    @property
    def stop_reason(self) -> str:
        """The result's stop reason value; ``interrupted``, ``error`` or nothing for a run that
        never stopped."""
        if self.status is RunStatus.STOPPED:
            return self.result.stop_reason.value
        return "" if self.status is RunStatus.INCOMPLETE else self.status.value

    @property
    def stop_detail(self) -> str:
        """The stop's detail; for a run that never stopped, the error or interruption that ended
        it."""
        return self.result.stop_detail

    @property
    def iterations(self) -> Tuple[IterationReport, ...]:
        details = self.details + (IterationDetail(),) * (
            len(self.result.iterations) - len(self.details)
        )
        return tuple(IterationReport(it, d) for it, d in zip(self.result.iterations, details))

    @property
    def seconds(self) -> Optional[float]:
        """Wall clock from the first to the last journal line; a live result's own seconds; None
        when unknown."""
        if not (self.started or self.ended):
            return self.result.seconds
        return seconds_between(self.started, self.ended)

    @property
    def totals(self) -> Dict[str, Any]:
        """The result's totals, with ``seconds.total`` the report's ``seconds`` (None when
        unknown)."""
        totals = self.result.totals
        total = self.seconds
        totals["seconds"] = dict(
            totals["seconds"], total=None if total is None else round(total, 3)
        )
        return totals


def seconds_between(first: str, last: str) -> Optional[float]:
    """Seconds from one ISO 8601 time to another; None when either is not one."""
    try:
        return (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
    except ValueError:
        return None
