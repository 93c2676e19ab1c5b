"""The run journal, run directories and the project lock, on real files and real processes."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repairloop.errors import LockedError, ProjectError
from repairloop.journal import (
    CrashedEvent,
    DoneEvent,
    FlakyEvent,
    IntentEvent,
    Journal,
    ProjectLock,
    ProposalErrorEvent,
    ProposalEvent,
    StoppedEvent,
    WorkspaceEvent,
    list_runs,
    new_run_id,
    pending_intents,
    pid_alive,
    read_events,
    read_journal,
    resolve_run,
    run_dir_for,
)
from repairloop.types import FailureKind, Frame, Outcome, StopReason, Usage


def fixed_clock() -> datetime:
    return datetime(2026, 11, 30, 2, 11, 40, tzinfo=timezone.utc)


class Colour(enum.Enum):
    RED = 1


@dataclass(frozen=True)
class Sample:
    kind: FailureKind
    where: Path


def test_run_ids_sort_by_time_and_are_unique() -> None:
    first = new_run_id(fixed_clock)
    assert first.startswith("20261130-021140-") and len(first) == len("20261130-021140-3f2a")
    later = new_run_id(lambda: datetime(2026, 11, 30, 2, 11, 41, tzinfo=timezone.utc))
    assert sorted([later, first]) == [first, later]
    assert len({new_run_id(fixed_clock) for _ in range(50)}) > 40  # random suffix


def test_record_writes_one_json_line_per_event_and_reads_it_back(tmp_path: Path) -> None:
    run = run_dir_for(tmp_path, "r1")
    assert run == tmp_path / ".repairloop" / "runs" / "r1"
    journal = Journal(run, clock=fixed_clock)
    assert run.is_dir() and journal.path == run / "journal.jsonl"
    notes = {
        "sample": Sample(FailureKind.LOGIC, Path("a/b.py")),
        "colour": Colour.RED,
        "frames": (Frame("m.py", 3),),
        "where": Path("x"),
        "text": "é",
    }
    journal.record(ProposalEvent(2, 1, "m", "llm", "diff", Usage(3, 4, None, 0.5, 1), notes))
    journal.record(StoppedEvent(Outcome.FIXED, StopReason.SUCCESS, "done"))
    lines = journal.path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first == {
        "event": "proposal",
        "ts": "2026-11-30T02:11:40+00:00",
        "iteration": 2,
        "round": 1,
        "model": "m",
        "engine": "llm",
        "answer": "diff",
        "usage": {
            "prompt_tokens": 3,
            "completion_tokens": 4,
            "cost_usd": None,
            "seconds": 0.5,
            "calls": 1,
        },
        "notes": {
            "sample": {"kind": "logic", "where": "a/b.py"},
            "colour": 1,
            "frames": [{"path": "m.py", "line": 3, "function": ""}],
            "where": "x",
            "text": "é",
        },
        "candidates": 1,
        "degraded": "",
    }
    events, warnings = read_journal(run)
    assert [e["event"] for e in events] == ["proposal", "stopped"] and warnings == []
    entries, warnings = read_events(run)
    assert [e.ts for e in entries] == ["2026-11-30T02:11:40+00:00"] * 2 and warnings == []
    assert entries[0].event == ProposalEvent(
        2, 1, "m", "llm", "diff", Usage(3, 4, None, 0.5, 1), first["notes"]
    )
    assert entries[1].event == StoppedEvent(Outcome.FIXED, StopReason.SUCCESS, "done")


def test_torn_last_line_is_ignored_with_a_warning_and_cut_on_resume(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run")
    journal.record(FlakyEvent(("one",)))
    journal.record(FlakyEvent(("two",)))
    with open(journal.path, "ab") as fh:
        fh.write(b'{"event": "thr')  # killed in the middle of a write
    events, warnings = read_journal(tmp_path / "run")
    assert [e["tests"] for e in events] == [["one"], ["two"]]
    assert len(warnings) == 1 and "line 3" in warnings[0]
    resumed = Journal(tmp_path / "run")  # resume: the torn tail goes, the next event is whole
    resumed.record(FlakyEvent(("three",)))
    entries, warnings = read_events(tmp_path / "run")
    assert [e.event for e in entries] == [
        FlakyEvent(("one",)),
        FlakyEvent(("two",)),
        FlakyEvent(("three",)),
    ]
    assert warnings == []


def test_invalid_json_on_the_last_line_is_torn_too(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run")
    journal.record(CrashedEvent("one"))
    with open(journal.path, "ab") as fh:
        fh.write(b"\x00\x00\x00\n")  # what a crash can leave on some filesystems
    events, warnings = read_journal(tmp_path / "run")
    assert [e["event"] for e in events] == ["crashed"] and len(warnings) == 1


def test_a_bad_line_in_the_middle_is_an_error_naming_it(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run")
    journal.record(CrashedEvent("one"))
    with open(journal.path, "ab") as fh:
        fh.write(b"not json\n")
    journal.record(CrashedEvent("three"))
    with pytest.raises(ProjectError) as err:
        read_events(tmp_path / "run")
    assert "line 2" in err.value.message and err.value.hint


def test_missing_journal_gives_a_warning(tmp_path: Path) -> None:
    assert read_journal(tmp_path) == (
        [],
        [f"{tmp_path / 'journal.jsonl'} does not exist (the run stopped before its first event)"],
    )


def test_write_text_and_json_are_atomic_and_exact(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run")
    patch = journal.write_text("fix.patch", "-a\r\n+b\r\n\\ No newline at end of file\n")
    assert patch.read_bytes() == b"-a\r\n+b\r\n\\ No newline at end of file\n"
    prompt = journal.write_text("prompts/iter-1.txt", "first")
    journal.write_text("prompts/iter-1.txt", "second")
    assert prompt.read_text() == "second"
    summary = journal.write_json("summary.json", {"outcome": FailureKind.LOGIC, "path": Path("p")})
    assert json.loads(summary.read_text()) == {"outcome": "logic", "path": "p"}
    assert sorted(p.name for p in (tmp_path / "run").rglob("*")) == [
        "fix.patch",
        "iter-1.txt",
        "prompts",
        "summary.json",
    ]  # no temp files left
    with pytest.raises(ValueError):
        journal.write_text("../escape.txt", "x")


def test_pending_intents_are_those_without_done(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run")
    journal.record(IntentEvent("apply", "user-tree", files=("a.py",)))
    journal.record(DoneEvent("apply", "user-tree"))
    journal.record(IntentEvent("push", "repairloop/fix-1", remote="origin"))
    journal.record(IntentEvent("open_pr", "repairloop/fix-1"))
    journal.record(DoneEvent("open_pr", "repairloop/fix-1"))
    journal.record(IntentEvent("apply", "user-tree"))  # a second attempt, never finished
    entries, _ = read_events(tmp_path / "run")
    pending = pending_intents([e.event for e in entries])
    assert [(e.action, e.key) for e in pending] == [
        ("push", "repairloop/fix-1"),
        ("apply", "user-tree"),
    ]
    assert pending[0].remote == "origin"


def test_list_and_resolve_runs(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as err:
        resolve_run(tmp_path, None)
    assert "repairloop run" in err.value.hint
    for run_id in ("20261130-021140-aaaa", "20261201-090000-bbbb", "20261201-090000-bbcc"):
        Journal(run_dir_for(tmp_path, run_id))
    runs = list_runs(tmp_path)
    assert [p.name for p in runs] == [
        "20261201-090000-bbcc",
        "20261201-090000-bbbb",
        "20261130-021140-aaaa",
    ]
    assert resolve_run(tmp_path, None) == resolve_run(tmp_path, "latest") == runs[0]
    assert resolve_run(tmp_path, "20261130").name == "20261130-021140-aaaa"
    assert resolve_run(tmp_path, "20261201-090000-bbbb").name == "20261201-090000-bbbb"
    with pytest.raises(ProjectError, match="ambiguous"):
        resolve_run(tmp_path, "20261201")
    with pytest.raises(ProjectError, match="no run"):
        resolve_run(tmp_path, "1999")


def test_pid_alive() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert pid_alive(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not pid_alive(sleeper.pid)
    assert not pid_alive(0) and not pid_alive(-1)


def _reaped_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_lock_is_exclusive_while_its_holder_lives(tmp_path: Path) -> None:
    lock_file = tmp_path / ".repairloop" / "lock"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        lock_file.parent.mkdir()
        lock_file.write_text(
            json.dumps({"pid": sleeper.pid, "started": "x", "run_id": "other-run"})
        )
        with pytest.raises(LockedError) as err:
            with ProjectLock(tmp_path, "mine"):
                pass
        assert err.value.message == (
            f"another repairloop run (pid {sleeper.pid}, run other-run) is working on this project"
        )
        assert "remove .repairloop/lock" in err.value.hint
        assert json.loads(lock_file.read_text())["run_id"] == "other-run"  # left alone
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_stale_lock_is_taken_over_and_released(tmp_path: Path) -> None:
    lock_file = tmp_path / ".repairloop" / "lock"
    lock_file.parent.mkdir()
    lock_file.write_text(json.dumps({"pid": _reaped_pid(), "started": "x", "run_id": "crashed"}))
    with ProjectLock(tmp_path, "mine"):
        holder = json.loads(lock_file.read_text())
        assert holder["run_id"] == "mine" and pid_alive(holder["pid"])
        with pytest.raises(LockedError):  # a second run in the meantime
            with ProjectLock(tmp_path, "second"):
                pass
    assert not lock_file.exists()


def test_lock_release_leaves_someone_elses_lock(tmp_path: Path) -> None:
    lock = ProjectLock(tmp_path, "mine")
    with lock:
        lock.path.write_text(json.dumps({"pid": 1, "run_id": "taken-over"}))
    assert json.loads(lock.path.read_text())["run_id"] == "taken-over"


def test_values_json_cannot_encode_are_converted(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run", clock=fixed_clock)
    odd = {
        "tags": {"b", "a"},
        "when": fixed_clock(),
        "error": ValueError("bad value"),
        "raw": b"caf\xc3\xa9",
        "other": object,
    }
    journal.record(ProposalErrorEvent(1, 0, "m", "ModelError", "refused", Usage(), 1, notes=odd))
    (event,), _ = read_journal(tmp_path / "run")
    notes = event["notes"]
    assert notes["tags"] == ["a", "b"] and notes["when"] == "2026-11-30T02:11:40+00:00"
    assert notes["error"] == {"type": "ValueError", "message": "bad value"}
    assert notes["raw"] == "café" and notes["other"] == "<class 'object'>"


def test_an_unreadable_lock_is_not_taken_over(tmp_path: Path) -> None:
    lock_file = tmp_path / ".repairloop" / "lock"
    lock_file.parent.mkdir()
    lock_file.write_text("")  # a writer between create and write, or a crash right there
    with pytest.raises(LockedError) as err:
        with ProjectLock(tmp_path, "mine"):
            pass
    assert "unreadable" in err.value.message and "remove .repairloop/lock" in err.value.hint


def test_a_file_name_that_is_not_utf8_is_journalled_and_read_back(tmp_path: Path) -> None:
    """Seen in a new user's trial: a tracked `bad\\xffname.txt` crashed every run (the start
    state's file list holds it as a lone surrogate, which UTF-8 cannot hold)."""
    journal = Journal(tmp_path / "run")
    name = "bad\udcffname.txt"  # os.fsdecode(b"bad\xffname.txt")
    start = journal.write_json("start.json", {"files": {name: "0" * 64}})
    assert json.loads(start.read_text(encoding="utf-8")) == {"files": {name: "0" * 64}}
    journal.record(WorkspaceEvent(base="b" * 40, head=None, brought_ignored=(name,)))
    entries, _ = read_events(journal.run_dir)
    events = [e.event for e in entries if isinstance(e.event, WorkspaceEvent)]
    assert events[0].brought_ignored == (name,)
