"""Read the JSON lines written by ``plugin/repairloop_pytest_plugin.py`` into TestResults.

The plugin writes one record per phase report that matters (see its module
docstring for the record shapes). Here they become one TestResult per test id:
the first failing phase wins (a setup error, else the call failure, else a
teardown error), otherwise the call phase, otherwise whatever phase ended the
test (a skip at setup). Frame paths inside ``root`` become relative to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from repairloop.types import Frame, TestOutcome, TestResult, relative_to, root_forms

_FAILING = ("failed", "error")


@dataclass(frozen=True)
class PluginResults:
    """What one results file says.

    ``finished`` is True when a ``session`` record was written (pytest ended
    on its own). ``collected`` sums the sessions' counts (a command may run
    pytest more than once), or the ``collected`` record's count when killed.
    ``exitstatus`` is the last session's. ``in_progress`` names the test that
    had started but not finished when the run stopped. ``coverage_available``
    is None when coverage was not asked for.
    """

    results: Tuple[TestResult, ...]
    finished: bool
    records: int
    collected: Optional[int] = None
    exitstatus: Optional[int] = None
    in_progress: Optional[str] = None
    coverage_available: Optional[bool] = None


def clean_text(value: Any) -> str:
    """``value`` as text safe to write anywhere: lone surrogates become backslash escapes."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def _frames(raw: Any, roots: Tuple[str, ...]) -> Tuple[Frame, ...]:
    frames = []
    for entry in raw or ():
        try:
            path, line, function = entry[0], int(entry[1]), entry[2]
        except (TypeError, ValueError, IndexError):
            continue
        text = clean_text(path)
        frames.append(Frame(relative_to(text, roots) or text, line, clean_text(function)))
    return tuple(frames)


def _result(record: Dict[str, Any], roots: Tuple[str, ...]) -> Optional[TestResult]:
    try:
        outcome = TestOutcome(record.get("outcome", ""))
    except ValueError:
        return None
    return TestResult(
        test_id=clean_text(record.get("nodeid", "")),
        outcome=outcome,
        duration=float(record.get("duration") or 0.0),
        phase="collect" if record.get("kind") == "collect" else str(record.get("when", "call")),
        exc_type=clean_text(record["exc_type"]) if record.get("exc_type") else None,
        message=clean_text(record.get("message", "")),
        frames=_frames(record.get("frames"), roots),
        output=clean_text(record.get("output", "")),
        longrepr=clean_text(record.get("longrepr", "")),
        exc_module=clean_text(record.get("exc_module", "")),
        causes=tuple(clean_text(c) for c in record.get("causes") or () if c),
        endpoint=clean_text(record.get("endpoint", "")),
        doctest=str(record.get("doctest") or "")
        if record.get("doctest") in ("module", "text")
        else "",
    )


def merge_phases(phases: List[TestResult]) -> TestResult:
    """One result per test id from its phase results, in the order they were reported."""
    failing = [r for r in phases if r.outcome.value in _FAILING]
    calls = [r for r in phases if r.phase == "call"]
    chosen = failing[0] if failing else (calls[-1] if calls else phases[-1])
    duration = sum(r.duration for r in phases)
    return chosen if duration == chosen.duration else replace(chosen, duration=duration)


def _load(path: Path) -> List[Dict[str, Any]]:
    """Every well-formed record; a line cut short by a kill is skipped."""
    records = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    records.append(record)
    except OSError:
        return []
    return records


def _in_progress(records: List[Dict[str, Any]]) -> Optional[str]:
    """The last started test if nothing says it got past its call phase (or, with ``finish``
    records, that it finished: a hang in teardown)."""
    starts = [r.get("nodeid") for r in records if r.get("kind") == "start"]
    if not starts:
        return None
    last = starts[-1]
    if any(
        r.get("kind") == "session_start" for r in records
    ):  # a plugin that writes "finish" records
        finished = any(r.get("kind") == "finish" and r.get("nodeid") == last for r in records)
        return None if finished else str(last)
    for record in records:
        if record.get("kind") == "test" and record.get("nodeid") == last:
            if record.get("when") != "setup" or record.get("outcome") != "passed":
                return None
    return str(last)


def _exitstatus(sessions: List[Dict[str, Any]]) -> Optional[int]:
    try:
        return int(sessions[-1]["exitstatus"])
    except (IndexError, KeyError, TypeError, ValueError):
        return None


def read_plugin_results(path: Path, root: Path) -> PluginResults:
    """Parse the plugin's JSONL at ``path``; a missing or empty file gives ``records == 0``."""
    records = _load(path)
    roots = root_forms(root)
    by_id: Dict[str, List[TestResult]] = {}
    sessions = [r for r in records if r.get("kind") == "session"]
    for record in records:
        if record.get("kind") in ("test", "collect"):
            result = _result(record, roots)
            if result is not None:
                by_id.setdefault(result.test_id, []).append(result)
    coverage = [r for r in records if r.get("kind") == "coverage"]
    counts = [r for r in records if r.get("kind") == "collected"]
    if sessions:
        collected: Optional[int] = sum(int(s.get("collected") or 0) for s in sessions)
    else:
        collected = sum(int(c.get("count") or 0) for c in counts) if counts else None
    return PluginResults(
        results=tuple(merge_phases(phases) for phases in by_id.values()),
        finished=bool(sessions),
        records=len(records),
        collected=collected,
        exitstatus=_exitstatus(sessions),
        in_progress=None if sessions else _in_progress(records),
        coverage_available=bool(coverage[-1].get("available")) if coverage else None,
    )
