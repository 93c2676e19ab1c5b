"""A run that ended without per-test failures to show: one ``<session>`` failure.

The exit code, signal and timeout decide first (pytest's exit codes,
TECH-NOTES 5.3: 3 internal error, 4 usage or conftest error with no results,
5 no tests collected; shells report 127 command not found, 126 not
executable, 128+N killed by signal N), then the per-result text rules run on
the combined output, e.g. a plain Python traceback from another test runner.
"""

from __future__ import annotations

import re
import signal as signal_mod
from dataclasses import replace
from pathlib import Path
from typing import Callable, FrozenSet, Optional, Tuple

from repairloop.classify.evidence import default_location, parse_frames, run_facts
from repairloop.classify.rules import classify_result
from repairloop.types import (
    Failure,
    FailureKind,
    InterpreterQuery,
    TestOutcome,
    TestReport,
    TestResult,
    relative_to,
    root_forms,
)

SESSION_ID = "<session>"

# (predicate, kind, message, hint); message may use {detail} and {signal}.
_SessionRule = Tuple[Callable[[TestReport], bool], FailureKind, str, str]

# Options that plugins add: rejected as unknown, they mean the plugin is not installed (PyPI names).
_PLUGIN_OPTIONS = {
    "--cov": "pytest-cov",
    "--reruns": "pytest-rerunfailures",
    "--only-rerun": "pytest-rerunfailures",
    "--timeout": "pytest-timeout",
    "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist",
    "--html": "pytest-html",
    "--benchmark": "pytest-benchmark",
    "--randomly": "pytest-randomly",
    "--asyncio-mode": "pytest-asyncio",
    "--ds": "pytest-django",
    "--reuse-db": "pytest-django",
    "--mypy": "pytest-mypy",
    "--flake8": "pytest-flake8",
    "--json-report": "pytest-json-report",
    "--alluredir": "allure-pytest",
    "--count": "pytest-repeat",
    "--hypothesis": "hypothesis",
    "--snapshot-update": "syrupy",
    "--splinter": "pytest-splinter",
    "--driver": "pytest-selenium",
}
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")
# The interpreter's own words for `python -m NAME` with no such module (before any test code runs).
_NO_MODULE = re.compile(
    r"(?m)^\S*python[\w.]*: ((?:No module named \S+|Error while finding module specification .*))$"
)


def _plugin_hint(output: str) -> str:
    """ "; pip install <plugin>" when the rejected options belong to a known plugin, else ""."""
    found = _UNRECOGNIZED.search(output)
    for arg in found.group(1).split() if found else ():
        option = arg.split("=")[0]
        for prefix, plugin in _PLUGIN_OPTIONS.items():
            if option == prefix or (prefix.startswith("--") and option.startswith(prefix + "-")):
                return f"; {option} comes from a plugin that is not installed: pip install {plugin}"
    return ""


def signal_of(report: TestReport) -> Optional[int]:
    """The signal that killed the run: ``report.signal``, a negative exit code, or a shell's
    128+N."""
    if report.signal:
        return report.signal
    code = report.exit_code
    if code is not None and code < 0:
        return -code
    if code is not None and 128 < code < 160:
        return code - 128
    return None


def _signal_name(number: Optional[int]) -> str:
    if number is None:
        return "a signal"
    try:
        return signal_mod.Signals(number).name
    except ValueError:
        return f"signal {number}"


_SESSION_RULES: Tuple[_SessionRule, ...] = (
    (
        lambda r: r.timed_out,
        FailureKind.TIMEOUT,
        "the test run exceeded its time limit and was killed",
        "raise --test-timeout, or find the hanging test (pytest-timeout names it)",
    ),
    (
        lambda r: bool(run_facts(r).time_limit),
        FailureKind.TIMEOUT,
        "the test command stopped itself at its own time limit ({time_limit})",
        "find the test that hangs (the failures name the one that was running), or raise the "
        "command's time limit",
    ),
    (
        lambda r: r.exit_code == 127 or "command not found" in r.output,
        FailureKind.ENVIRONMENT,
        "the test command was not found: {detail}",
        "check --test-cmd and that its program is installed and on PATH; the command runs in an "
        "isolated copy of the project, so give a program in a git-ignored directory (a .venv) by "
        "its absolute path",
    ),
    (
        lambda r: r.exit_code == 1 and bool(_NO_MODULE.search(r.output)),
        FailureKind.ENVIRONMENT,
        "the test command's module was not found: {module}",
        "check --test-cmd, and that the module is installed in the environment that runs it",
    ),
    (
        lambda r: r.exit_code == 126,
        FailureKind.ENVIRONMENT,
        "the test command could not be executed (permission denied): {detail}",
        "make the test command executable",
    ),
    (
        lambda r: (
            "Fatal Python error: Segmentation fault" in r.output
            or signal_of(r) == signal_mod.SIGSEGV
        ),
        FailureKind.ENVIRONMENT,
        "the test process crashed (segmentation fault)",
        "a native extension crashed: reinstall or upgrade it",
    ),
    (
        lambda r: "MemoryError" in r.output and r.exit_code != 0,
        FailureKind.ENVIRONMENT,
        "the test process ran out of memory",
        "free memory or raise the memory limit",
    ),
    (
        lambda r: signal_of(r) is not None,
        FailureKind.ENVIRONMENT,
        "the test process was killed by {signal}",
        "something outside the tests killed them (SIGKILL often means out of memory)",
    ),
    (
        lambda r: r.exit_code == 4,
        FailureKind.TEST_CONFIG,
        "pytest rejected its command line or configuration: {detail}",
        "check the test command's options, addopts, plugins and markers{plugin}",
    ),
    (
        lambda r: r.exit_code == 5,
        FailureKind.TEST_CONFIG,
        "no tests were collected",
        "check testpaths, test file names and the paths in the test command",
    ),
    (
        lambda r: r.exit_code == 3,
        FailureKind.TEST_CONFIG,
        "pytest hit an internal error: {detail}",
        "a plugin or conftest hook raised: see the INTERNALERROR lines",
    ),
    (
        lambda r: r.exit_code == 0,
        FailureKind.TEST_CONFIG,
        "the test command succeeded but ran no tests",
        "check that the test command runs the project's tests",
    ),
)


def _detail(output: str) -> str:
    """The most telling line of ``output``: the last error line, else the last line (300 chars)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("E ") and len(line) > 3:
            return line[2:].strip()[:300]
        if (
            ": error: " in line
            or line.startswith(("INTERNALERROR>", "error:"))
            or (line.startswith("ERROR:") and not line.startswith("ERROR: usage"))
        ):
            return line[:300]
    return lines[-1][:300] if lines else "(no output)"


def session_failure(
    report: TestReport,
    project: Path,
    interpreter: Optional[InterpreterQuery],
    modules: Callable[[], FrozenSet[str]],
) -> Failure:
    """The ``<session>`` failure of ``report``: exit code and signal rules, then the text rules."""
    if report.exit_code == 4 and "while loading conftest" in report.output:
        return _conftest_failure(report, project, interpreter, modules)
    for matches, kind, message, hint in _SESSION_RULES:
        if matches(report):
            module = _NO_MODULE.search(report.output)
            text = message.format(
                detail=_detail(report.output),
                signal=_signal_name(signal_of(report)),
                time_limit=run_facts(report).time_limit,
                module=module.group(1) if module else "",
            )
            hint = hint.format(plugin=_plugin_hint(report.output)) if "{plugin}" in hint else hint
            frames = tuple(
                replace(f, path=relative_to(f.path, root_forms(project)) or f.path)
                for f in parse_frames(report.output)
            )
            return Failure(
                SESSION_ID,
                kind,
                False,
                text,
                location=default_location(frames),
                hint=hint,
                frames=frames,
            )
    pseudo = TestResult(SESSION_ID, TestOutcome.ERROR, phase="session", longrepr=report.output)
    failure = classify_result(pseudo, project, interpreter, modules)
    if failure.kind is FailureKind.LOGIC and not failure.exc_type:
        return replace(
            failure,
            message=f"the test command failed (exit {report.exit_code}) with no "
            f"per-test results: {_detail(report.output)}",
        )
    return failure


def _conftest_failure(
    report: TestReport,
    project: Path,
    interpreter: Optional[InterpreterQuery],
    modules: Callable[[], FrozenSet[str]],
) -> Failure:
    """A conftest.py that failed to load (pytest exit 4): classified by its cause, like any import.

    A third-party module it imports that is not installed is a dependency, a
    syntax error is syntax, the project's own package not importable is
    test_config; anything else stays test_config ("fix the conftest").
    """
    start = report.output.find("while loading conftest")
    pseudo = TestResult(
        SESSION_ID, TestOutcome.ERROR, phase="session", longrepr=report.output[max(start - 40, 0) :]
    )
    failure = classify_result(pseudo, project, interpreter, modules)
    if failure.kind is FailureKind.LOGIC and not failure.exc_type:
        return replace(
            failure,
            kind=FailureKind.TEST_CONFIG,
            retryable=False,
            message=f"a conftest.py failed to load: {_detail(report.output)}",
            hint="fix the conftest.py named in the output",
        )
    return replace(failure, message=f"a conftest.py failed to load: {failure.message}")
