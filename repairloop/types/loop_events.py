"""What the loop yields for the console to show: one record type per kind of event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from repairloop.types.run import Iteration, RunResult


@dataclass(frozen=True)
class PhaseStarted:
    """A step of the run starts (the baseline, the flaky check, an iteration, the proof);
    ``iteration`` is the number of the iteration it starts, if it is one."""

    message: str
    iteration: Optional[int] = None


@dataclass(frozen=True)
class RunNote:
    """Something worth telling the user now: where candidate code runs, how the baseline went, a
    hand-over."""

    message: str


@dataclass(frozen=True)
class IterationEnded:
    """An iteration ended: its record (``message`` is its reason)."""

    iteration: Iteration

    @property
    def message(self) -> str:
        return self.iteration.reason


@dataclass(frozen=True)
class RunStopped:
    """The run ended (always the last event of a run): its RunResult; ``message`` says why or what
    --apply did."""

    result: RunResult
    message: str = ""


# What the loop yields for the console to show, one record type per kind (``loop.driver.iterate``).
LoopEvent = Union[PhaseStarted, RunNote, IterationEnded, RunStopped]
