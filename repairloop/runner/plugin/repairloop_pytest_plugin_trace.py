"""Per-test line tracing for repairloop's fault localisation, when coverage.py is not importable.

Part of the pytest plugin (``repairloop_pytest_plugin``): it runs in the
project's own test process, so it uses nothing but the standard library and
works on Python 3.8+. On Python 3.12+ it listens to ``sys.monitoring`` (PEP
669): a LINE event is switched off (``DISABLE``) at its first hit and all of
them are switched on again when the next test starts, so each line costs one
callback per test. Before 3.12 it uses ``sys.settrace`` (and
``threading.settrace`` for new threads), tracing only frames of code under the
given roots.

The data file holds JSON lines: a header ``{"tool": "sys.monitoring"}`` (or
``sys.settrace``), then one ``{"test": nodeid, "lines": {path: [line, ...]}}``
per stretch of a test; ``test`` is ``""`` for code run outside any test
(imports at collection, fixtures between tests), which counts as run by every
test. ``repairloop.propose.builtin.spectra`` reads it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

LINES_NAME = (
    "repairloop-lines.jsonl"  # written beside coverage.py's data file, in the same directory
)
# Directories whose code is not the project's own (installed packages, virtual environments).
_NOT_PROJECT = ("site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "__pypackages__")


def _monitoring() -> Any:
    """``sys.monitoring`` (Python 3.12+; raises AttributeError before)."""
    return getattr(sys, "monitoring")  # noqa: B009 - an attribute older Pythons (and mypy's 3.10) lack


_DISABLE: Any = getattr(getattr(sys, "monitoring", None), "DISABLE", None)


def lines_file(data_file: str) -> str:
    """Where the tracer writes, given coverage.py's data file path."""
    return os.path.join(os.path.dirname(os.path.abspath(data_file)), LINES_NAME)


class LineTracer:
    """Records which lines of files under ``roots`` each test runs; ``switch(nodeid)`` at test
    boundaries."""

    def __init__(self, roots: Sequence[str], path: str) -> None:
        self.roots = tuple(os.path.join(os.path.abspath(r), "") for r in roots)
        self.path = path
        self.tool = "sys.monitoring" if hasattr(sys, "monitoring") else "sys.settrace"
        self._fh: Any = None
        self._context = ""
        self._lines: Set[Tuple[str, int]] = set()
        self._wanted: Dict[str, bool] = {}
        self._tool_id: Optional[int] = None
        self._previous: Optional[Callable[..., Any]] = None

    def wanted(self, filename: str) -> bool:
        """True for a file of the project: under a root, outside installed packages and
        environments."""
        known = self._wanted.get(filename)
        if known is None:
            absolute = (
                os.path.abspath(filename) if filename and not filename.startswith("<") else ""
            )
            known = (
                bool(absolute)
                and absolute.startswith(self.roots)
                and not any(part in _NOT_PROJECT for part in absolute.split(os.sep))
            )
            self._wanted[filename] = known
        return known

    def start(self) -> None:
        """Open the data file and start tracing. Raises OSError or ValueError when it cannot."""
        self._fh = open(self.path, "w", encoding="utf-8")
        self._fh.write(json.dumps({"tool": self.tool}) + "\n")
        self._fh.flush()
        if self.tool == "sys.monitoring":
            self._start_monitoring()
        else:
            self._previous = sys.gettrace()
            sys.settrace(self._global)
            threading.settrace(self._global)

    def switch(self, context: str) -> None:
        """Write what the current stretch ran and start recording for ``context`` (a nodeid or
        "")."""
        self._flush()
        self._context = context
        if self._tool_id is not None:
            _monitoring().restart_events()  # lines switched off in the last stretch count again

    def stop(self) -> None:
        """Stop tracing and write the last stretch; safe to call twice."""
        if self._fh is None:
            return
        if self._tool_id is not None:
            mon = _monitoring()
            mon.set_events(self._tool_id, 0)
            mon.register_callback(self._tool_id, mon.events.PY_START, None)
            mon.register_callback(self._tool_id, mon.events.LINE, None)
            mon.free_tool_id(self._tool_id)
            self._tool_id = None
        elif sys.gettrace() == self._global:
            sys.settrace(self._previous)
            threading.settrace(self._previous)  # type: ignore[arg-type,unused-ignore]
        self._flush()
        self._fh.close()
        self._fh = None

    def _flush(self) -> None:
        lines, self._lines = self._lines, set()
        if not lines or self._fh is None:
            return
        by_file: Dict[str, List[int]] = {}
        for filename, line in lines:
            by_file.setdefault(filename, []).append(line)
        record = {
            "test": self._context,
            "lines": {f: sorted(n) for f, n in sorted(by_file.items())},
        }
        try:
            self._fh.write(json.dumps(record) + "\n")
            self._fh.flush()  # a run killed later keeps every finished test's lines
        except (OSError, ValueError):
            pass

    # -- Python 3.12+: sys.monitoring ---------------------------------------------------

    def _start_monitoring(self) -> None:
        mon = _monitoring()
        for tool_id in (mon.COVERAGE_ID, 3, 4):  # 3 and 4 have no assigned user (PEP 669)
            try:
                mon.use_tool_id(tool_id, "repairloop")
            except ValueError:  # taken by another tool (a debugger, a profiler)
                continue
            self._tool_id = tool_id
            break
        else:
            raise ValueError("no free sys.monitoring tool id")
        mon.register_callback(self._tool_id, mon.events.PY_START, self._py_start)
        mon.register_callback(self._tool_id, mon.events.LINE, self._line)
        mon.set_events(self._tool_id, mon.events.PY_START)

    def _py_start(self, code: Any, offset: int) -> Any:
        mon = _monitoring()
        if self._tool_id is not None and self.wanted(code.co_filename):
            mon.set_local_events(self._tool_id, code, mon.events.LINE)
        return mon.DISABLE  # one look per code object (until the next restart_events)

    def _line(self, code: Any, line: int) -> Any:
        self._lines.add((code.co_filename, line))
        return _DISABLE

    # -- before 3.12: sys.settrace ------------------------------------------------------

    def _global(self, frame: Any, event: str, arg: Any) -> Optional[Callable[..., Any]]:
        if event == "call" and self.wanted(frame.f_code.co_filename):
            return self._local
        return None

    def _local(self, frame: Any, event: str, arg: Any) -> Optional[Callable[..., Any]]:
        if event == "line":
            self._lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local
