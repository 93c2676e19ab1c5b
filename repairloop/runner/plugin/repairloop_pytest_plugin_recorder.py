"""The recorder: one JSON line per record, flushed per record (part of the pytest plugin).

Runs in the project's own pytest process with the plugin (see
``repairloop_pytest_plugin``, whose docstring lists the records): standard
library and pytest only, coverage.py imported optionally (without it, the
lines each test runs are traced by ``repairloop_pytest_plugin_trace``).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

import pytest
from repairloop_pytest_plugin_describe import LONGREPR_TAIL, MESSAGE_LIMIT, capped, from_longrepr
from repairloop_pytest_plugin_doctest import DOCTEST_ATTR
from repairloop_pytest_plugin_trace import LineTracer, lines_file

OUTPUT_TAIL = 2000  # characters of captured output kept per failing test
EXC_ATTR = "repairloop_exc"  # attribute carrying the exception summary on a report


def _outcome(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        if report.skipped:
            return "xfailed"
        if report.passed:
            return "xpassed"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "skipped" if report.skipped else "passed"


def _skip_reason(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return capped(report.wasxfail, MESSAGE_LIMIT)
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return capped(longrepr[2], MESSAGE_LIMIT)
    return ""


def _output_tail(report: Any) -> str:
    sections = [(t, c) for t, c in report.sections if t.startswith("Captured")]
    parts = [f"--- {title} ---\n{content}" for title, content in sections]
    text = "\n".join(parts)
    return text[-OUTPUT_TAIL:]


class Recorder:
    """Writes the records; one instance per pytest session that repairloop started."""

    def __init__(self, path: str, pipe: Optional[int] = None) -> None:
        """Records go to the results ``pipe`` when repairloop handed one over (the first record
        says so, and the file at ``path`` is then not written), else to ``path``."""
        if pipe is not None:
            self._fh = os.fdopen(pipe, "w", encoding="utf-8")
            self.emit({"kind": "channel", "pipe": True})
        else:
            self._fh = open(path, "a", encoding="utf-8")
        self._cov: Any = None
        self._tracer: Optional[LineTracer] = None  # when coverage.py is not importable

    def reopen(self, path: str) -> None:
        """Write to ``path`` from now on (a warm server's child: one results file per request)."""
        self._fh.close()
        self._fh = open(path, "a", encoding="utf-8")

    def emit(self, record: Dict[str, Any]) -> None:
        # ensure_ascii keeps undecodable output (lone surrogates) writable; one flush per
        # record so a kill loses at most the line being written.
        try:
            self._fh.write(json.dumps(record, default=str) + "\n")
            self._fh.flush()
        except (OSError, ValueError):  # disk full, or closed by an odd teardown order
            pass

    def start_coverage(self, source: List[str], data_file: str) -> None:
        """Per-test line data: coverage.py when the project's environment has it, else our own
        tracer."""
        try:
            import coverage  # optional: the project's environment may not have it

            # config_file=False: the project's settings (parallel, dynamic_context) would
            # rename the data file or fight our per-test contexts.
            cov = coverage.Coverage(
                data_file=data_file, source=source, branch=False, config_file=False
            )
            cov.start()
        except Exception as error:
            self._start_tracer(source, data_file, error)
            return
        self._cov = cov

    def _start_tracer(self, source: List[str], data_file: str, why: BaseException) -> None:
        try:
            tracer = LineTracer(source, lines_file(data_file))
            tracer.start()
        except Exception as error:
            self.emit(
                {
                    "kind": "coverage",
                    "available": False,
                    "error": f"coverage.py: {capped(why, 300)}; line tracer: {capped(error, 300)}",
                }
            )
            return
        self._tracer = tracer

    def pytest_sessionstart(self, session: Any) -> None:
        self.emit(
            {
                "kind": "session_start",
                "python": sys.version.split()[0],
                "pytest": pytest.__version__,
                "rootdir": str(getattr(session.config, "rootpath", "")),
            }
        )

    def pytest_collectreport(self, report: Any) -> None:
        if not (report.failed or report.skipped):
            return
        record: Dict[str, Any] = {
            "kind": "collect",
            "nodeid": report.nodeid,
            "outcome": "error" if report.failed else "skipped",
            "longrepr": capped(report.longrepr, 100 * LONGREPR_TAIL)[-LONGREPR_TAIL:],
        }
        if report.failed:
            record.update(getattr(report, EXC_ATTR, None) or from_longrepr(report))
        else:
            record["message"] = _skip_reason(report)
        self.emit(record)

    def pytest_collection_finish(self, session: Any) -> None:
        self.emit({"kind": "collected", "count": len(session.items)})

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self._cov is not None:
            self._cov.switch_context(nodeid)
        if self._tracer is not None:
            self._tracer.switch(nodeid)
        self.emit({"kind": "start", "nodeid": nodeid})

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self._tracer is not None:
            self._tracer.switch("")  # between tests: module fixtures, the next module's import
        # With "start", names a test whose teardown never ended when the run is killed.
        self.emit({"kind": "finish", "nodeid": nodeid})

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and report.passed:
            return
        outcome = _outcome(report)
        record: Dict[str, Any] = {
            "kind": "test",
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": outcome,
            "duration": round(float(report.duration), 6),
        }
        if getattr(report, DOCTEST_ATTR, None):
            record["doctest"] = getattr(report, DOCTEST_ATTR)
        if report.failed:
            record.update(getattr(report, EXC_ATTR, None) or from_longrepr(report))
            record["output"] = _output_tail(report)
            record["longrepr"] = capped(report.longrepr, 100 * LONGREPR_TAIL)[-LONGREPR_TAIL:]
            if not record.get("message") and not record.get(
                "exc_type"
            ):  # "[XPASS(strict)] reason": no exception
                record["message"] = record["longrepr"].strip().split("\n")[0][:MESSAGE_LIMIT]
        elif outcome in ("skipped", "xfailed", "xpassed"):
            record["message"] = _skip_reason(report)
        self.emit(record)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self._stop_coverage()
        self.emit(
            {
                "kind": "session",
                "exitstatus": int(exitstatus),
                "collected": int(getattr(session, "testscollected", 0) or 0),
            }
        )

    def _stop_coverage(self) -> None:
        tracer, self._tracer = self._tracer, None
        if tracer is not None:
            try:
                tracer.stop()
                self.emit(
                    {
                        "kind": "coverage",
                        "available": True,
                        "file": tracer.path,
                        "tool": tracer.tool,
                    }
                )
            except Exception as error:
                self.emit({"kind": "coverage", "available": False, "error": capped(error, 500)})
        cov, self._cov = self._cov, None
        if cov is None:
            return
        try:
            cov.stop()
            cov.save()
            self.emit(
                {
                    "kind": "coverage",
                    "available": True,
                    "file": cov.config.data_file,
                    "tool": "coverage.py",
                }
            )
        except Exception as error:
            self.emit({"kind": "coverage", "available": False, "error": capped(error, 500)})

    def pytest_unconfigure(self, config: Any) -> None:
        self._stop_coverage()
        self._fh.close()
