"""The per-result rule table: first match wins (DESIGN.md, "Failure kinds").

Order: environment (memory, a dead test process or worker, a service that is
not reachable, an extension not built), timeout, test_config (fixtures,
markers), syntax, imports (dependency, or a project module: logic /
test_config; ``imports.py``), a conftest that failed for another reason
(test_config), logic. Logic matches everything, so unknown evidence is always
something the repair loop may try. Each rule reads the structured evidence
(exception type, the types it was raised from, frames) before any text.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Callable, FrozenSet, Optional, Tuple

from repairloop.classify import services
from repairloop.classify.evidence import (
    PYTHON_FRAME,
    FailureEvidence,
    RunFacts,
    make_evidence,
    source_line,
)
from repairloop.classify.host import host_rule
from repairloop.classify.import_rules import extension_rule, imports_rule, package_of
from repairloop.types import (
    DEFAULT_TEST_GLOBS,
    Failure,
    FailureKind,
    InterpreterQuery,
    TestResult,
    is_project_path,
    matches_globs,
    relative_to,
    root_forms,
)

Rule = Callable[[FailureEvidence], Optional[Failure]]

# The file of the runner's pytest plugin, whose SIGALRM handler raises the per-test Timeout.
PER_TEST_TIMEOUT_HANDLER = "repairloop_pytest_plugin"

SYNTAX_TYPES = frozenset({"SyntaxError", "IndentationError", "TabError"})
_SYNTAX_LINE = re.compile(r"^(?:E\s+)?(SyntaxError|IndentationError|TabError):", re.M)
_FIXTURE = re.compile(r"fixture '(\w+)' not found")
_AVAILABLE = re.compile(r"available fixtures: (.*)")
_MARKER = re.compile(r"'\w+' not found in `markers` configuration option")
# pytest-xdist's record of the test a dead worker was running ("[gw1] node down: Not properly
# terminated").
_WORKER_CRASH = re.compile(r"worker '?[\w-]+'? crashed while running|\bnode down: ")
_OLD_TIMEOUT = re.compile(r"^(?:Failed: )?Timeout >[\d.]+s")  # pytest-timeout before 2.0
_BLOCKING_CALL = re.compile(
    r"\.(?:recv\w*|accept|connect|sleep|wait|wait_for|join|acquire|read\w*|select|poll|"
    r"communicate|get|urlopen|getresponse|result)\(|\b(?:sleep|input|urlopen)\("
)
# Fixture errors of pytest's own making: a scope a fixture cannot have, or fixtures that need each
# other.
_FIXTURE_SETUP = frozenset({"ScopeMismatch", "FixtureLookupError"})
# pytest's own refusals of a test layout or setup, with what to do (its messages, pytest 7-9).
_PYTEST_SETUP = (
    (
        "import file mismatch",
        "two test files share a module name (or a stale __pycache__ remains): give them "
        "unique names, add __init__.py files, or use --import-mode=importlib",
    ),
    (
        "async def functions are not natively supported",
        "async tests need a plugin that runs them: pip install "
        "pytest-asyncio (or anyio) and mark or configure them",
    ),
    (
        "Defining 'pytest_plugins' in a non-top-level conftest",
        "move pytest_plugins to the rootdir's conftest.py",
    ),
    ("Plugin already registered", "a conftest or plugin is registered twice: remove the duplicate"),
)
_POOL_BROKEN = frozenset({"BrokenProcessPool", "TerminatedWorkerError", "BrokenExecutor"})
# Fixtures that plugins provide: a missing one usually means the plugin is not installed.
_PLUGIN_FIXTURES = {
    "mocker": "pytest-mock",
    "requests_mock": "requests-mock",
    "httpx_mock": "pytest-httpx",
    "benchmark": "pytest-benchmark",
    "freezer": "pytest-freezer",
    "aioresponses": "aioresponses",
    "event_loop": "pytest-asyncio",
    "client": "pytest-django or pytest-flask",
    "db": "pytest-django",
    "faker": "Faker",
    "snapshot": "syrupy",
    "httpserver": "pytest-httpserver",
    "respx_mock": "respx",
    "caplog_json": "pytest-structlog",
    "celery_app": "celery[pytest]",
    "datadir": "pytest-datadir",
}


def _environment(ev: FailureEvidence) -> Optional[Failure]:
    if ev.exc_type == "MemoryError":
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="the test ran out of memory: free memory or raise the limit",
        )
    if ev.facts.time_limit and (ev.exc_type == "Crash" or _WORKER_CRASH.search(ev.message)):
        return None  # the command's own time limit ended the process: a timeout
    if ev.exc_type == "Crash":  # the runner's record of a test its dying process never reported
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="the test process died (a signal, a crash in native "
            "code, or os._exit): run this test alone to see how",
        )
    if _WORKER_CRASH.search(ev.message) and ev.exc_type in (None, "Crash"):
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="a pytest-xdist worker process died while running this test "
            "(killed by a signal or for memory, a crash in native code, os._exit): run it alone "
            "without -n to see how",
        )
    if ev.exc_type in _POOL_BROKEN or any(
        c.split(":")[0].rsplit(".", 1)[-1] in _POOL_BROKEN for c in ev.causes
    ):
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="a worker process of a process pool died (killed by a signal "
            "or the out-of-memory killer, or a crash in native code): free memory, or run it alone",
        )
    if services.unreachable(ev.exc_type, ev.message, ev.causes):
        address = services.address_tried(ev.result.endpoint, ev.message, ev.causes)
        lookup = services.is_name_lookup(ev.message, ev.causes)
        what = "does not resolve" if lookup else "is not reachable"
        message = (
            f"{ev.message} (a service the test needs {what}{': ' + address if address else ''})"
        )
        return ev.failure(
            FailureKind.ENVIRONMENT, message, hint=services.unreachable_hint(address, lookup)
        )
    return host_rule(ev) or extension_rule(ev)


def _timeout(ev: FailureEvidence) -> Optional[Failure]:
    # pytest-timeout's failure (TECH-NOTES 5.4): "Failed: Timeout (>1.0s) from pytest-timeout."
    # "Timeout" is also the runner's record of the test a whole-run timeout kill interrupted.
    if ev.facts.time_limit and (ev.exc_type == "Crash" or _WORKER_CRASH.search(ev.message)):
        return ev.failure(
            FailureKind.TIMEOUT,
            f"the test command's own time limit ({ev.facts.time_limit}) "
            f"stopped the run while {ev.result.test_id} ran",
            hint=f"find why {ev.result.test_id} hangs (it was running when the time ran out), "
            "or raise the command's time limit",
        )
    if (
        ev.exc_type != "Timeout"
        and "Timeout (>" not in ev.message
        and not _OLD_TIMEOUT.search(ev.message)
    ):
        return None
    looping = _looping_in_code_under_test(ev)
    if looping is not None:
        return ev.failure(
            FailureKind.LOGIC,
            location=looping,
            hint=f"the code under test was still running at {looping} when the per-test timeout "
            "stopped it: a loop or recursion that does not end",
        )
    if (
        ev.exc_type == "Timeout" and not ev.frames
    ):  # the runner's record: the whole run was killed during it
        return ev.failure(
            FailureKind.TIMEOUT,
            hint=f"the run's time limit ran out while {ev.result.test_id} ran: "
            "find why it hangs (a wait, a thread that never ends) or raise --test-timeout",
        )
    return ev.failure(
        FailureKind.TIMEOUT,
        hint="the test exceeded its time limit: find the hang or raise the timeout",
    )


def _looping_in_code_under_test(ev: FailureEvidence) -> Optional[str]:
    """``path:line`` where a per-test timeout interrupted the project's own non-test code, else
    None.

    When the plugin says how much CPU time the test used (``busy_share``), that
    decides, wherever the alarm happened to land: a test that kept computing
    with the project's code on its stack is a logic fault (a loop or recursion
    that does not end), located at the innermost project frame, even when the
    alarm caught it inside a library the loop calls (``textwrap``, ``re``); one
    that mostly waited (a socket, a lock, a sleep) stays a timeout. Without it
    (pytest-timeout, an older record), the innermost frame decides: stopped
    while computing in the project's code is logic; in a library, a system
    call, or the test file itself (waiting for a socket, a sleep) a timeout.
    """
    frames = [f for f in ev.frames if PER_TEST_TIMEOUT_HANDLER not in f.path]
    if not frames or ("per-test timeout" not in ev.message and "Timeout (>" not in ev.message):
        return None  # the whole run's kill: no traceback of where the test was
    test_file = ev.result.test_id.split("::")[0]
    share = busy_share(ev.message)
    if share is not None:
        project = [
            f
            for f in frames
            if is_project_path(f.path)
            and f.path != test_file
            and not matches_globs(f.path, DEFAULT_TEST_GLOBS)
        ]  # a test or conftest looping is no fault of the code
        return f"{project[-1].path}:{project[-1].line}" if share >= BUSY and project else None
    inner = frames[-1]
    if not is_project_path(inner.path) or inner.path == test_file:
        return None
    # A call into C code has no frame of its own: the project line that makes a blocking call
    # (a socket read, a lock, a sleep) was waiting there, not computing.
    if _BLOCKING_CALL.search(source_line(ev.project / inner.path, inner.line)):
        return None
    return f"{inner.path}:{inner.line}"


# A test that used at least this share of its per-test timeout as CPU time was computing: a
# loop spins at up to 100% of a core, a wait for a socket, a lock or a sleep at ~0% (measured:
# 0.1% for a socket read). Kept low because a loop starved by other processes is far below 100%:
# 13-15% measured on two cores shared with a two-worker test run.
BUSY = 0.04
_CPU_USED = re.compile(r"per-test timeout of ([\d.]+) s \(it used ([\d.]+) s of CPU time\)")


def busy_share(message: str) -> Optional[float]:
    """The share of the per-test timeout the test spent on the CPU, from the plugin's message; None
    when the message does not say (pytest-timeout, an older plugin)."""
    found = _CPU_USED.search(message)
    if not found or float(found.group(1)) <= 0:
        return None
    return float(found.group(2)) / float(found.group(1))


def _test_config(ev: FailureEvidence) -> Optional[Failure]:
    fixture = _FIXTURE.search(ev.text)
    if fixture:
        name = fixture.group(1)
        available = _AVAILABLE.search(ev.text)
        close = difflib.get_close_matches(
            name, available.group(1).split(", ") if available else [], n=1
        )
        hint = f"define fixture '{name}' in a conftest.py or fix the test's parameter name"
        hint += f" (did you mean '{close[0]}'?)" if close else ""
        if name in _PLUGIN_FIXTURES and not close:
            hint = (
                f"fixture '{name}' comes from a plugin that is not installed: pip install "
                f"{_PLUGIN_FIXTURES[name]}"
            )
        return ev.failure(FailureKind.TEST_CONFIG, f"fixture '{name}' not found", hint)
    if _MARKER.search(ev.text):
        return ev.failure(
            FailureKind.TEST_CONFIG, hint="register the marker in [tool.pytest.ini_options] markers"
        )
    if (
        ev.exc_type in _FIXTURE_SETUP
        or "ScopeMismatch: " in ev.text
        or "recursive dependency involving fixture" in ev.text
    ):
        return ev.failure(
            FailureKind.TEST_CONFIG,
            hint="fix the fixtures' scopes or dependencies (a fixture may only "
            "use fixtures of the same or a wider scope)",
        )
    for pattern, hint in _PYTEST_SETUP:
        if pattern in ev.text:
            return ev.failure(FailureKind.TEST_CONFIG, hint=hint)
    return None


def _syntax(ev: FailureEvidence) -> Optional[Failure]:
    if ev.exc_type not in SYNTAX_TYPES and not (
        ev.exc_type is None and _SYNTAX_LINE.search(ev.text)
    ):
        return None
    # The runner's plugin appends the file that failed to compile as the last frame;
    # without it, the last `File "...", line N` of the text names it.
    where = PYTHON_FRAME.findall(ev.text)
    if ev.exc_type in SYNTAX_TYPES and ev.frames and not ev.frames[-1].function:
        path, line = ev.frames[-1].path, ev.frames[-1].line
    elif where:
        path, line = (
            relative_to(where[-1][0], root_forms(ev.project)) or where[-1][0],
            int(where[-1][1]),
        )
    else:
        return ev.failure(FailureKind.SYNTAX, hint="fix the syntax error named in the message")
    if not is_project_path(path):
        package = package_of(path)
        return ev.failure(
            FailureKind.DEPENDENCY,
            location=f"{path}:{line}",
            hint=f"the installed package {package} does not parse under this Python: "
            "install a version that supports it",
        )
    source = source_line(ev.project / path, line)
    return ev.failure(
        FailureKind.SYNTAX,
        location=f"{path}:{line}",
        hint=f"fix the syntax at {path}:{line}" + (f": {source}" if source else ""),
    )


def _conftest(ev: FailureEvidence) -> Optional[Failure]:
    # After the import rules: a conftest that imports a missing package is a dependency.
    if "while loading conftest" in ev.text:
        return ev.failure(FailureKind.TEST_CONFIG, hint="fix the conftest.py named in the message")
    return None


def _logic(ev: FailureEvidence) -> Optional[Failure]:
    return ev.failure(FailureKind.LOGIC)


RULES: Tuple[Rule, ...] = (
    _environment,
    _timeout,
    _test_config,
    _syntax,
    imports_rule,
    _conftest,
    _logic,
)


def classify_result(
    result: TestResult,
    project: Path,
    interpreter: Optional[InterpreterQuery],
    modules: Callable[[], FrozenSet[str]],
    facts: RunFacts = RunFacts(),
) -> Failure:
    """The first rule of ``RULES`` that recognises ``result`` decides its kind; ``facts`` are the
    run's."""
    ev = make_evidence(result, project, interpreter, modules, facts)
    for rule in RULES:
        failure = rule(ev)
        if failure is not None:
            return failure
    raise AssertionError("the logic rule matches everything")  # pragma: no cover
