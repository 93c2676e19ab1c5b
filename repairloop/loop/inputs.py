"""What every attempt of a run uses, and where one attempt starts (part of the loop layer): the
values ``attempt.run_attempt`` and ``candidate.propose_and_apply`` are functions of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Tuple

from repairloop.journal import Journal
from repairloop.loop.validation import ValidationSetup
from repairloop.types import BudgetLeft, Failure, LastAttempt, Localisation, Proposer, TestResult


@dataclass(frozen=True)
class AttemptSetup:
    """What every attempt of a run uses, built once by the session.

    ``redact`` masks secrets in what a model is shown; ``count_tokens`` counts
    prompt tokens.
    """

    validation: ValidationSetup
    fuzzy_threshold: float  # 0..1
    similarity_threshold: float  # 0..1
    context_tokens: int
    count_tokens: Callable[[str], int]
    redact: Callable[[str], str]

    @property
    def journal(self) -> Journal:
        return self.validation.journal


@dataclass(frozen=True)
class AttemptInput:
    """Where this attempt starts: the session's state, as values.

    ``failures`` are the classified failures of the tests failing now;
    ``earlier`` the change signatures of every earlier candidate; ``budget``
    what the run may still spend.
    """

    number: int
    model: str
    proposer: Proposer
    failing: Tuple[str, ...]
    failures: Tuple[Failure, ...]
    results: Mapping[str, TestResult]
    flaky: Tuple[str, ...]
    last_attempt: Optional[LastAttempt]
    earlier: Tuple[str, ...]
    budget: BudgetLeft
    localisation: Optional[Localisation] = (
        None  # the run's, for the code as it is now (None: not localised)
    )
