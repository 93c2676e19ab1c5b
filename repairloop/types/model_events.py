"""What a model proposer reports as it goes: retries, errors, a cut answer, a changed edit format.

``propose/llm.py`` may not import the journal (a worker), so these records
live here: the proposer hands them to its ``on_event`` callback
(``OnModelEvent``), the loop's chain journals them (``chain.py``), and reports
read them back. Each is one journal line of its ``kind``; a field whose journal
key is not its name says so in ``metadata["json"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Union

from repairloop.types.kinds import JournalKind


@dataclass(frozen=True)
class ModelRetryEvent:
    """A transient failure, retried after ``wait`` seconds (``attempt`` is the failed attempt's
    number)."""

    kind: ClassVar[JournalKind] = JournalKind.MODEL_RETRY
    model: str
    cause: str  # errors_table's cause, e.g. "rate_limit"
    attempt: int
    wait: float  # seconds
    error: str = ""


@dataclass(frozen=True)
class ModelErrorEvent:
    """A model-side error that ends the call; ``error`` is the ProposerError class's name."""

    kind: ClassVar[JournalKind] = JournalKind.MODEL_ERROR
    model: str
    error: str
    message: str
    attempts: int


@dataclass(frozen=True)
class AnswerTruncatedEvent:
    """An answer longer than the proposer keeps: ``chars`` long, cut to ``kept`` characters."""

    kind: ClassVar[JournalKind] = JournalKind.MODEL_ANSWER_TRUNCATED
    model: str
    chars: int
    kept: int


@dataclass(frozen=True)
class EditFormatSwitchedEvent:
    """After a structural error the model is asked for another edit format for the rest of the
    run."""

    kind: ClassVar[JournalKind] = JournalKind.EDIT_FORMAT_SWITCHED
    model: str
    from_format: str = field(metadata={"json": "from"})
    to_format: str = field(metadata={"json": "to"})
    error: str = ""


@dataclass(frozen=True)
class ParamDroppedEvent:
    """A request parameter the server refused (a 400 naming it), left out from now on."""

    kind: ClassVar[JournalKind] = JournalKind.MODEL_PARAM_DROPPED
    model: str
    param: str
    error: str = ""


ModelEvent = Union[
    ModelRetryEvent,
    ModelErrorEvent,
    AnswerTruncatedEvent,
    EditFormatSwitchedEvent,
    ParamDroppedEvent,
]
OnModelEvent = Callable[
    [ModelEvent], None
]  # a proposer's ``on_event``: the chain journals what it gets
MODEL_EVENTS = (
    ModelRetryEvent,
    ModelErrorEvent,
    AnswerTruncatedEvent,
    EditFormatSwitchedEvent,
    ParamDroppedEvent,
)
