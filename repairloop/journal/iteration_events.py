"""The journal's events of one iteration (``attempt.py``): answers, model errors, rejections, the
iteration.

Part of ``events.py``'s records (same rules); split out with the two records
they nest, what the tests said and what the model was shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Dict, Optional, Tuple

from repairloop.types import Budget, Iteration, JournalKind, ResultSource, Usage


@dataclass(frozen=True)
class TestsSummary:
    """One run of the test command as journalled: exit code (None: killed), failing ids, passed
    count, seconds.

    The baseline also keeps where the results came from and the output's
    last 2,000 characters; an iteration's summary leaves both None.
    """

    __test__ = False

    exit_code: Optional[int]
    failing: Tuple[str, ...]
    passed: int
    seconds: float
    timed_out: bool = False
    source: Optional[ResultSource] = None
    output_tail: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"exit_code": self.exit_code}
        if self.source is not None:
            data["source"] = self.source.value
        data.update(
            timed_out=self.timed_out,
            seconds=self.seconds,
            failing=list(self.failing),
            passed=self.passed,
        )
        if self.output_tail is not None:
            data["output_tail"] = self.output_tail
        return data


@dataclass(frozen=True)
class Shown:
    """What the model was shown in one iteration (message and traceback cut to 4,000 characters
    each)."""

    failing_tests: Tuple[str, ...] = ()
    message: str = ""
    traceback: str = ""
    slices: Tuple[str, ...] = ()  # "path:start-end name"
    tokens: int = 0  # the context material, counted by the loop's token counter
    trimmed: Tuple[str, ...] = ()  # what the context's token budget removed
    last_attempt: Optional[str] = None  # the reason given for the previous candidate


@dataclass(frozen=True)
class ProposalEvent:
    """An answer, journalled before validation so a resumed run never pays for it again.

    ``round`` is 0 for the answer, 1 for the one structural retry.
    """

    kind: ClassVar[JournalKind] = JournalKind.PROPOSAL
    iteration: int
    round: int
    model: str
    engine: str
    answer: str
    usage: Usage
    notes: Dict[str, Any]
    candidates: int = 1  # Proposal.candidates
    degraded: str = ""  # Proposal.degraded


@dataclass(frozen=True)
class ProposalErrorEvent:
    """A model-side error instead of an answer (``error_class`` names the ProposerError), for
    replay."""

    kind: ClassVar[JournalKind] = JournalKind.PROPOSAL_ERROR
    iteration: int
    round: int
    model: str
    error_class: str
    message: str
    usage: Usage
    attempts: int
    budget: Optional[Budget] = None  # the budget a refused gate counted
    notes: Optional[Dict[str, Any]] = None
    candidates: int = 0  # ProposerError.candidates
    degraded: str = ""  # ProposerError.degraded


@dataclass(frozen=True)
class CandidateRejectedEvent:
    """An answer refused before testing (no patch, does not apply, guard, syntax) and why."""

    kind: ClassVar[JournalKind] = JournalKind.CANDIDATE_REJECTED
    iteration: int
    model: str
    answer: str
    error: str


@dataclass(frozen=True)
class IterationEvent:
    """One iteration's record, what the model was shown, its answer and what the tests said.

    ``located`` names the definitions the candidate changes that the prompt did
    not show, found by name in the project (``path::qualname (not in the prompt)``);
    ``set_aside`` the earlier versions of a place the answer changed again (a
    draft, then its final edit: the last version is the candidate).
    """

    kind: ClassVar[JournalKind] = JournalKind.ITERATION
    iteration: Iteration
    shown: Optional[Shown] = None
    answer: Optional[str] = None
    engine_notes: Optional[Dict[str, Any]] = None
    tests: Optional[TestsSummary] = None
    located: Tuple[str, ...] = ()
    set_aside: Tuple[str, ...] = ()


@dataclass(frozen=True)
class WarmEvent:
    """A warm test process of candidate validation (``warm.py``): ``where`` it serves (``loop``: the
    model loop's re-run of the failing tests; ``builtin``: an offline-engine worker), ``action``
    (``started``, with ``seconds`` and ``collected`` tests; ``refused``: it will not run, ``why``;
    ``fallback``: one run went to a fresh process, ``why``; ``closed``: it ended, having ``served``
    runs warm and sent ``fresh`` ones to a fresh process)."""

    kind: ClassVar[JournalKind] = JournalKind.WARM
    where: str
    action: str
    why: str = ""
    seconds: float = 0.0
    collected: int = 0
    served: int = 0
    fresh: int = 0
