"""The per-result rule table: first match wins (DESIGN.md, "Failure kinds").

Order: environment, timeout, test_config, syntax, imports (dependency, or a
project module: logic / test_config), logic. Logic matches everything, so
unknown evidence is always something the repair loop may try.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Callable, FrozenSet, Optional, Tuple

from repairloop.classify.evidence import (
    PYTHON_FRAME,
    Evidence,
    make_evidence,
    relative,
    source_line,
)
from repairloop.classify.packages import distribution_for, probe_module
from repairloop.types import Failure, FailureKind, TestResult, is_project_path

Rule = Callable[[Evidence], Optional[Failure]]

# The file of the runner's pytest plugin, whose SIGALRM handler raises the per-test Timeout.
PER_TEST_TIMEOUT_HANDLER = "repairloop_pytest_plugin"

SYNTAX_TYPES = frozenset({"SyntaxError", "IndentationError", "TabError"})
_SYNTAX_LINE = re.compile(r"^(?:E\s+)?(SyntaxError|IndentationError|TabError):", re.M)
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
_NO_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_FIXTURE = re.compile(r"fixture '(\w+)' not found")
_AVAILABLE = re.compile(r"available fixtures: (.*)")
_MARKER = re.compile(r"'\w+' not found in `markers` configuration option")


def _environment(ev: Evidence) -> Optional[Failure]:
    if ev.exc_type == "MemoryError":
        return ev.failure(FailureKind.ENVIRONMENT, hint="the test ran out of memory: free memory or raise the limit")
    if ev.exc_type == "Crash":  # the runner's record of a test its dying process never reported
        return ev.failure(FailureKind.ENVIRONMENT, hint="the test process died (a signal, a crash in native "
                          "code, or os._exit): run this test alone to see how")
    return None


def _timeout(ev: Evidence) -> Optional[Failure]:
    # pytest-timeout's failure (TECH-NOTES 5.4): "Failed: Timeout (>1.0s) from pytest-timeout."
    # "Timeout" is also the runner's record of the test a whole-run timeout kill interrupted.
    if ev.exc_type != "Timeout" and "Timeout (>" not in ev.message:
        return None
    looping = _looping_in_code_under_test(ev)
    if looping is not None:
        return ev.failure(FailureKind.LOGIC, location=looping,
                          hint=f"the code under test was still running at {looping} when the per-test timeout "
                          "stopped it: a loop or recursion that does not end")
    return ev.failure(FailureKind.TIMEOUT, hint="the test exceeded its time limit: find the hang or raise the timeout")


def _looping_in_code_under_test(ev: Evidence) -> Optional[str]:
    """``path:line`` where a per-test timeout interrupted the project's own non-test code, else None.

    The innermost frame (after the timeout's own handler) decides: a test stopped
    while computing in the project's code is a logic fault (a bug that does not
    terminate: the loop repairs it); one stopped in a library, a system call, or
    the test file itself (waiting for a socket, a sleep) stays a timeout.
    """
    frames = [f for f in ev.frames if PER_TEST_TIMEOUT_HANDLER not in f.path]
    if not frames or ("per-test timeout" not in ev.message and "Timeout (>" not in ev.message):
        return None  # the whole run's kill: no traceback of where the test was
    inner = frames[-1]
    test_file = ev.result.test_id.split("::")[0]
    if not is_project_path(inner.path) or inner.path == test_file:
        return None
    return f"{inner.path}:{inner.line}"


def _test_config(ev: Evidence) -> Optional[Failure]:
    fixture = _FIXTURE.search(ev.text)
    if fixture:
        name = fixture.group(1)
        available = _AVAILABLE.search(ev.text)
        close = difflib.get_close_matches(name, available.group(1).split(", ") if available else [], n=1)
        hint = f"define fixture '{name}' in a conftest.py or fix the test's parameter name"
        hint += f" (did you mean '{close[0]}'?)" if close else ""
        return ev.failure(FailureKind.TEST_CONFIG, f"fixture '{name}' not found", hint)
    if "while loading conftest" in ev.text:
        return ev.failure(FailureKind.TEST_CONFIG, hint="fix the conftest.py named in the message")
    if _MARKER.search(ev.text):
        return ev.failure(FailureKind.TEST_CONFIG, hint="register the marker in [tool.pytest.ini_options] markers")
    return None


def _syntax(ev: Evidence) -> Optional[Failure]:
    if ev.exc_type not in SYNTAX_TYPES and not (ev.exc_type is None and _SYNTAX_LINE.search(ev.text)):
        return None
    # The runner's plugin appends the file that failed to compile as the last frame;
    # without it, the last `File "...", line N` of the text names it.
    where = PYTHON_FRAME.findall(ev.text)
    if ev.exc_type in SYNTAX_TYPES and ev.frames and not ev.frames[-1].function:
        path, line = ev.frames[-1].path, ev.frames[-1].line
    elif where:
        path, line = relative(where[-1][0], ev.project), int(where[-1][1])
    else:
        return ev.failure(FailureKind.SYNTAX, hint="fix the syntax error named in the message")
    if not is_project_path(path):
        package = _package_of(path)
        return ev.failure(FailureKind.DEPENDENCY, location=f"{path}:{line}",
                          hint=f"the installed package {package} does not parse under this Python: "
                          "install a version that supports it")
    source = source_line(ev.project / path, line)
    return ev.failure(FailureKind.SYNTAX, location=f"{path}:{line}",
                      hint=f"fix the syntax at {path}:{line}" + (f": {source}" if source else ""))


def _imports(ev: Evidence) -> Optional[Failure]:
    if ev.exc_type in ("ModuleNotFoundError", "ImportError", None):
        missing = _NO_MODULE.search(ev.message)
        if missing:
            return _missing_module(ev, missing.group(1))
        name = _CANNOT_IMPORT.search(ev.message)
        if name:
            return _missing_name(ev, name.group(2), name.group(1))
    attr = _NO_ATTRIBUTE.search(ev.message)
    if attr and ev.exc_type == "AttributeError":
        return _missing_name(ev, attr.group(1), attr.group(2))
    return None


def _logic(ev: Evidence) -> Optional[Failure]:
    return ev.failure(FailureKind.LOGIC)


RULES: Tuple[Rule, ...] = (_environment, _timeout, _test_config, _syntax, _imports, _logic)


def _tops(modules: FrozenSet[str]) -> FrozenSet[str]:
    return frozenset(m.split(".")[0] for m in modules)


def _missing_module(ev: Evidence, module: str) -> Failure:
    """``No module named 'module'``: a project module (logic, test_config) or a dependency."""
    modules, top = ev.modules(), module.split(".")[0]
    if module in _tops(modules):
        # The project's own top-level package is not importable: its source root is
        # not on the path. No code change fixes that.
        return ev.failure(FailureKind.TEST_CONFIG, f"the project's own module '{module}' is not importable",
                          hint=f"install the project (pip install -e .) or put the directory that holds "
                          f"'{module}' (e.g. src) on the test command's PYTHONPATH")
    close = difflib.get_close_matches(module, sorted(modules), n=1, cutoff=0.8)
    if top in _tops(modules):
        # A submodule of a project package: a misspelling or a missing file, which code fixes.
        return ev.failure(FailureKind.LOGIC,
                          hint=f"did you mean {close[0]}?" if close else f"the project has no module {module}")
    dist = distribution_for(module)
    note = f"provided by the PyPI distribution {dist}" if dist != top else "not installed"
    # A missing top-level name stays a dependency even when it resembles a project
    # module ("requests" and a local request.py): the hint says so, no loop starts on a guess.
    hint = f"pip install {dist}" + (f" (or did you mean the project's module {close[0]}?)" if close else "")
    return ev.failure(FailureKind.DEPENDENCY, f"No module named '{module}' ({note})", hint)


def _missing_name(ev: Evidence, owner: str, name: str) -> Failure:
    """``cannot import name`` / ``has no attribute`` on a project module (logic) or a package (dependency)."""
    modules = ev.modules()
    if owner.split(".")[0] in _tops(modules):
        close = difflib.get_close_matches(f"{owner}.{name}", sorted(modules), n=1, cutoff=0.8)
        return ev.failure(FailureKind.LOGIC, hint=f"did you mean {close[0]}?" if close else "")
    info = probe_module(owner.split(".")[0], ev.python)
    if not info.found:
        return ev.failure(FailureKind.LOGIC)
    dist = info.dist or distribution_for(owner)
    installed = f"{dist} {info.version}" if info.version else dist
    return ev.failure(
        FailureKind.DEPENDENCY, f"{ev.message} (the installed {installed} has no '{name}' in {owner})",
        hint=f"install the version of {dist} the code was written for (pip install '{dist}==<version>'), "
        f"or update the code to the API of {installed}",
    )


def _package_of(path: str) -> str:
    parts = Path(path).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].replace(".py", "")
    return path


def classify_result(result: TestResult, project: Path, python: Optional[str],
                    modules: Callable[[], FrozenSet[str]]) -> Failure:
    """The first rule of ``RULES`` that recognises ``result`` decides its kind."""
    ev = make_evidence(result, project, python, modules)
    for rule in RULES:
        failure = rule(ev)
        if failure is not None:
            return failure
    raise AssertionError("the logic rule matches everything")  # pragma: no cover
