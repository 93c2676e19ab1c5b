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
  failed connection tried), output (tail of captured output), longrepr (tail),
  doctest (``module`` or ``text`` for a doctest item; its failure is described
  by the failing example: ``repairloop_pytest_plugin_doctest``).
* ``coverage``: whether per-test coverage was recorded, and its data file.
* ``session``: exitstatus and the number of tests collected.

When ``REPAIRLOOP_COVERAGE_SOURCE`` (directories separated by os.pathsep) and
``REPAIRLOOP_COVERAGE_FILE`` are set, the lines each test runs are recorded:
with coverage.py when it is importable (one dynamic context per test, its
nodeid), else with the plugin's own tracer (``sys.monitoring`` on Python 3.12+,
``sys.settrace`` before) into ``repairloop-lines.jsonl`` beside that file.

The plugin is this module and its siblings named ``repairloop_pytest_plugin_*``
(what a failure was: ``_describe``; writing the records: ``_recorder``; tracing
lines without coverage.py: ``_trace``), all on
the same ``PYTHONPATH`` entry; the shared prefix keeps their frames recognisable
as the plugin's (classify/rules.py).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, Optional

import pytest
from repairloop_pytest_plugin_channel import (
    JUNIT_PIPE_ENV,
    RESULTS_PIPE_ENV,
    WitnessSender,
    inherited_pipe,
)
from repairloop_pytest_plugin_describe import describe, from_longrepr
from repairloop_pytest_plugin_doctest import DOCTEST_ATTR, doctest_kind
from repairloop_pytest_plugin_recorder import EXC_ATTR, Recorder
from repairloop_pytest_plugin_reload import trace_imports
from repairloop_pytest_plugin_warm import WARM_FD_ENV, WarmServer

RESULTS_ENV = "REPAIRLOOP_RESULTS"
CACHE_DIR_ENV = "REPAIRLOOP_CACHE_DIR"
JUNIT_WITNESS_ENV = "REPAIRLOOP_JUNIT_WITNESS"
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
        started = time.process_time()

        def alarm(signum: int, frame: Any) -> None:
            # The CPU time the process used tells computing (a loop that does not end) from
            # waiting (a socket, a lock, a sleep), wherever the alarm happened to land.
            used = time.process_time() - started
            raise Timeout(
                f"the test ran past the per-test timeout of {self.seconds:g} s "
                f"(it used {used:.2f} s of CPU time)"
            )

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """Attach the exception's type, message and frames to a failing report.

    The report alone has only pytest's rendering; the exception itself is here.
    """
    outcome = yield
    report = outcome.get_result()
    try:
        kind = doctest_kind(item)
        if kind:
            setattr(report, DOCTEST_ATTR, kind)
    except Exception:  # recording must never change the test run
        pass
    excinfo = call.excinfo
    if excinfo is not None and report.failed:
        try:
            summary = describe(excinfo.value)
            if getattr(report.longrepr, "errorstring", None) or not summary["message"]:
                # FixtureLookupError's str() is its raw args; pytest's repr has the real text.
                fallback = from_longrepr(report)
                summary["message"] = fallback.get("message", summary["message"])
                summary["frames"] = summary["frames"] or fallback.get("frames", [])
            setattr(report, EXC_ATTR, summary)
        except Exception:  # recording must never change the test run
            pass


def pytest_exception_interact(node: Any, call: Any, report: Any) -> None:
    """Collection errors: keep the real exception (called before pytest_collectreport)."""
    if getattr(report, "when", None) == "collect" and call.excinfo is not None:
        try:
            setattr(report, EXC_ATTR, describe(call.excinfo.value))
        except Exception:
            pass


@pytest.hookimpl(tryfirst=True)  # before the cache plugin's own (tryfirst, registered earlier)
def pytest_configure(config: Any) -> None:
    """Point pytest's cache where repairloop asked; start recording when it asked for it (and not in
    an xdist worker)."""
    _point_cache(config, os.environ.get(CACHE_DIR_ENV))
    # popped: a nested pytest must not write here, and code under test cannot read them
    results_pipe = inherited_pipe(os.environ.pop(RESULTS_PIPE_ENV, None))
    junit_pipe = inherited_pipe(os.environ.pop(JUNIT_PIPE_ENV, None))
    _write_junit_witness(config, os.environ.pop(JUNIT_WITNESS_ENV, None), junit_pipe)
    path = os.environ.pop(RESULTS_ENV, None)
    source = os.environ.pop(COVERAGE_SOURCE_ENV, None)
    data_file = os.environ.pop(COVERAGE_FILE_ENV, None)
    per_test = os.environ.pop(PER_TEST_TIMEOUT_ENV, None)
    if per_test and hasattr(signal, "setitimer"):
        config.pluginmanager.register(_PerTestTimer(float(per_test)), "repairloop-per-test-timeout")
    if not path or hasattr(config, "workerinput"):
        return
    try:
        recorder = Recorder(path, results_pipe)
    except OSError as error:  # no results is better than breaking the project's test run
        sys.stderr.write(f"repairloop_pytest_plugin: cannot write {path}: {error}\n")
        return
    config.pluginmanager.register(recorder, "repairloop-recorder")
    if source and data_file:
        recorder.start_coverage([d for d in source.split(os.pathsep) if d], data_file)
    warm = os.environ.pop(WARM_FD_ENV, None)
    if warm:
        config.pluginmanager.register(
            WarmServer(config, int(warm), recorder), "repairloop-warm-server"
        )


def _write_junit_witness(config: Any, path: Any, pipe: Optional[int]) -> None:
    """Have pytest's own JUnit XML writer (``_pytest.junitxml.LogXML``, its defaults) record the
    run to ``path``: the run's second witness (``runner.crosscheck``).

    Registered here rather than asked for with ``--junitxml``, an option the user's configuration
    could reject (``-p no:junitxml`` on the command line removes it: exit 4) or silently drop
    (``-p no:junitxml`` in ``addopts`` unregisters the writer after the option is parsed), and
    independent of a ``--junitxml`` of the user's own, which still writes where they asked. Not
    in an xdist worker: the controller sees every report, as for ``--junitxml``. With a witness
    ``pipe``, pytest writes into a private file whose bytes the plugin sends down the pipe when
    the session is over (``WitnessSender``).
    """
    if not path or hasattr(config, "workerinput"):
        if pipe is not None:
            os.close(pipe)
        return
    from _pytest.junitxml import LogXML

    if pipe is not None:
        sender = WitnessSender(pipe)
        config.pluginmanager.register(sender, "repairloop-junit-sender")
        path = sender.path
    config.pluginmanager.register(LogXML(path, None), "repairloop-junit-witness")


def _point_cache(config: Any, directory: Any) -> None:
    """Make ``directory`` the cache plugin's ``cache_dir``, as ``-o cache_dir=...`` would, without
    adding an option to the user's command that their own configuration could reject (an unknown
    option where ``-p no:cacheprovider`` disables the plugin: an error under --strict-config or
    -W error). Nothing when the plugin is disabled, the user set ``cache_dir`` themselves with
    ``-o``, or this pytest keeps its configuration values elsewhere (the cache then goes where the
    project says)."""
    cache = getattr(config, "_inicache", None)
    if not directory or not isinstance(cache, dict):
        return
    if config.pluginmanager.get_plugin("cacheprovider") is None:
        return
    if any(str(o).startswith("cache_dir=") for o in getattr(config, "_override_ini", ()) or ()):
        return
    cache["cache_dir"] = str(directory)


if os.environ.get(WARM_FD_ENV):
    # A warm server must know which functions ran while the suite was imported, the
    # conftest files included, which pytest loads before any hook of ours runs: so the
    # tracing starts when pytest imports this plugin (-p), before the conftests.
    trace_imports()
