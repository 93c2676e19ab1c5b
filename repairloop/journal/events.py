"""The journal's events: one frozen record per ``JournalKind``, shared by the code that writes and
the code that reads.

Writers build a record and call ``Journal.record(event)``; readers get the same
records back from ``read_events`` (``codec.py`` turns them into JSON lines and
back). A renamed field therefore fails type checking in the writer and the
reader, not in a user's ``repairloop report``. The model proposer's records
live in ``types.model_events`` (a worker cannot import the journal).

Every field is a journal key of the same name unless its ``metadata["json"]``
names another: renaming a field renames its key, so a rename keeps the old key
there (``tests/test_journal_events.py`` reads a journal of an earlier version
and fails otherwise). Writers pass fields by keyword. Reading is tolerant: a field missing from an
older journal gets its type's empty value (``""``, 0, ``()``, None), unknown fields are ignored, and
a kind this version does not know becomes an ``UnknownEvent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Optional, Tuple, Union

from repairloop.journal.iteration_events import (
    CandidateRejectedEvent,
    IterationEvent,
    ProposalErrorEvent,
    ProposalEvent,
    TestsSummary,
    WarmEvent,
)
from repairloop.types import (
    Evidence,
    Failure,
    JournalKind,
    Outcome,
    Proof,
    SandboxStatus,
    StopReason,
)
from repairloop.types.model_events import MODEL_EVENTS, ModelEvent

# -- the run's frame (loop.py) ------------------------------------------------------------


@dataclass(frozen=True)
class StartEvent:
    """A new run: its id, project directory, model chain and every setting (for ``resume``)."""

    kind: ClassVar[JournalKind] = JournalKind.START
    run_id: str
    project: str
    chain: Tuple[str, ...]
    settings: Dict[str, Any]


@dataclass(frozen=True)
class ResumedEvent:
    """``repairloop resume`` took the run up again, replaying ``answers`` recorded answers."""

    kind: ClassVar[JournalKind] = JournalKind.RESUMED
    answers: int
    chain: Tuple[str, ...]


@dataclass(frozen=True)
class WorkspaceEvent:
    """The workspace's base commit and the user's HEAD (both None outside git); the git-ignored
    files brought into it (``workspace.ignored``) and those chosen but over its size limits (paths
    relative to the repository's top level)."""

    kind: ClassVar[JournalKind] = JournalKind.WORKSPACE
    base: Optional[str]
    head: Optional[str]
    brought_ignored: Tuple[str, ...] = ()
    ignored_too_large: Tuple[str, ...] = ()


@dataclass(frozen=True)
class InterruptedEvent:
    """Ctrl-C (or SIGTERM) after ``seconds`` of the run."""

    kind: ClassVar[JournalKind] = JournalKind.INTERRUPTED
    seconds: float


@dataclass(frozen=True)
class ErrorEvent:
    """A RepairloopError ended the run (a usage or project error): its message and hint."""

    kind: ClassVar[JournalKind] = JournalKind.ERROR
    message: str
    hint: str = ""


@dataclass(frozen=True)
class CrashedEvent:
    """Any other exception ended the run: ``Type: message``."""

    kind: ClassVar[JournalKind] = JournalKind.CRASHED
    error: str


# -- the session (session.py) ----------------------------------------------------------


@dataclass(frozen=True)
class SandboxEvent:
    """Where candidate code runs in this run (``workspace.sandbox``); the fields of a
    ``SandboxStatus``."""

    kind: ClassVar[JournalKind] = JournalKind.SANDBOX
    confined: bool
    backend: str  # "bwrap", or "none" when unconfined
    detail: str  # the bwrap used, or why the run is unconfined
    network: bool = False
    program: str = ""
    origin: str = ""
    withheld: Tuple[str, ...] = ()
    passed: Tuple[str, ...] = ()

    @classmethod
    def of(cls, status: SandboxStatus) -> "SandboxEvent":
        return cls(
            confined=status.confined,
            backend=status.backend,
            detail=status.detail,
            network=status.network,
            program=status.program,
            origin=status.origin,
            withheld=status.withheld,
            passed=status.passed,
        )

    @property
    def status(self) -> SandboxStatus:
        return SandboxStatus(
            self.confined,
            self.backend,
            self.detail,
            self.network,
            self.program,
            self.origin,
            tuple(self.withheld),
            tuple(self.passed),
        )


@dataclass(frozen=True)
class BaselineEvent:
    """The baseline run of the test suite."""

    kind: ClassVar[JournalKind] = JournalKind.BASELINE
    report: TestsSummary


@dataclass(frozen=True)
class ClassifiedEvent:
    """The baseline's failures, classified (exception type and frames included)."""

    kind: ClassVar[JournalKind] = JournalKind.CLASSIFIED
    failures: Tuple[Failure, ...]

    def to_json(self) -> Dict[str, Any]:
        return {"failures": [f.to_json(full=True) for f in self.failures]}


@dataclass(frozen=True)
class TestFilesEvent:
    """Files the runner collected tests from that the test globs do not match (tests all the same),
    and modules collected only for their doctests (source code whose doctest examples are test
    content)."""

    __test__ = False

    kind: ClassVar[JournalKind] = JournalKind.TEST_FILES
    added: Tuple[str, ...]
    doctests: Tuple[str, ...] = ()


@dataclass(frozen=True)
class FlakyEvent:
    """Tests that passed when re-run (alone, or in the suite's order): left alone.

    ``reasons`` has one ``"<test>: <reason>; see: <command>"`` per flaky test
    (``confirm.FlakyTest``); ``unstable`` are tests that passed at the baseline
    and failed in a re-run of the same suite.
    """

    kind: ClassVar[JournalKind] = JournalKind.FLAKY
    tests: Tuple[str, ...]
    reasons: Tuple[str, ...] = ()
    unstable: Tuple[str, ...] = ()


@dataclass(frozen=True)
class EscalateEvent:
    """The chain left ``model`` for the next link (model error, stagnation, downgrade)."""

    kind: ClassVar[JournalKind] = JournalKind.ESCALATE
    model: str = field(metadata={"json": "frm"})
    why: str


@dataclass(frozen=True)
class ModelDroppedEvent:
    """``model`` is unusable for the rest of the run (authentication, unknown model)."""

    kind: ClassVar[JournalKind] = JournalKind.MODEL_DROPPED
    model: str
    why: str


# -- the end and effects outside the workspace ------------------------------------------


@dataclass(frozen=True)
class StoppedEvent:
    """The run's ending: outcome, stop reason, and what the iterations alone do not tell.

    ``seconds`` (wall clock) and the test lists were added after the first
    journals: an older ``stopped`` line reads them as None and empty.
    """

    kind: ClassVar[JournalKind] = JournalKind.STOPPED
    outcome: Outcome
    stop_reason: StopReason
    detail: str
    seconds: Optional[float] = None
    fixed_tests: Tuple[str, ...] = ()
    still_failing: Tuple[str, ...] = ()
    flaky_tests: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    evidence: Optional[Evidence] = None  # added with the proof run; older journals have none


@dataclass(frozen=True)
class IntentEvent:
    """An effect outside the workspace is about to happen (DESIGN.md, "Workspace, sandbox and side
    effects").

    ``action`` is ``apply`` (files), ``push`` (remote, branch, commit, expect:
    the branch tip it must still have) or ``open_pr`` (head, base); ``key``
    identifies it until its ``DoneEvent``.
    """

    kind: ClassVar[JournalKind] = JournalKind.INTENT
    action: str
    key: str
    files: Tuple[str, ...] = ()
    remote: Optional[str] = None
    branch: Optional[str] = None
    commit: Optional[str] = None
    expect: Optional[str] = None
    head: Optional[str] = None
    base: Optional[str] = None


@dataclass(frozen=True)
class DoneEvent:
    """The intent ``(action, key)`` was carried out (``verified``: how a resume found out)."""

    kind: ClassVar[JournalKind] = JournalKind.DONE
    action: str
    key: str
    files: Tuple[str, ...] = ()
    verified: Optional[str] = None
    commit: Optional[str] = None
    number: Optional[int] = None  # a pull request's
    url: Optional[str] = None


@dataclass(frozen=True)
class NoteEvent:
    """An intent's step whose outcome is unknown (a forge request that timed out), before it is
    checked."""

    kind: ClassVar[JournalKind] = JournalKind.NOTE
    action: str
    key: str
    attempt: int
    unknown: str


@dataclass(frozen=True)
class PushRefusedEvent:
    """The branch moved while pushing (``found`` is its new tip): nothing was pushed over it."""

    kind: ClassVar[JournalKind] = JournalKind.PUSH_REFUSED
    key: str
    found: Optional[str]


@dataclass(frozen=True)
class ProofEvent:
    """The proof run of the reported patch on a fresh copy of the start state (``proof.prove``)."""

    kind: ClassVar[JournalKind] = JournalKind.PROOF
    proof: Proof


@dataclass(frozen=True)
class UnknownEvent:
    """A journal line this version cannot read: a newer kind, or fields of the wrong type. Reports
    say so."""

    name: str  # the line's "event"
    data: Dict[str, Any]
    problem: str = ""


_LoopSide = Union[
    StartEvent,
    ResumedEvent,
    WorkspaceEvent,
    InterruptedEvent,
    ErrorEvent,
    CrashedEvent,
    SandboxEvent,
    BaselineEvent,
    ClassifiedEvent,
    TestFilesEvent,
    FlakyEvent,
    EscalateEvent,
    ModelDroppedEvent,
    ProposalEvent,
    ProposalErrorEvent,
    CandidateRejectedEvent,
    IterationEvent,
    ProofEvent,
    StoppedEvent,
    IntentEvent,
    DoneEvent,
    NoteEvent,
    PushRefusedEvent,
    WarmEvent,
]
JournalEvent = Union[_LoopSide, ModelEvent]  # what ``Journal.record`` takes
ReadEvent = Union[JournalEvent, UnknownEvent]  # what reading gives back

EVENT_CLASSES = (
    StartEvent,
    ResumedEvent,
    WorkspaceEvent,
    InterruptedEvent,
    ErrorEvent,
    CrashedEvent,
    SandboxEvent,
    BaselineEvent,
    ClassifiedEvent,
    TestFilesEvent,
    FlakyEvent,
    EscalateEvent,
    ModelDroppedEvent,
    ProposalEvent,
    ProposalErrorEvent,
    CandidateRejectedEvent,
    IterationEvent,
    ProofEvent,
    StoppedEvent,
    IntentEvent,
    DoneEvent,
    NoteEvent,
    PushRefusedEvent,
    WarmEvent,
    *MODEL_EVENTS,
)
