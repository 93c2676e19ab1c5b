"""Helpers for the runner's tests: small projects written inline, process checks."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, Tuple

from repairloop.types import TestReport, TestResult

PYTHON = sys.executable
PYTEST: Tuple[str, ...] = (PYTHON, "-m", "pytest", "-q")


def write_project(root: Path, files: Dict[str, str]) -> Path:
    """Write ``{relative path: source}`` under ``root`` (sources dedented); return ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def result_for(report: TestReport, test_id: str) -> TestResult:
    """The one result for ``test_id``; fails the test with the ids present when missing."""
    matches = [r for r in report.results if r.test_id == test_id]
    assert len(matches) == 1, (test_id, [r.test_id for r in report.results], report.output[-2000:])
    return matches[0]


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def wait_gone(pid: int, seconds: float = 15.0) -> bool:
    """Poll until ``pid`` is gone; True if it went within ``seconds`` (a generous bound)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not is_alive(pid):
            return True
        time.sleep(0.05)
    return not is_alive(pid)


def read_pid(path: Path, seconds: float = 15.0) -> int:
    """The pid a test process wrote to ``path`` (waits for the file to appear)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return int(text)
        time.sleep(0.05)
    raise AssertionError(f"no pid written to {path}")
