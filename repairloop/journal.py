"""Run directories, the append-only JSONL journal, side-effect intents and the project lock.

A run lives in ``<project>/.repairloop/runs/<run_id>/``: ``journal.jsonl`` (one
JSON object per line, flushed and fsync'ed per event so a killed run loses at
most the line being written) plus files such as ``fix.patch``, prompts and
``summary.json``, each written atomically. Effects outside the workspace are
journalled as an ``intent`` before and ``done`` after (DESIGN.md, "Workspace
and side effects"); ``pending_intents`` finds those a crash interrupted.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, Callable, Dict, List, Optional, Tuple

from repairloop.errors import LockedError, ProjectError

Clock = Callable[[], datetime]
JOURNAL = "journal.jsonl"


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_run_id(clock: Clock = _utcnow) -> str:
    """A sortable, unique run id: UTC ``YYYYmmdd-HHMMSS-xxxx`` (4 random hex digits)."""
    return f"{clock():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def state_dir(project: Path) -> Path:
    """``<project>/.repairloop``: runs, worktree registry, lock."""
    return Path(project) / ".repairloop"


def run_dir_for(project: Path, run_id: str) -> Path:
    """``<project>/.repairloop/runs/<run_id>`` (not created)."""
    return state_dir(project) / "runs" / run_id


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


def _dumps(data: Any, indent: Optional[int] = None) -> str:
    return json.dumps(data, default=to_jsonable, ensure_ascii=False, indent=indent)


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

    def __init__(self, run_dir: Path, *, clock: Clock = _utcnow,
                 redact: Optional[Callable[[str], str]] = None) -> None:
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

    def append(self, event: str, **data: Any) -> None:
        """Write ``{"event": event, "ts": <ISO UTC>, **data}`` as one line; fsync'ed."""
        record: Dict[str, Any] = {"event": event, "ts": self._clock().isoformat()}
        record.update((k, v) for k, v in data.items() if k not in record)
        line = (_dumps(self._redacted(record)) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write: a kill leaves a whole line or a torn tail
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
        """Write ``run_dir/name`` atomically (temp file + ``os.replace``), exact bytes after ``redact``."""
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
        """Write ``data`` as indented JSON (same conversions as ``append``), atomically."""
        return self.write_text(name, _dumps(self._redacted(data), indent=2) + "\n")

    def intent(self, action: str, key: str, **data: Any) -> None:
        """Journal an effect outside the workspace before doing it (e.g. "apply", "push")."""
        self.append("intent", action=action, key=key, **data)

    def done(self, action: str, key: str, **data: Any) -> None:
        """Journal that the intent ``(action, key)`` was carried out."""
        self.append("done", action=action, key=key, **data)


def read_journal(run_dir: Path) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The run's events and warnings.

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
        warnings.append(f"{path}: ignored a torn last line {len(lines)} (the run was interrupted "
                        "while writing it)")
    events: List[Dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            event = exc
        if not isinstance(event, dict):
            raise ProjectError(f"{path}: line {number} is not a JSON object ({event})",
                               hint="the journal is damaged; look at that line or remove the run dir")
        events.append(event)
    return events, warnings


def pending_intents(events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Intents with no later ``done`` for the same (action, key), in journal order."""
    open_intents: Dict[Tuple[Any, Any], Dict[str, Any]] = {}
    for event in events:
        key = (event.get("action"), event.get("key"))
        if event.get("event") == "intent":
            open_intents.pop(key, None)  # re-insert so order follows the latest intent
            open_intents[key] = event
        elif event.get("event") == "done":
            open_intents.pop(key, None)
    return list(open_intents.values())


def list_runs(project: Path) -> List[Path]:
    """Run directories of the project, newest first (run ids sort by time)."""
    runs = state_dir(project) / "runs"
    if not runs.is_dir():
        return []
    return sorted((p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")),
                  key=lambda p: p.name, reverse=True)


def resolve_run(project: Path, ref: Optional[str]) -> Path:
    """The run dir for ``ref``: None or "latest" -> newest; else an id or a unique prefix.

    Raises ProjectError when there is no run, no match, or the prefix is ambiguous.
    """
    runs = list_runs(project)
    if not runs:
        raise ProjectError(f"no repairloop runs in {state_dir(project) / 'runs'}",
                           hint="start one with `repairloop run`")
    if ref is None or ref == "latest":
        return runs[0]
    exact = [p for p in runs if p.name == ref]
    matches = exact or [p for p in runs if p.name.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ProjectError(f"no run {ref!r} in {state_dir(project) / 'runs'}",
                           hint=f"use `latest` or one of: {', '.join(p.name for p in runs[:5])}")
    raise ProjectError(f"run id prefix {ref!r} is ambiguous: {', '.join(p.name for p in matches[:5])}",
                       hint="give more characters of the run id")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (``os.kill(pid, 0)``; another user's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists but belongs to someone else
    except OSError:
        return False
    return True


class ProjectLock:
    """One run per project: ``<project>/.repairloop/lock`` holds {pid, started, run_id}.

    Created atomically (``O_CREAT | O_EXCL``). A lock whose pid is dead is taken
    over; a live one raises LockedError. Released on exit (only if still ours).
    """

    def __init__(self, project: Path, run_id: str, *, clock: Clock = _utcnow,
                 is_alive: Callable[[int], bool] = pid_alive) -> None:
        self.path = state_dir(project) / "lock"
        self.run_id = run_id
        self._clock = clock
        self._is_alive = is_alive
        self._content = b""

    def __enter__(self) -> "ProjectLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._content = _dumps({"pid": os.getpid(), "started": self._clock().isoformat(),
                                "run_id": self.run_id}).encode("utf-8")
        for _ in range(3):  # a stale lock removed, then a second try; a third for a race
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                self._check_holder()
                continue
            try:
                os.write(fd, self._content)
                os.fsync(fd)
            finally:
                os.close(fd)
            return self
        raise LockedError(f"could not take {self.path}", hint="remove .repairloop/lock if no run is going")

    def _check_holder(self) -> None:
        """Raise LockedError if the lock's holder is alive, else remove the stale lock."""
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
            pid, run = int(holder["pid"]), holder.get("run_id", "?")
        except FileNotFoundError:
            return  # released meanwhile: try again
        except (OSError, ValueError, KeyError, TypeError):
            # Unreadable: a writer between create and write, or a crash right there.
            raise LockedError(f"the project lock {self.path} is unreadable",
                              hint="wait for the other run, or remove .repairloop/lock if none is going") from None
        if self._is_alive(pid):
            raise LockedError(f"another repairloop run (pid {pid}, run {run}) is working on this project",
                              hint="wait for it, or remove .repairloop/lock if that process is gone")
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def __exit__(self, *exc: object) -> None:
        try:
            if self.path.read_bytes() == self._content:
                self.path.unlink()
        except OSError:
            pass
