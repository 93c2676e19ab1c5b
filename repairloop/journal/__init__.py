"""Run directories, the append-only JSONL journal of typed events, side-effect intents and the
project lock.

- ``events.py``, ``iteration_events.py`` (and ``types.model_events``): one
  frozen record per event kind, shared by the writers (the loop layer,
  integrations, the model proposer through the chain's callback) and the
  readers (reports, ``resume``);
- ``codec.py``: records to JSON lines and back, tolerant of older journals;
- ``store.py``: ``Journal`` (``record``, atomic run files, redaction) and reading;
- ``runs.py``: run ids and run directories; ``lock.py``: one run per project.

Effects outside the workspace are journalled as an ``IntentEvent`` before and
a ``DoneEvent`` after (DESIGN.md, "Workspace, sandbox and side effects");
``pending_intents`` finds those a crash interrupted.
"""

from repairloop.journal.codec import event_from_json, event_to_json
from repairloop.journal.events import (
    EVENT_CLASSES,
    BaselineEvent,
    ClassifiedEvent,
    CrashedEvent,
    DoneEvent,
    ErrorEvent,
    EscalateEvent,
    FlakyEvent,
    IntentEvent,
    InterruptedEvent,
    JournalEvent,
    ModelDroppedEvent,
    NoteEvent,
    ProofEvent,
    PushRefusedEvent,
    ReadEvent,
    ResumedEvent,
    SandboxEvent,
    StartEvent,
    StoppedEvent,
    TestFilesEvent,
    UnknownEvent,
    WorkspaceEvent,
)
from repairloop.journal.iteration_events import (
    CandidateRejectedEvent,
    IterationEvent,
    ProposalErrorEvent,
    ProposalEvent,
    Shown,
    TestsSummary,
    WarmEvent,
)
from repairloop.journal.lock import ProjectLock, pid_alive
from repairloop.journal.runs import (
    JOURNAL,
    list_runs,
    new_run_id,
    resolve_run,
    run_dir_for,
    state_dir,
)
from repairloop.journal.store import (
    Entry,
    Journal,
    pending_intents,
    read_events,
    read_journal,
    to_jsonable,
)
from repairloop.types.model_events import (
    AnswerTruncatedEvent,
    EditFormatSwitchedEvent,
    ModelErrorEvent,
    ModelRetryEvent,
    ParamDroppedEvent,
)

__all__ = [
    "EVENT_CLASSES",
    "JOURNAL",
    "AnswerTruncatedEvent",
    "BaselineEvent",
    "CandidateRejectedEvent",
    "ClassifiedEvent",
    "CrashedEvent",
    "DoneEvent",
    "EditFormatSwitchedEvent",
    "Entry",
    "ErrorEvent",
    "EscalateEvent",
    "FlakyEvent",
    "IntentEvent",
    "InterruptedEvent",
    "IterationEvent",
    "Journal",
    "JournalEvent",
    "ModelDroppedEvent",
    "ModelErrorEvent",
    "ModelRetryEvent",
    "NoteEvent",
    "ParamDroppedEvent",
    "ProjectLock",
    "ProofEvent",
    "ProposalErrorEvent",
    "ProposalEvent",
    "PushRefusedEvent",
    "ReadEvent",
    "ResumedEvent",
    "SandboxEvent",
    "Shown",
    "StartEvent",
    "StoppedEvent",
    "TestFilesEvent",
    "TestsSummary",
    "UnknownEvent",
    "WarmEvent",
    "WorkspaceEvent",
    "event_from_json",
    "event_to_json",
    "list_runs",
    "new_run_id",
    "pending_intents",
    "pid_alive",
    "read_events",
    "read_journal",
    "resolve_run",
    "run_dir_for",
    "state_dir",
    "to_jsonable",
]
