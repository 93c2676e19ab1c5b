"""Frozen records and enums shared by every module, and the Proposer protocol.

Nothing here imports from the rest of the package: this package is the bottom
of the import graph (see STYLE.md, "Who may import whom"). Every record is a
frozen dataclass so that loop state is a growing tuple of values, never
mutated. The records live in topic modules (``kinds``, ``results``,
``paths``, ``proposals``, ``run``, ``model_events``); import them from here.
"""

from repairloop.types.kinds import (
    Budget,
    ChainMove,
    Decision,
    EventKind,
    ExitCode,
    FailureKind,
    FlagKind,
    JournalKind,
    Outcome,
    ResultSource,
    StopReason,
    TestOutcome,
)
from repairloop.types.model_events import (
    AnswerTruncatedEvent,
    EditFormatSwitchedEvent,
    ModelErrorEvent,
    ModelEvent,
    ModelRetryEvent,
    OnModelEvent,
    ParamDroppedEvent,
)
from repairloop.types.paths import (
    DEFAULT_PROTECTED_GLOBS,
    DEFAULT_TEST_GLOBS,
    NOT_PROJECT_DIRS,
    TestFiles,
    is_project_path,
    matches_globs,
    project_relative,
)
from repairloop.types.proposals import (
    BudgetLeft,
    CodeSlice,
    Feedback,
    LastAttempt,
    Proposal,
    ProposalRequest,
    Proposer,
    RepairContext,
    Usage,
)
from repairloop.types.results import Failure, Frame, TestReport, TestResult, failure_kinds
from repairloop.types.run import Evidence, Flag, Iteration, LoopEvent, Proof, RunResult, SandboxStatus

__all__ = [
    "DEFAULT_PROTECTED_GLOBS",
    "DEFAULT_TEST_GLOBS",
    "NOT_PROJECT_DIRS",
    "AnswerTruncatedEvent",
    "Budget",
    "BudgetLeft",
    "ChainMove",
    "CodeSlice",
    "Decision",
    "EditFormatSwitchedEvent",
    "EventKind",
    "Evidence",
    "ExitCode",
    "Failure",
    "FailureKind",
    "Feedback",
    "Flag",
    "FlagKind",
    "Frame",
    "Iteration",
    "JournalKind",
    "LastAttempt",
    "LoopEvent",
    "ModelErrorEvent",
    "ModelEvent",
    "ModelRetryEvent",
    "OnModelEvent",
    "Outcome",
    "ParamDroppedEvent",
    "Proof",
    "Proposal",
    "ProposalRequest",
    "Proposer",
    "RepairContext",
    "ResultSource",
    "RunResult",
    "SandboxStatus",
    "StopReason",
    "TestFiles",
    "TestOutcome",
    "TestReport",
    "TestResult",
    "Usage",
    "failure_kinds",
    "is_project_path",
    "matches_globs",
    "project_relative",
]
