"""What a proposer is shown and what it answers: the context, its budget, the proposal, the Proposer
protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, Mapping, Optional, Protocol, Sequence, Tuple

from repairloop.types.kinds import Decision

if TYPE_CHECKING:
    from repairloop.types.localisation import Localisation


@dataclass(frozen=True)
class CodeSlice:
    """A piece of source shown to the model: a function or class, 1-based inclusive lines."""

    path: str
    start_line: int
    end_line: int
    name: str
    text: str
    read_only: bool = False  # the failing test itself: shown, never to be edited


@dataclass(frozen=True)
class FailureSnapshot:
    """One failing test's failure in brief: its exception type, the first line of its message, and
    its project frames (``path:line in function``), to tell whether a candidate changed the
    failure."""

    test_id: str
    exc_type: str = ""
    message: str = ""
    frames: Tuple[str, ...] = ()

    def same_as(self, other: "FailureSnapshot") -> bool:
        return (self.exc_type, self.message) == (other.exc_type, other.message)


@dataclass(frozen=True)
class LastAttempt:
    """The previous candidate and what it did, shown in the next prompt: ``before`` are the failures
    of the tests it was to fix as they were, ``after`` as its test run left them (the ones still
    failing)."""

    diff: str
    decision: Decision
    reason: str
    fixed: Tuple[str, ...] = ()
    broke: Tuple[str, ...] = ()
    before: Tuple[FailureSnapshot, ...] = ()
    after: Tuple[FailureSnapshot, ...] = ()


@dataclass(frozen=True)
class RepairContext:
    """Everything a proposer is shown for one iteration (built by ``context.py``).

    ``failing_tests`` is the group being repaired (same root cause), largest
    group first; ``other_failing`` are the rest. ``tokens`` is the size of the
    rendered material counted with litellm's offline counter; ``trimmed`` names
    what the token budget removed, in order.
    """

    failing_tests: Tuple[str, ...]
    message: str
    traceback: str
    slices: Tuple[CodeSlice, ...]
    last_attempt: Optional[LastAttempt] = None
    other_failing: Tuple[str, ...] = ()
    tokens: int = 0
    trimmed: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    ranking: str = (
        ""  # how the code shown was chosen and ordered ("per-test coverage"; "": the traceback)
    )


@dataclass(frozen=True)
class Usage:
    """What proposing cost: tokens, USD (None when the model is not priced), seconds, calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Optional[float] = 0.0
    seconds: float = 0.0
    calls: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        # An unpriced call makes the sum unknown: never report a partial cost as the total.
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            cost,
            self.seconds + other.seconds,
            self.calls + other.calls,
        )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Usage":
        """The Usage a journal holds (its fields by name; missing ones read as zero, cost as
        unknown)."""
        cost = data.get("cost_usd")
        return cls(
            int(data.get("prompt_tokens") or 0),
            int(data.get("completion_tokens") or 0),
            None if cost is None else float(cost),
            float(data.get("seconds") or 0.0),
            int(data.get("calls") or 0),
        )

    @classmethod
    def total(cls, usages: Iterable["Usage"]) -> "Usage":
        """The sum of ``usages`` (cost None when any of them is unpriced)."""
        return sum(usages, cls())


@dataclass(frozen=True)
class Feedback:
    """A structural error about the previous answer, sent back once in the same thread."""

    answer: str
    error: str


@dataclass(frozen=True)
class BudgetLeft:
    """What the run may still spend; None means unlimited. Units: tokens, USD, seconds."""

    tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    seconds: Optional[float] = None


@dataclass(frozen=True)
class ProposalRequest:
    """What the loop hands a proposer for one attempt."""

    context: RepairContext
    budget: BudgetLeft = field(default_factory=BudgetLeft)
    feedback: Optional[Feedback] = None
    iteration: int = 1
    # The run's fault localisation for the code as it is now (the loop's; None: the proposer does
    # its own).
    localisation: Optional["Localisation"] = None
    # The tests a run of the failing tests must include, in the suite's order, failing tests
    # among them: the earlier tests of their module, for failing tests that fail otherwise alone
    # (the loop's ``ValidationSetup.targeted_ids``); () when the failing tests can run alone.
    targeted_run: Tuple[str, ...] = ()


# finish_reason values saying the answer was cut at the output-token limit: OpenAI's (which
# litellm maps the others to), Anthropic's and Gemini's own, should one come through unmapped.
CUT_OFF_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})


@dataclass(frozen=True)
class Proposal:
    """A proposer's answer: raw text (a diff or SEARCH/REPLACE blocks) and its cost.

    ``answer`` is what the model said, verbatim; for the offline engine it is a
    unified diff. ``notes`` carries engine details for the journal (the offline
    engine's localisation and the candidates it tried); what the loop decides on
    is typed: ``validated``, ``candidates``, ``degraded``.
    """

    answer: str
    engine: str  # "llm" or "builtin"
    model: str
    usage: Usage = field(default_factory=Usage)
    prompt: Tuple[Dict[str, str], ...] = ()
    # for the journal only; the loop reads the fields below
    notes: Dict[str, Any] = field(default_factory=dict)
    # The proposer ran the whole suite with this candidate in its own sandboxed copy and it passed
    # there (the offline engine's answers): the loop skips its quick run of the failing tests alone,
    # which could only repeat that, and judges the candidate by its own fresh full run as always.
    validated: bool = False
    candidates: int = 1  # candidate edits behind this answer (the offline engine tries many)
    degraded: str = ""  # why the proposer's fault localisation was weak ("" when it was not)
    # The model stopped at its output-token limit (finish_reason "length"): the answer is
    # unfinished, so nothing of it is applied; the loop asks once more for a shorter edit.
    cut_off: bool = False


class Proposer(Protocol):
    """Context in, candidate out. Implemented by ``propose.llm`` and ``propose.builtin``.

    ``propose`` raises ``repairloop.errors.ProposerError`` subclasses for the
    model-side error classes of DESIGN.md (transient after retries, model
    error, unrecoverable); every attempt's usage rides on the exception.
    """

    name: str
    engine: str

    def propose(self, request: ProposalRequest) -> Proposal: ...


class InterpreterQuery(Protocol):
    """Asks the project's own interpreter a question about its environment, confined like a test
    run.

    ``args`` follow the interpreter (``["-c", code, arg]``); ``timeout`` is in seconds. Returns what
    it printed on stdout, or None when it could not run, failed or timed out. Implemented by
    ``runner.ProjectInterpreter`` (in the sandbox, with the test runs' filtered environment): the
    host process never executes a program the project supplies (DESIGN.md, "Workspace, sandbox and
    side effects").
    """

    def __call__(self, args: Sequence[str], timeout: float) -> Optional[str]: ...

    def __hash__(self) -> int: ...  # answers are cached per interpreter
