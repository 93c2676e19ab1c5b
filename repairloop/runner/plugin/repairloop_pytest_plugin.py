"""repairloop's result recorder, loaded into the project's own pytest process.

Loaded with ``PYTHONPATH=<this directory>`` and ``-p repairloop_pytest_plugin``
(repairloop sets both, and ``REPAIRLOOP_RESULTS``). It runs under the
project's Python and virtualenv, not repairloop's, so it imports nothing but
the standard library and pytest, and works on Python 3.8+ with pytest 7+
(DESIGN.md, "The pytest plugin"). It never imports repairloop.

It writes one JSON object per line to ``$REPAIRLOOP_RESULTS``, flushed per
record so that a run killed by a timeout still leaves everything up to the
kill (TECH-NOTES 5.4-5.5). Records, by ``kind``:

* ``session_start``: python and pytest versions, rootdir.
* ``collect``: a failed (or skipped) collector: nodeid, outcome, exc_type,
  message, frames, longrepr.
* ``collected``: number of test items after collection.
* ``start``: a test began (nodeid): names the test a kill interrupted.
* ``finish``: a test's phases (teardown included) are all done (nodeid).
* ``test``: one phase report (the call phase, and any phase that did not
  pass): nodeid, when, outcome (passed, failed, error, skipped, xfailed,
  xpassed; a setup/teardown failure is ``error``), duration (seconds),
  exc_type, exc_module, message, frames ``[path, line, function]`` outermost
  first with absolute paths, causes (``module.Type: message`` of the
  exceptions it was raised from, outermost first), endpoint (``host:port`` a
  failed connection tried), output (tail of captured output), longrepr (tail).
* ``coverage``: whether per-test coverage was recorded, and its data file.
* ``session``: exitstatus and the number of tests collected.

When ``REPAIRLOOP_COVERAGE_SOURCE`` (directories separated by os.pathsep) and
``REPAIRLOOP_COVERAGE_FILE`` are set and coverage.py is importable, line
coverage is recorded with one dynamic context per test: the test's nodeid.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import traceback
from typing import Any, Dict, List

import pytest

RESULTS_ENV = "REPAIRLOOP_RESULTS"
COVERAGE_SOURCE_ENV = "REPAIRLOOP_COVERAGE_SOURCE"
COVERAGE_FILE_ENV = "REPAIRLOOP_COVERAGE_FILE"
PER_TEST_TIMEOUT_ENV = "REPAIRLOOP_PER_TEST_TIMEOUT"


class Timeout(Exception):
    """Raised inside a test that ran past the per-test timeout (classified as ``timeout``, or as
    ``logic`` when it stopped inside the code under test: a loop that does not end)."""


class _PerTestTimer:
    """Fails one test with ``Timeout`` after ``seconds`` (SIGALRM: POSIX main thread only)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        def alarm(signum: int, frame: Any) -> None:
            raise Timeout(f"the test ran past the per-test timeout of {self.seconds:g} s")

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
OUTPUT_TAIL = 2000  # characters of captured output kept per failing test
LONGREPR_TAIL = 4000  # characters of pytest's failure text kept per record
MESSAGE_LIMIT = 2000  # characters of an exception message
FRAME_LIMIT = 60  # frames kept per exception (outermost 10, innermost 50)
_EXC_ATTR = "repairloop_exc"  # attribute carrying our exception summary on a report
# "E   SomeError: message"; the suffix keeps "E   Expected: 3" from reading as a type.
_E_LINE = re.compile(
    r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt|Failed|Failure|Timeout)):"
    r"\s?(.*)$"
)


def _internal_dirs() -> List[str]:
    """pytest's and pluggy's own directories: their frames are machinery, not the project."""
    dirs = []
    for name in ("_pytest", "pluggy", "importlib"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return dirs


def _frames(tb: Any) -> List[List[Any]]:
    """``[path, line, function]`` for each traceback entry outside pytest's machinery."""
    internal = _internal_dirs()
    frames: List[List[Any]] = []
    for frame, lineno in traceback.walk_tb(tb):
        path = frame.f_code.co_filename
        if path.startswith("<frozen importlib"):
            continue  # import machinery; a frozen stdlib module such as "<frozen os>" is kept
        if not path.startswith("<"):
            path = os.path.abspath(path)
            if any(path.startswith(prefix) for prefix in internal):
                continue
        frames.append([path, lineno, frame.f_code.co_name])
    if len(frames) > FRAME_LIMIT:
        frames = frames[:10] + frames[-(FRAME_LIMIT - 10) :]
    return frames


def _text(value: Any, limit: int) -> str:
    """``str(value)`` capped at ``limit`` characters; never raises."""
    try:
        text = str(value)
    except Exception as error:  # a broken __str__ must not break the run
        text = f"<unprintable {type(value).__name__}: {type(error).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first (at most 8)."""
    chain: List[BaseException] = []
    current: Any = exc
    while current is not None and len(chain) < 8 and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return chain


def _endpoint(chain: List[BaseException]) -> str:
    """``host:port`` a failed connection tried, from the locals of the frames that tried it ("" if unknown).

    Only for a chain with an OSError (refused, reset, name resolution,
    unreachable): the message of ``socket.connect`` names no address.
    """
    if not any(isinstance(e, OSError) for e in chain):
        return ""
    for exc in reversed(chain):  # the innermost exception is nearest the socket
        frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
        for frame in reversed(frames):
            found = _address_in(frame.f_locals)
            if found:
                return found
    return ""


def _address_in(names: Dict[str, Any]) -> str:
    for key in ("address", "sa", "socket_address", "addr", "sockaddr"):
        value = names.get(key)
        if isinstance(value, tuple) and len(value) >= 2 and isinstance(value[0], str) and isinstance(value[1], int):
            return f"{value[0]}:{value[1]}"
    host = names.get("host") or names.get("hostname")
    port = names.get("port")
    if isinstance(host, str) and host and isinstance(port, int):
        return f"{host}:{port}"
    return ""


def _describe(exc: BaseException) -> Dict[str, Any]:
    """exc_type, message and frames of one exception (the cause, for collection errors).

    ``causes`` names the exceptions it was raised from (``__cause__``, else
    ``__context__``), outermost first; ``endpoint`` is the address a failed
    connection tried, when the frames hold it.
    """
    cause = exc.__cause__
    if type(exc).__name__ == "CollectError" and cause is not None:
        exc = cause  # pytest wraps import and syntax errors of test modules
    frames = _frames(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        # The broken file never appears as a frame: it failed to compile.
        frames.append([os.path.abspath(exc.filename), exc.lineno or 0, ""])
    chain = _chain(exc)
    summary: Dict[str, Any] = {
        "exc_type": type(exc).__name__,
        "exc_module": type(exc).__module__,
        "message": _text(exc, MESSAGE_LIMIT),
        "frames": frames,
        "causes": [f"{type(e).__module__}.{type(e).__name__}: {_text(e, 300)}" for e in chain[1:]],
    }
    try:
        summary["endpoint"] = _endpoint(chain)
    except Exception:  # locals of odd frames must not break the recording
        pass
    return summary


def _from_longrepr(report: Any) -> Dict[str, Any]:
    """exc_type and message from the last ``E   Type: message`` line, when no exception was seen."""
    longrepr = report.longrepr
    errorstring = getattr(longrepr, "errorstring", None)  # FixtureLookupErrorRepr
    if errorstring:
        filename = getattr(longrepr, "filename", None)
        frames = []
        if filename:  # the test that asked for the fixture (firstlineno is 0-based)
            frames.append([os.path.abspath(str(filename)), longrepr.firstlineno + 1, ""])
        message = _text(errorstring, MESSAGE_LIMIT).split("\n")[0]
        return {"exc_type": "FixtureLookupError", "message": message, "frames": frames}
    for line in reversed(_text(longrepr, 10 * LONGREPR_TAIL).splitlines()):
        match = _E_LINE.match(line)
        if match:
            exc_type = match.group(1).split(".")[-1]
            return {"exc_type": exc_type, "message": match.group(2), "frames": []}
    return {}


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
        return _text(report.wasxfail, MESSAGE_LIMIT)
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return _text(longrepr[2], MESSAGE_LIMIT)
    return ""


def _output_tail(report: Any) -> str:
    sections = [(t, c) for t, c in report.sections if t.startswith("Captured")]
    parts = [f"--- {title} ---\n{content}" for title, content in sections]
    text = "\n".join(parts)
    return text[-OUTPUT_TAIL:]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """Attach the exception's type, message and frames to a failing report.

    The report alone has only pytest's rendering; the exception itself is here.
    """
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is not None and report.failed:
        try:
            summary = _describe(excinfo.value)
            if getattr(report.longrepr, "errorstring", None) or not summary["message"]:
                # FixtureLookupError's str() is its raw args; pytest's repr has the real text.
                fallback = _from_longrepr(report)
                summary["message"] = fallback.get("message", summary["message"])
                summary["frames"] = summary["frames"] or fallback.get("frames", [])
            setattr(report, _EXC_ATTR, summary)
        except Exception:  # recording must never change the test run
            pass


def pytest_exception_interact(node: Any, call: Any, report: Any) -> None:
    """Collection errors: keep the real exception (called before pytest_collectreport)."""
    if getattr(report, "when", None) == "collect" and call.excinfo is not None:
        try:
            setattr(report, _EXC_ATTR, _describe(call.excinfo.value))
        except Exception:
            pass


def pytest_configure(config: Any) -> None:
    """Start recording when repairloop asked for it (and not in an xdist worker)."""
    path = os.environ.pop(RESULTS_ENV, None)  # popped: a nested pytest must not write here
    source = os.environ.pop(COVERAGE_SOURCE_ENV, None)
    data_file = os.environ.pop(COVERAGE_FILE_ENV, None)
    per_test = os.environ.pop(PER_TEST_TIMEOUT_ENV, None)
    if per_test and hasattr(signal, "setitimer"):
        config.pluginmanager.register(_PerTestTimer(float(per_test)), "repairloop-per-test-timeout")
    if not path or hasattr(config, "workerinput"):
        return
    try:
        recorder = _Recorder(path)
    except OSError as error:  # no results is better than breaking the project's test run
        sys.stderr.write(f"repairloop_pytest_plugin: cannot write {path}: {error}\n")
        return
    config.pluginmanager.register(recorder, "repairloop-recorder")
    if source and data_file:
        recorder.start_coverage([d for d in source.split(os.pathsep) if d], data_file)


class _Recorder:
    """Writes the records; one instance per pytest session that repairloop started."""

    def __init__(self, path: str) -> None:
        self._fh = open(path, "a", encoding="utf-8")
        self._cov: Any = None

    def emit(self, record: Dict[str, Any]) -> None:
        # ensure_ascii keeps undecodable output (lone surrogates) writable; one flush per
        # record so a kill loses at most the line being written.
        try:
            self._fh.write(json.dumps(record, default=str) + "\n")
            self._fh.flush()
        except (OSError, ValueError):  # disk full, or closed by an odd teardown order
            pass

    def start_coverage(self, source: List[str], data_file: str) -> None:
        try:
            import coverage  # optional: the project's environment may not have it

            # config_file=False: the project's settings (parallel, dynamic_context) would
            # rename the data file or fight our per-test contexts.
            cov = coverage.Coverage(
                data_file=data_file, source=source, branch=False, config_file=False
            )
            cov.start()
        except Exception as error:
            self.emit({"kind": "coverage", "available": False, "error": _text(error, 500)})
            return
        self._cov = cov

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
            "longrepr": _text(report.longrepr, 100 * LONGREPR_TAIL)[-LONGREPR_TAIL:],
        }
        if report.failed:
            record.update(getattr(report, _EXC_ATTR, None) or _from_longrepr(report))
        else:
            record["message"] = _skip_reason(report)
        self.emit(record)

    def pytest_collection_finish(self, session: Any) -> None:
        self.emit({"kind": "collected", "count": len(session.items)})

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self._cov is not None:
            self._cov.switch_context(nodeid)
        self.emit({"kind": "start", "nodeid": nodeid})

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
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
        if report.failed:
            record.update(getattr(report, _EXC_ATTR, None) or _from_longrepr(report))
            record["output"] = _output_tail(report)
            record["longrepr"] = _text(report.longrepr, 100 * LONGREPR_TAIL)[-LONGREPR_TAIL:]
            if not record.get("message"):  # e.g. "[XPASS(strict)] reason": no exception at all
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
        cov, self._cov = self._cov, None
        if cov is None:
            return
        try:
            cov.stop()
            cov.save()
            self.emit({"kind": "coverage", "available": True, "file": cov.config.data_file})
        except Exception as error:
            self.emit({"kind": "coverage", "available": False, "error": _text(error, 500)})

    def pytest_unconfigure(self, config: Any) -> None:
        self._stop_coverage()
        self._fh.close()
