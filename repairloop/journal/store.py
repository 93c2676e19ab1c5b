"""The run's journal: an append-only JSONL file of typed events, plus the run's other files.

A run lives in ``<project>/.repairloop/runs/<run_id>/`` (``runs.py``):
``journal.jsonl`` (one JSON object per line, flushed and fsync'ed per event so
a killed run loses at most the line being written) plus files such as
``fix.patch``, prompts and ``summary.json``, each written atomically. Events
are the records of ``events.py``: ``Journal.record`` writes one,
``read_events`` gives them back (``read_journal`` gives the raw objects).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, Callable, Dict, List, Optional, Tuple

from repairloop.errors import ProjectError
from repairloop.journal.codec import event_from_json, event_to_json
from repairloop.journal.events import DoneEvent, IntentEvent, JournalEvent, ReadEvent
from repairloop.journal.runs import JOURNAL, Clock, utcnow


def to_jsonable(value: Any) -> Any:
    """``json.dumps`` default: dataclasses -> dict, enums -> value, paths -> str,
    sets -> sorted list, datetimes -> ISO text, exceptions -> {type, message};
    anything else -> ``repr`` (a journal line must never stop a run)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


# A lone surrogate: a file name that is not UTF-8 (``os.fsdecode`` keeps its bytes that way).
_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(data: Any, indent: Optional[int] = None) -> str:
    """JSON text as UTF-8 can hold it: non-ASCII written as it is, a lone surrogate (a file name
    that is not UTF-8) as its ``\\uXXXX`` escape, which reads back as the same string."""
    text = json.dumps(data, default=to_jsonable, ensure_ascii=False, indent=indent)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _fsync_dir(path: Path) -> None:
    # The rename itself is durable only once the directory entry is on disk.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories
    finally:
        os.close(fd)


def _valid_tail(data: bytes) -> int:
    """Offset where the journal's complete lines end: a last line without newline
    or with invalid JSON was torn by a kill and does not count."""
    if not data.endswith(b"\n"):
        return data.rfind(b"\n") + 1
    last_start = data.rfind(b"\n", 0, len(data) - 1) + 1
    try:
        json.loads(data[last_start:])
    except ValueError:
        return last_start
    return len(data)


class Journal:
    """Append-only event log of one run, plus its files.

    ``Journal(run_dir)`` creates the directory; reopening an existing one (resume)
    first cuts a torn last line so the next event starts on a fresh line.
    ``redact`` (text -> text) is applied to every string of every event and
    file before it is written, so secrets never reach the disk (the loop
    passes ``repairloop.redact.Redactor``).
    """

    def __init__(
        self, run_dir: Path, *, clock: Clock = utcnow, redact: Optional[Callable[[str], str]] = None
    ) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / JOURNAL
        self._clock = clock
        self.redact: Callable[[str], str] = redact or (lambda text: text)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            data = self.path.read_bytes()
            end = _valid_tail(data)
            if end < len(data):
                os.truncate(self.path, end)

    def record(self, event: JournalEvent) -> None:
        """Write ``{"event": <kind>, "ts": <ISO UTC>, ...fields}`` as one line, redacted;
        fsync'ed."""
        line: Dict[str, Any] = {"event": event.kind.value, "ts": self._clock().isoformat()}
        line.update((k, v) for k, v in event_to_json(event).items() if k not in line)
        data = (_dumps(self._redacted(line)) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)  # one write: a kill leaves a whole line or a torn tail
            os.fsync(fd)
        finally:
            os.close(fd)

    def _redacted(self, data: Any) -> Any:
        """``data`` as plain JSON values with ``redact`` applied to every string (keys too)."""
        plain = json.loads(_dumps(data))

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return self.redact(value)
            if isinstance(value, list):
                return [walk(v) for v in value]
            if isinstance(value, dict):
                return {self.redact(k): walk(v) for k, v in value.items()}
            return value

        return walk(plain)

    def _target(self, name: str) -> Path:
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"run file name must be relative and inside the run dir: {name!r}")
        return self.run_dir / rel

    def write_text(self, name: str, text: str) -> Path:
        """Write ``run_dir/name`` atomically (temp file + ``os.replace``), exact bytes after
        ``redact``."""
        text = self.redact(text)
        target = self._target(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        _fsync_dir(target.parent)
        return target

    def write_json(self, name: str, data: Any) -> Path:
        """Write ``data`` as indented JSON (the conversions of ``to_jsonable``), atomically."""
        return self.write_text(name, _dumps(self._redacted(data), indent=2) + "\n")


def read_journal(run_dir: Path) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The run's journal lines as JSON objects, and warnings (``read_events`` gives records).

    A torn last line (no newline, or invalid JSON) is skipped with a warning; a
    bad line before it raises ProjectError naming the line. A missing journal
    gives no events and a warning.
    """
    path = Path(run_dir) / JOURNAL
    if not path.exists():
        return [], [f"{path} does not exist (the run stopped before its first event)"]
    data = path.read_bytes()
    end = _valid_tail(data)
    lines = data[:end].split(b"\n")
    warnings = []
    if end < len(data):
        warnings.append(
            f"{path}: ignored a torn last line {len(lines)} (the run was interrupted "
            "while writing it)"
        )
    events: List[Dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            event = exc
        if not isinstance(event, dict):
            raise ProjectError(
                f"{path}: line {number} is not a JSON object ({event})",
                hint="the journal is damaged; look at that line or remove the run dir",
            )
        events.append(event)
    return events, warnings


@dataclass(frozen=True)
class Entry:
    """One journal line read back: when it was written (ISO 8601 text, UTC) and its event."""

    ts: str
    event: ReadEvent


def read_events(run_dir: Path) -> Tuple[List[Entry], List[str]]:
    """The run's events as records, and warnings (``read_journal``'s, and one per unreadable event).

    Raises ProjectError like ``read_journal`` for a damaged line before the last.
    """
    lines, warnings = read_journal(run_dir)
    entries = [Entry(str(line.get("ts", "")), event_from_json(line)) for line in lines]
    for number, entry in enumerate(entries, start=1):
        problem = getattr(entry.event, "problem", "")
        if problem:
            warnings.append(
                f"event {number} ({getattr(entry.event, 'name', '?')}): {problem}; left out"
            )
    return entries, warnings


def pending_intents(events: List[ReadEvent]) -> List[IntentEvent]:
    """Intents with no later ``done`` for the same (action, key), in journal order."""
    open_intents: Dict[Tuple[str, str], IntentEvent] = {}
    for event in events:
        if isinstance(event, IntentEvent):
            # re-insert so order follows the latest intent
            open_intents.pop((event.action, event.key), None)
            open_intents[(event.action, event.key)] = event
        elif isinstance(event, DoneEvent):
            open_intents.pop((event.action, event.key), None)
    return list(open_intents.values())
