"""What a killed or interrupted run left in its journal, for ``repairloop resume`` (loop layer).

A resume re-creates the workspace at the recorded start-state commit and
replays the run: every answer and model error recorded in the journal is
reused, so the model is never asked again for an iteration whose answer is
recorded (the candidates are re-validated by the tests, which costs test time
but no tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from repairloop.errors import ConfigError, ProjectError
from repairloop.journal import (
    IntentEvent,
    ProposalErrorEvent,
    ProposalEvent,
    ReadEvent,
    StartEvent,
    StoppedEvent,
    WorkspaceEvent,
    pending_intents,
    read_events,
    resolve_run,
)
from repairloop.loop.chain import RecordedAnswer
from repairloop.settings import ENV_PREFIX, FIELD_NAMES, TRUST, Settings, Trust, load_layers
from repairloop.types import StopReason
from repairloop.workspace import StartState

Key = Tuple[int, int]  # (iteration number, round: 0 for the answer, 1 for the structural retry)


@dataclass(frozen=True)
class Recorded:
    """A run's journal, read for resuming it."""

    run_id: str
    run_dir: Path
    settings: Settings
    base: Optional[str]
    start: Optional[StartState]
    answers: Dict[Key, RecordedAnswer] = field(default_factory=dict)
    finished: bool = False
    pending: Tuple[IntentEvent, ...] = ()
    warnings: Tuple[str, ...] = ()


def load_recorded(project: Path, ref: Optional[str], environ: Mapping[str, str]) -> Recorded:
    """Read run ``ref`` (an id, a unique prefix, or None/"latest") of ``project``.

    The journal lies in the project, so its recorded settings count as the project's: keys a
    project may not set (``settings.trust``) come from the user's layers of ``environ`` now, with a
    warning where that changes a recorded value. Raises ProjectError when there is no such run or
    its journal lacks its start, ConfigError when its settings cannot be read.
    """
    run_dir = resolve_run(project, ref)
    entries, warnings = read_events(run_dir)
    events = [entry.event for entry in entries]
    start = next((e for e in events if isinstance(e, StartEvent)), None)
    if start is None:
        raise ProjectError(
            f"the journal of {run_dir.name} has no start record",
            hint="start a new run with `repairloop run`",
        )
    try:
        settings, notices = _resumed_settings(project, start.settings, run_dir.name, environ)
    except (TypeError, ValueError) as err:
        raise ConfigError(
            f"cannot read the settings recorded in {run_dir.name}: {err}",
            hint="start a new run with `repairloop run`",
        ) from None
    return Recorded(
        run_id=start.run_id,
        run_dir=run_dir,
        settings=settings,
        base=_base(events),
        start=_start_state(run_dir),
        answers=_answers(events),
        # An interrupted run stopped on purpose but is not finished: resume goes on with it.
        finished=any(
            isinstance(e, StoppedEvent) and e.stop_reason is not StopReason.INTERRUPTED
            for e in events
        ),
        pending=tuple(pending_intents(events)),
        warnings=tuple(warnings) + notices,
    )


def _resumed_settings(
    project: Path, recorded: Mapping[str, object], run_id: str, environ: Mapping[str, str]
) -> Tuple[Settings, Tuple[str, ...]]:
    """The recorded settings as a project layer under the user's current layers, and one line per
    recorded value of a key the project may not set that is not reused (``settings.trust``)."""
    values = {k: v for k, v in recorded.items() if k in FIELD_NAMES}
    origin = f"the journal of run {run_id}"
    layers = load_layers(project, None, environ, project_values=(values, origin))
    dropped = [
        k
        for k, v in values.items()
        if v != getattr(layers.settings, k)
        and TRUST[k] is not Trust.PROJECT
        and not k.startswith("_")
    ]
    notices = tuple(
        f"the recorded {k} = {values[k]!r} is not reused: {origin} lies in the project, which "
        f"never chooses it; set it again with {ENV_PREFIX}{k.upper()} or in your configuration file"
        for k in dropped
    )
    return layers.settings, notices


def _base(events: List[ReadEvent]) -> Optional[str]:
    record = next((e for e in events if isinstance(e, WorkspaceEvent)), None)
    return record.base if record and record.head else None


def _start_state(run_dir: Path) -> Optional[StartState]:
    import json

    path = run_dir / "start.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return StartState(head=data.get("head"), files=dict(data.get("files") or {}))


def _answers(events: List[ReadEvent]) -> Dict[Key, RecordedAnswer]:
    """Recorded answers and model errors, by (iteration, round); the first record of a key wins."""
    answers: Dict[Key, RecordedAnswer] = {}
    for event in events:
        if isinstance(event, (ProposalEvent, ProposalErrorEvent)):
            answers.setdefault((event.iteration, event.round), event)
    return answers
