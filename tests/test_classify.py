"""classify: the rule table on constructed results, and session failures from real runs."""

from __future__ import annotations

import importlib.metadata
import os
import sys
import textwrap
from pathlib import Path
from typing import Optional, Tuple

import pytest

from repairloop.classify import (
    SESSION_ID,
    blocking_kind,
    classify_report,
    distribution_for,
    overall_kind,
)
from repairloop.runner import ProjectInterpreter, default_test_command, run_tests
from repairloop.types import Failure, FailureKind, Frame, TestOutcome, TestReport, TestResult


def result(
    test_id: str = "tests/test_a.py::test_a",
    *,
    exc_type: Optional[str] = None,
    message: str = "",
    frames: Tuple[Frame, ...] = (),
    longrepr: str = "",
    outcome: TestOutcome = TestOutcome.FAILED,
    phase: str = "call",
) -> TestResult:
    return TestResult(
        test_id,
        outcome,
        phase=phase,
        exc_type=exc_type,
        message=message,
        frames=frames,
        longrepr=longrepr,
    )


def report(
    *results: TestResult, exit_code: Optional[int] = 1, output: str = "", **kw: object
) -> TestReport:
    return TestReport(
        ("pytest",),
        exit_code,
        results=results,
        output=output,
        source=kw.pop("source", "plugin"),
        **kw,
    )  # type: ignore[arg-type]


def one(rep: TestReport, project: Path, python: Optional[str] = None) -> Failure:
    failures = classify_report(
        rep, project, interpreter=ProjectInterpreter(python, dict(os.environ)) if python else None
    )
    assert len(failures) == 1, failures
    return failures[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project: package ``pkg`` (with pkg/pricing.py), a test dir, a src-layout package."""
    root = tmp_path / "proj"
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/pricing.py": "def price():\n    return 1\n",
        "pkg/broken.py": "def f(:\n    pass\n",
        "src/textkit/__init__.py": "",
        "tests/test_a.py": "def test_a():\n    assert False\n",
        "request.py": "X = 1\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    "module, dist",
    [
        ("yaml", "PyYAML"),
        ("cv2", "opencv-python"),
        ("sklearn", "scikit-learn"),
        ("PIL", "Pillow"),
        ("bs4", "beautifulsoup4"),
        ("dateutil", "python-dateutil"),
        ("google.protobuf", "protobuf"),
        ("google.protobuf.message", "protobuf"),
        ("attr", "attrs"),
        ("fitz", "PyMuPDF"),
        ("PIL.Image", "Pillow"),
        ("requests", "requests"),
        ("numpy.linalg", "numpy"),
    ],
)
def test_distribution_for_maps_import_names_to_pypi(module: str, dist: str) -> None:
    assert distribution_for(module) == dist


def test_missing_yaml_is_a_dependency_with_pip_install_pyyaml(project: Path) -> None:
    frames = (Frame("tests/test_a.py", 1, "<module>"), Frame("pkg/pricing.py", 3, "<module>"))
    failure = one(
        report(
            result(
                "tests/test_a.py",
                exc_type="ModuleNotFoundError",
                message="No module named 'yaml'",
                frames=frames,
                phase="collect",
                outcome=TestOutcome.ERROR,
            )
        ),
        project,
    )
    assert failure.kind is FailureKind.DEPENDENCY and not failure.retryable
    assert failure.hint == "pip install PyYAML"
    assert "'yaml'" in failure.message and "PyYAML" in failure.message
    assert failure.location == "pkg/pricing.py:3"  # the importing project file, not the test


def test_missing_module_found_only_in_text_is_a_dependency(project: Path) -> None:
    longrepr = (
        "tests/test_a.py:1: in <module>\n    import cv2\nE   ModuleNotFoundError: No module "
        "named 'cv2'"
    )
    failure = one(report(result(longrepr=longrepr, outcome=TestOutcome.ERROR)), project)
    assert failure.kind is FailureKind.DEPENDENCY
    assert failure.hint == "pip install opencv-python"
    assert failure.location == "tests/test_a.py:1"


def test_misspelled_project_submodule_is_logic_with_did_you_mean(project: Path) -> None:
    failure = one(
        report(result(exc_type="ModuleNotFoundError", message="No module named 'pkg.pricng'")),
        project,
    )
    assert failure.kind is FailureKind.LOGIC and failure.retryable
    assert failure.hint == "did you mean pkg.pricing?"


def test_cannot_import_misspelled_name_from_project_package_is_logic(project: Path) -> None:
    message = f"cannot import name 'pricng' from 'pkg' ({project}/pkg/__init__.py)"
    failure = one(report(result(exc_type="ImportError", message=message)), project)
    assert failure.kind is FailureKind.LOGIC
    assert "pkg.pricing" in failure.hint
    assert str(project) not in failure.message  # absolute project paths are made relative


def test_projects_own_top_level_package_not_importable_is_test_config(project: Path) -> None:
    failure = one(
        report(result(exc_type="ModuleNotFoundError", message="No module named 'textkit'")), project
    )
    assert failure.kind is FailureKind.TEST_CONFIG
    assert "PYTHONPATH" in failure.hint


def test_missing_top_level_resembling_a_project_module_stays_a_dependency(project: Path) -> None:
    failure = one(
        report(result(exc_type="ModuleNotFoundError", message="No module named 'requests'")),
        project,
    )
    assert failure.kind is FailureKind.DEPENDENCY
    assert failure.hint.startswith("pip install requests") and "request" in failure.hint


@pytest.mark.parametrize("python", [None, sys.executable], ids=["in-process", "subprocess"])
def test_cannot_import_name_from_installed_package_is_dependency_naming_version(
    project: Path, python: Optional[str]
) -> None:
    message = "cannot import name 'load_everything' from 'yaml' (/x/site-packages/yaml/__init__.py)"
    failure = one(report(result(exc_type="ImportError", message=message)), project, python)
    assert failure.kind is FailureKind.DEPENDENCY
    version = importlib.metadata.version("PyYAML")
    assert f"PyYAML {version}" in failure.hint and "load_everything" in failure.message


def test_missing_attribute_of_installed_package_is_dependency(project: Path) -> None:
    failure = one(
        report(
            result(
                exc_type="AttributeError",
                message="module 'yaml' has no attribute 'load_everything'",
            )
        ),
        project,
    )
    assert failure.kind is FailureKind.DEPENDENCY
    assert "PyYAML" in failure.hint


def test_missing_attribute_of_project_module_is_logic(project: Path) -> None:
    failure = one(
        report(
            result(exc_type="AttributeError", message="module 'pkg.pricing' has no attribute 'tax'")
        ),
        project,
    )
    assert failure.kind is FailureKind.LOGIC


def test_syntax_error_from_text_gives_path_line_and_offending_line(project: Path) -> None:
    longrepr = textwrap.dedent(f"""\
        tests/test_a.py:1: in <module>
            from pkg.broken import f
        E     File "{project}/pkg/broken.py", line 1
        E       def f(:
        E             ^
        E   SyntaxError: invalid syntax""")
    failure = one(
        report(result("tests/test_a.py", longrepr=longrepr, outcome=TestOutcome.ERROR)), project
    )
    assert failure.kind is FailureKind.SYNTAX and not failure.retryable
    assert failure.location == "pkg/broken.py:1"
    assert "pkg/broken.py:1" in failure.hint and "def f(:" in failure.hint


def test_syntax_error_in_a_test_file_is_still_syntax(project: Path) -> None:
    frames = (Frame(str(project / "tests" / "test_a.py"), 2, ""),)
    failure = one(
        report(
            result(
                "tests/test_a.py",
                exc_type="IndentationError",
                message="unexpected indent",
                frames=frames,
                outcome=TestOutcome.ERROR,
            )
        ),
        project,
    )
    assert failure.kind is FailureKind.SYNTAX
    assert failure.location == "tests/test_a.py:2"


def test_syntax_error_inside_site_packages_is_a_dependency(project: Path) -> None:
    frames = (Frame("/venv/lib/python3.11/site-packages/oldlib/core.py", 7, ""),)
    failure = one(
        report(result(exc_type="SyntaxError", message="invalid syntax", frames=frames)), project
    )
    assert failure.kind is FailureKind.DEPENDENCY
    assert "oldlib" in failure.hint


def test_assertion_and_project_exceptions_are_logic(project: Path) -> None:
    frames = (Frame("tests/test_a.py", 2, "test_a"), Frame("pkg/pricing.py", 2, "price"))
    failures = classify_report(
        report(
            result(exc_type="AssertionError", message="assert 1 == 2", frames=frames[:1]),
            result(
                "tests/test_a.py::test_b",
                exc_type="ZeroDivisionError",
                message="division by zero",
                frames=frames,
            ),
        ),
        project,
    )
    assert [f.kind for f in failures] == [FailureKind.LOGIC, FailureKind.LOGIC]
    assert all(f.retryable for f in failures)
    assert failures[0].message == "assert 1 == 2"
    assert failures[1].message == "ZeroDivisionError: division by zero"
    assert failures[1].location == "pkg/pricing.py:2"


def test_fixture_not_found_is_test_config_with_close_fixture(project: Path) -> None:
    longrepr = (
        "E       fixture 'tmpdirr' not found\n>       available fixtures: capsys, tmp_path, tmpdir"
    )
    failure = one(
        report(
            result(
                exc_type="FixtureLookupError",
                message="fixture 'tmpdirr' not found",
                longrepr=longrepr,
                phase="setup",
                outcome=TestOutcome.ERROR,
            )
        ),
        project,
    )
    assert failure.kind is FailureKind.TEST_CONFIG
    assert "'tmpdirr'" in failure.hint and "did you mean 'tmpdir'" in failure.hint


def test_unknown_marker_with_strict_markers_is_test_config(project: Path) -> None:
    longrepr = "'slowish' not found in `markers` configuration option"
    failure = one(
        report(result("tests/test_a.py", longrepr=longrepr, outcome=TestOutcome.ERROR)), project
    )
    assert failure.kind is FailureKind.TEST_CONFIG


@pytest.mark.parametrize(
    "exc_type, message, kind",
    [
        ("Failed", "Timeout (>1.0s) from pytest-timeout.", FailureKind.TIMEOUT),
        (
            "Timeout",
            "the test-suite run exceeded its timeout of 5 s while this test ran",
            FailureKind.TIMEOUT,
        ),
        ("Crash", "the test process ended while this test ran", FailureKind.ENVIRONMENT),
        ("MemoryError", "", FailureKind.ENVIRONMENT),
    ],
)
def test_per_test_timeouts_and_crashes(
    project: Path, exc_type: str, message: str, kind: FailureKind
) -> None:
    assert one(report(result(exc_type=exc_type, message=message)), project).kind is kind


PLUGIN_FRAME = Frame("/opt/rl/runner/plugin/repairloop_pytest_plugin.py", 62, "alarm")
PER_TEST = "the test ran past the per-test timeout of 2 s"


@pytest.mark.parametrize(
    "inner, kind",
    [
        (
            Frame("pkg/pricing.py", 2, "price"),
            FailureKind.LOGIC,
        ),  # still computing in the code under test
        (
            Frame("tests/test_a.py", 3, "test_a"),
            FailureKind.TIMEOUT,
        ),  # the test itself loops or sleeps
        (
            Frame("/usr/lib/python3.11/socket.py", 700, "recv"),
            FailureKind.TIMEOUT,
        ),  # waiting in a library
    ],
    ids=["code-under-test", "test-file", "library"],
)
def test_a_per_test_timeout_inside_the_code_under_test_is_a_logic_fault(
    project: Path, inner: Frame, kind: FailureKind
) -> None:
    frames = (Frame("tests/test_a.py", 3, "test_a"), inner, PLUGIN_FRAME)
    failure = one(report(result(exc_type="Timeout", message=PER_TEST, frames=frames)), project)
    assert failure.kind is kind and failure.retryable is (kind is FailureKind.LOGIC)
    if kind is FailureKind.LOGIC:
        assert failure.location == "pkg/pricing.py:2" and "does not end" in failure.hint


def test_the_whole_runs_timeout_kill_stays_a_timeout_wherever_the_test_was(project: Path) -> None:
    message = "the test-suite run exceeded its timeout of 5 s while this test ran"
    frames = (Frame("tests/test_a.py", 3, "test_a"), Frame("pkg/pricing.py", 2, "price"))
    assert (
        one(report(result(exc_type="Timeout", message=message, frames=frames)), project).kind
        is FailureKind.TIMEOUT
    )


def test_a_command_not_found_says_it_runs_in_an_isolated_copy(project: Path) -> None:
    """A relative `.venv/bin/python` is not in the isolated copy (a new user's trial): the hint
    says where the command runs and what to give instead."""
    failure = one(report(exit_code=127, output="sh: 1: .venv/bin/python: not found"), project)
    assert "isolated copy" in failure.hint and "absolute path" in failure.hint


@pytest.mark.parametrize(
    "exit_code, output, extra, kind, words",
    [
        (127, "sh: 1: pytestt: not found", {}, FailureKind.ENVIRONMENT, "not found"),
        (126, "permission denied", {}, FailureKind.ENVIRONMENT, "permission denied"),
        # Seen on a real project: `python -m nosuchmodule` was a logic failure of <session>.
        (
            1,
            "/usr/bin/python3: No module named nosuchmodule",
            {"source": "exit_code"},
            FailureKind.ENVIRONMENT,
            "module was not found: No module named nosuchmodule",
        ),
        (
            1,
            "/v/bin/python: Error while finding module specification for 'no.such' "
            "(ModuleNotFoundError: No module named 'no')",
            {"source": "exit_code"},
            FailureKind.ENVIRONMENT,
            "module specification for 'no.such'",
        ),
        (
            4,
            "ImportError while loading conftest '/p/tests/conftest.py'.\ntests/conftest.py:3: in "
            "<module>\n    import nope\nE   ModuleNotFoundError: No module named 'nope'",
            {},
            FailureKind.DEPENDENCY,
            "No module named 'nope'",
        ),
        (
            4,
            "ImportError while loading conftest '/p/tests/conftest.py'.\ntests/conftest.py:3: in "
            "<module>\n    import textkit\nE   ModuleNotFoundError: No module named 'textkit'",
            {},
            FailureKind.TEST_CONFIG,
            "'textkit' is not importable",
        ),
        (
            4,
            "ImportError while loading conftest '/p/tests/conftest.py'.\ntests/conftest.py:3: in "
            "<module>\n    SETTINGS['x']\nE   KeyError: 'x'",
            {},
            FailureKind.TEST_CONFIG,
            "KeyError: 'x'",
        ),
        (
            4,
            "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --bogus",
            {},
            FailureKind.TEST_CONFIG,
            "unrecognized arguments: --bogus",
        ),
        (5, "no tests ran in 0.01s", {}, FailureKind.TEST_CONFIG, "no tests"),
        (
            3,
            "INTERNALERROR> RuntimeError: hook exploded",
            {},
            FailureKind.TEST_CONFIG,
            "hook exploded",
        ),
        (None, "", {"timed_out": True, "signal": 15}, FailureKind.TIMEOUT, "time limit"),
        (None, "", {"signal": 9}, FailureKind.ENVIRONMENT, "SIGKILL"),
        (
            -11,
            "Fatal Python error: Segmentation fault",
            {},
            FailureKind.ENVIRONMENT,
            "segmentation fault",
        ),
        (137, "", {}, FailureKind.ENVIRONMENT, "SIGKILL"),
        (0, "", {"collected": 0}, FailureKind.TEST_CONFIG, "ran no tests"),
    ],
)
def test_session_failure_from_exit_code_and_output(
    project: Path, exit_code: Optional[int], output: str, extra: dict, kind: FailureKind, words: str
) -> None:
    failure = one(report(exit_code=exit_code, output=output, **extra), project)
    assert failure.test_id == SESSION_ID
    assert failure.kind is kind and not failure.retryable
    assert words in failure.message
    assert failure.hint


def test_conftest_session_failure_points_at_the_conftest(project: Path) -> None:
    output = (
        "ImportError while loading conftest '/p/tests/conftest.py'.\ntests/conftest.py:3: in "
        "<module>\n    import nope\nE   ModuleNotFoundError: No module named 'nope'"
    )
    assert one(report(exit_code=4, output=output), project).location == "tests/conftest.py:3"


def test_other_runner_traceback_without_results_goes_through_the_text_rules(project: Path) -> None:
    output = (
        'Traceback (most recent call last):\n  File "pkg/pricing.py", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'bs4'\n"
    )
    failure = one(report(exit_code=1, output=output, source="exit_code"), project)
    assert (failure.test_id, failure.kind, failure.hint) == (
        SESSION_ID,
        FailureKind.DEPENDENCY,
        "pip install beautifulsoup4",
    )
    failure = one(report(exit_code=1, output="1 test failed", source="exit_code"), project)
    assert failure.kind is FailureKind.LOGIC and "exit 1" in failure.message


def test_killed_run_keeps_its_failures_and_adds_the_session(project: Path) -> None:
    failures = classify_report(
        report(
            result(exc_type="AssertionError", message="assert 0"), exit_code=None, timed_out=True
        ),
        project,
    )
    assert [(f.test_id, f.kind) for f in failures] == [
        ("tests/test_a.py::test_a", FailureKind.LOGIC),
        (SESSION_ID, FailureKind.TIMEOUT),
    ]


def test_green_report_has_no_failures(project: Path) -> None:
    passed = result(outcome=TestOutcome.PASSED)
    assert classify_report(report(passed, exit_code=0, collected=1), project) == ()


def _failure(kind: FailureKind) -> Failure:
    return Failure("t", kind, kind is FailureKind.LOGIC, "m")


def test_blocking_kind_follows_the_priority_and_retry_kinds() -> None:
    mixed = [
        _failure(k)
        for k in (
            FailureKind.LOGIC,
            FailureKind.TIMEOUT,
            FailureKind.SYNTAX,
            FailureKind.DEPENDENCY,
        )
    ]
    assert blocking_kind(mixed) is FailureKind.SYNTAX
    assert blocking_kind(mixed, retry_kinds=("logic", "syntax")) is FailureKind.DEPENDENCY
    assert blocking_kind(mixed + [_failure(FailureKind.ENVIRONMENT)]) is FailureKind.ENVIRONMENT
    assert blocking_kind([_failure(FailureKind.LOGIC), _failure(FailureKind.FLAKY)]) is None


def test_overall_kind() -> None:
    assert overall_kind([]) == "none"
    assert overall_kind([_failure(FailureKind.LOGIC), _failure(FailureKind.FLAKY)]) == "logic"
    assert (
        overall_kind([_failure(FailureKind.LOGIC), _failure(FailureKind.TEST_CONFIG)])
        == "test_config"
    )
    assert overall_kind([_failure(FailureKind.FLAKY)]) == "flaky"


# ---------------------------------------------------------------- real runs through the runner


def _write(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_real_command_not_found_is_environment(tmp_path: Path) -> None:
    root = _write(tmp_path / "p", {"tests/test_x.py": "def test_x():\n    pass\n"})
    rep = run_tests(root, ["repairloop-no-such-command-xyz"])
    failure = one(rep, root)
    assert (failure.test_id, failure.kind) == (SESSION_ID, FailureKind.ENVIRONMENT)


def test_real_no_tests_collected_is_test_config(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "p",
        {
            "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
            "tests/helpers.py": "X = 1\n",
        },
    )
    failure = one(run_tests(root, default_test_command(root)), root)
    assert (failure.kind, failure.message) == (FailureKind.TEST_CONFIG, "no tests were collected")


def test_real_timeout_kill_is_timeout(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "p",
        {"tests/test_slow.py": "import time\n\ndef test_hangs():\n    time.sleep(120)\n"},
    )
    failures = classify_report(run_tests(root, default_test_command(root), timeout=3), root)
    assert failures and {f.kind for f in failures} == {FailureKind.TIMEOUT}
    assert failures[-1].test_id == SESSION_ID


def test_real_unknown_option_is_test_config(tmp_path: Path) -> None:
    root = _write(tmp_path / "p", {"tests/test_x.py": "def test_x():\n    pass\n"})
    failure = one(run_tests(root, default_test_command(root) + ("--no-such-option",)), root)
    assert failure.kind is FailureKind.TEST_CONFIG and "--no-such-option" in failure.message


# ---------------------------------------------------------------- services, workers, builds, time
# limits


@pytest.mark.parametrize(
    "exc_type, message, causes, address",
    [
        (
            "ConnectionError",
            "Error 111 connecting to localhost:6379. Connection refused.",
            (),
            "localhost:6379",
        ),
        (
            "OperationalError",
            'connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection '
            "refused\n\tIs the server running on that host and accepting TCP/IP connections?",
            (),
            "localhost:5432",
        ),
        (
            "OperationalError",
            "could not connect to server: Connection refused\n\tIs the server running on host "
            '"localhost" (127.0.0.1) and accepting\n\tTCP/IP connections on port 5432?',
            (),
            "localhost:5432",
        ),
        (
            "ConnectionError",
            "HTTPConnectionPool(host='localhost', port=8712): Max retries exceeded with url: /x "
            "(Caused by NewConnectionError('<urllib3.connection.HTTPConnection object>: Failed to "
            "establish a new connection: [Errno 111] Connection refused'))",
            (),
            "localhost:8712",
        ),
        (
            "ServerSelectionTimeoutError",
            "localhost:27017: [Errno 111] Connection refused, Timeout: 30s",
            (),
            "localhost:27017",
        ),
        (
            "ClientConnectorError",
            "Cannot connect to host localhost:8088 ssl:None [Connect call failed ('127.0.0.1', "
            "8088)]",
            (),
            "localhost:8088",
        ),
        (
            "EndpointConnectionError",
            'Could not connect to the endpoint URL: "http://localhost:4566/bucket"',
            (),
            "http://localhost:4566",
        ),
        (
            "OperationalError",
            "(2003, \"Can't connect to MySQL server on 'db' ([Errno 111] Connection refused)\")",
            ("builtins.ConnectionRefusedError: [Errno 111] Connection refused",),
            "db",
        ),
        ("gaierror", "[Errno -2] Name or service not known", (), ""),
        ("NoBrokersAvailable", "NoBrokersAvailable", (), ""),
    ],
    ids=[
        "redis",
        "psycopg2",
        "psycopg2-old",
        "requests",
        "pymongo",
        "aiohttp",
        "botocore",
        "pymysql",
        "dns",
        "kafka",
    ],
)
def test_an_unreachable_service_is_environment_with_the_address_tried(
    project: Path, exc_type: str, message: str, causes: Tuple[str, ...], address: str
) -> None:
    res = TestResult(
        "tests/test_a.py::test_a",
        TestOutcome.ERROR,
        phase="setup",
        exc_type=exc_type,
        message=message,
        causes=causes,
    )
    failure = one(report(res), project)
    assert failure.kind is FailureKind.ENVIRONMENT and not failure.retryable
    assert address in failure.hint and address in failure.message


def test_the_address_the_plugin_found_in_the_frames_wins(project: Path) -> None:
    res = TestResult(
        "tests/test_a.py::test_a",
        TestOutcome.FAILED,
        exc_type="ConnectError",
        message="[Errno 111] Connection refused",
        endpoint="127.0.0.1:6390",
    )
    assert "127.0.0.1:6390" in one(report(res), project).hint


@pytest.mark.parametrize(
    "exc_type, message, causes",
    [
        (
            "AssertionError",
            "assert 'Connection refused' not in response.text",
            (),
        ),  # the test's own check
        (
            "OperationalError",
            "no such table: employees",
            (),
        ),  # sqlite: a schema the code never made
        (
            "ConnectionError",
            "the retry budget is exhausted",
            (),
        ),  # the project's own ConnectionError, no socket involved
        ("ValueError", "port must be 0-65535", ("builtins.OSError: [Errno 22] Invalid argument",)),
    ],
    ids=["assertion", "sqlite", "project-connection-error", "value-error"],
)
def test_connection_words_alone_are_not_an_outage(
    project: Path, exc_type: str, message: str, causes: Tuple[str, ...]
) -> None:
    res = TestResult(
        "tests/test_a.py::test_a",
        TestOutcome.FAILED,
        exc_type=exc_type,
        message=message,
        causes=causes,
    )
    assert one(report(res), project).kind is FailureKind.LOGIC


def test_a_crashed_xdist_worker_and_a_broken_process_pool_are_environment(project: Path) -> None:
    crash = result(
        exc_type=None,
        message="worker 'gw1' crashed while running 'tests/test_a.py::test_a'",
        longrepr="worker 'gw1' crashed while running 'tests/test_a.py::test_a'",
        phase="???",
        outcome=TestOutcome.ERROR,
    )
    assert "xdist worker" in one(report(crash), project).hint
    pool = result(
        exc_type="BrokenProcessPool",
        message="A process in the process pool was terminated abruptly",
    )
    assert one(report(pool), project).kind is FailureKind.ENVIRONMENT


@pytest.mark.parametrize(
    "command, extra, output",
    [
        (("timeout", "60", "pytest"), {"exit_code": 124}, ""),
        (
            ("pytest",),
            {"exit_code": 1},
            "+++++++++++++++++++++++ Timeout +++++++++++++++++++++++\n~~~ Stack of MainThread ~~~",
        ),
    ],
    ids=["timeout-program", "pytest-timeout-thread"],
)
def test_a_run_stopped_by_its_own_time_limit_is_timeout_naming_the_running_test(
    project: Path, command, extra, output: str
) -> None:
    running = result(
        exc_type="Crash",
        message="the test process ended while this test ran",
        outcome=TestOutcome.ERROR,
    )
    rep = TestReport(command, results=(running,), output=output, source="plugin", **extra)
    failure = classify_report(rep, project)[0]
    assert failure.kind is FailureKind.TIMEOUT and "tests/test_a.py::test_a" in failure.message
    assert (
        one(report(running), project).kind is FailureKind.ENVIRONMENT
    )  # the same record, no time limit: a crash


def test_a_timeout_kill_of_the_whole_run_under_timeout_is_timeout_not_a_signal(
    project: Path,
) -> None:
    rep = TestReport(("timeout", "-s", "KILL", "60", "pytest"), 137, output="", source="exit_code")
    assert one(rep, project).kind is FailureKind.TIMEOUT


def test_a_per_test_timeout_while_the_code_waits_in_a_blocking_call_is_timeout(
    project: Path,
) -> None:
    (project / "pkg" / "client.py").write_text("def call(sock):\n    return sock.recv(4096)\n")
    frames = (
        Frame("tests/test_a.py", 3, "test_a"),
        Frame("pkg/client.py", 2, "call"),
        PLUGIN_FRAME,
    )
    failure = one(report(result(exc_type="Timeout", message=PER_TEST, frames=frames)), project)
    assert failure.kind is FailureKind.TIMEOUT


def test_an_extension_module_never_built_is_environment_with_the_projects_build_command(
    project: Path,
) -> None:
    (project / "pkg" / "_speedups.pyx").write_text("def f():\n    return 1\n")
    (project / "Makefile").write_text("build:\n\tpython setup.py build_ext --inplace\n")
    message = (
        "cannot import name '_speedups' from partially initialized module 'pkg' (most likely due "
        "to a circular "
        f"import) ({project}/pkg/__init__.py)"
    )
    failure = one(report(result(exc_type="ImportError", message=message)), project)
    assert failure.kind is FailureKind.ENVIRONMENT and failure.hint.endswith("make build")
    circular = (
        "cannot import name 'pricing' from partially initialized module 'pkg' (most likely due to "
        "a circular import)"
    )
    assert (
        one(report(result(exc_type="ImportError", message=circular)), project).kind
        is FailureKind.LOGIC
    )


def test_an_unloadable_compiled_module_is_environment_in_the_project_dependency_installed(
    project: Path,
) -> None:
    ours = f"{project}/pkg/_core.cpython-311-x86_64-linux-gnu.so: undefined symbol: PyFoo"
    assert (
        one(report(result(exc_type="ImportError", message=ours)), project).kind
        is FailureKind.ENVIRONMENT
    )
    theirs = (
        "/venv/lib/python3.11/site-packages/lxml/etree.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: x"
    )
    failure = one(report(result(exc_type="ImportError", message=theirs)), project)
    assert failure.kind is FailureKind.DEPENDENCY and "lxml" in failure.hint


def test_a_conftest_that_imports_a_missing_package_is_a_dependency_in_a_collected_directory(
    project: Path,
) -> None:
    longrepr = (
        "ImportError while loading conftest '/p/tests/sub/conftest.py'.\ntests/sub/conftest.py:1: "
        "in <module>\n    import responses\nE   ModuleNotFoundError: No module named 'responses'"
    )
    failure = one(
        report(result("tests/sub", longrepr=longrepr, outcome=TestOutcome.ERROR, phase="collect")),
        project,
    )
    assert failure.kind is FailureKind.DEPENDENCY and failure.hint == "pip install responses"


def test_an_unknown_option_names_the_plugin_that_provides_it(project: Path) -> None:
    output = (
        "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --reruns 2\n  "
        "inifile: pytest.ini"
    )
    failure = one(report(exit_code=4, output=output), project)
    assert (
        failure.kind is FailureKind.TEST_CONFIG
        and "pip install pytest-rerunfailures" in failure.hint
    )


def test_a_removed_stdlib_name_is_logic_in_the_project_and_a_dependency_in_an_installed_package(
    project: Path,
) -> None:
    message = "module 'collections' has no attribute 'Mapping'"
    ours = result(
        exc_type="AttributeError", message=message, frames=(Frame("pkg/pricing.py", 1, "<module>"),)
    )
    assert one(report(ours), project).kind is FailureKind.LOGIC
    theirs = result(
        exc_type="AttributeError",
        message=message,
        frames=(Frame("/venv/lib/python3.11/site-packages/oldlib/tree.py", 3, "<module>"),),
    )
    failure = one(report(theirs), project)
    assert failure.kind is FailureKind.DEPENDENCY and "upgrade oldlib" in failure.hint


@pytest.mark.parametrize(
    "res, words",
    [
        (
            result(
                exc_type="FileNotFoundError",
                message="[Errno 2] No such file or directory: 'ffmpeg'",
                frames=(
                    Frame("pkg/pricing.py", 2, "f"),
                    Frame("/usr/lib/python3.11/subprocess.py", 1901, "_execute_child"),
                ),
            ),
            "ffmpeg is not installed",
        ),
        (
            result(
                exc_type="KeyError",
                message="'SECRET_KEY'",
                frames=(Frame("pkg/pricing.py", 2, "f"), Frame("<frozen os>", 679, "__getitem__")),
            ),
            "SECRET_KEY",
        ),
        (
            result(
                exc_type="TclError", message="no display name and no $DISPLAY environment variable"
            ),
            "xvfb-run",
        ),
        (
            result(
                exc_type="AssertionError",
                message="Torch not compiled with CUDA enabled",
                frames=(
                    Frame(
                        "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py",
                        239,
                        "_lazy_init",
                    ),
                ),
            ),
            "GPU",
        ),
        (
            result(
                exc_type="PermissionError",
                message="[Errno 13] Permission denied: '/var/log/app.log'",
            ),
            "/var/log/app.log",
        ),
        (result(exc_type="OSError", message="[Errno 28] No space left on device"), "disk is full"),
    ],
    ids=["program", "env-var", "display", "gpu", "permission", "disk"],
)
def test_what_the_machine_lacks_is_environment(project: Path, res: TestResult, words: str) -> None:
    failure = one(report(res), project)
    assert failure.kind is FailureKind.ENVIRONMENT and words in failure.hint


def test_a_missing_key_of_a_plain_dict_and_a_missing_project_file_stay_logic(project: Path) -> None:
    key = result(
        exc_type="KeyError", message="'SECRET_KEY'", frames=(Frame("pkg/pricing.py", 2, "f"),)
    )
    assert one(report(key), project).kind is FailureKind.LOGIC
    missing = result(
        exc_type="FileNotFoundError",
        message="[Errno 2] No such file or directory: 'data.csv'",
        frames=(Frame("pkg/pricing.py", 2, "f"),),
    )
    assert one(report(missing), project).kind is FailureKind.LOGIC


@pytest.mark.parametrize(
    "text, words",
    [
        (
            "import file mismatch:\nimported module 'test_x' has this __file__ attribute:",
            "unique names",
        ),
        ("Failed: async def functions are not natively supported.", "pytest-asyncio"),
        ("Defining 'pytest_plugins' in a non-top-level conftest is no longer supported", "rootdir"),
    ],
    ids=["module-clash", "async", "pytest-plugins"],
)
def test_pytests_own_refusals_are_test_config(project: Path, text: str, words: str) -> None:
    failure = one(
        report(result(longrepr=text, message=text.splitlines()[0], outcome=TestOutcome.ERROR)),
        project,
    )
    assert failure.kind is FailureKind.TEST_CONFIG and words in failure.hint


def test_removed_stdlib_modules_and_missing_metadata(project: Path) -> None:
    distutils = result(exc_type="ModuleNotFoundError", message="No module named 'distutils'")
    failure = one(report(distutils), project)
    assert failure.kind is FailureKind.DEPENDENCY and "pip install setuptools" in failure.hint
    imp_here = result(
        exc_type="ModuleNotFoundError",
        message="No module named 'imp'",
        frames=(Frame("pkg/pricing.py", 1, "<module>"),),
    )
    assert one(report(imp_here), project).kind is FailureKind.LOGIC
    imp_there = result(
        exc_type="ModuleNotFoundError",
        message="No module named 'imp'",
        frames=(Frame("/venv/lib/python3.12/site-packages/oldlib/__init__.py", 1, "<module>"),),
    )
    assert "upgrade oldlib" in one(report(imp_there), project).hint
    (project / "pyproject.toml").write_text('[project]\nname = "price-kit"\n')
    own = result(
        exc_type="PackageNotFoundError", message="No package metadata was found for price_kit"
    )
    assert one(report(own), project).kind is FailureKind.TEST_CONFIG
    other = result(
        exc_type="PackageNotFoundError", message="No package metadata was found for requests"
    )
    failure = one(report(other), project)
    assert failure.kind is FailureKind.DEPENDENCY and failure.hint == "pip install requests"
    assert one(
        report(result(exc_type="ZoneInfoNotFoundError", message="'No time zone found with key X'")),
        project,
    ).hint.endswith("pip install tzdata")


def test_a_project_directory_imported_as_a_package_is_test_config(project: Path) -> None:
    (project / "tests" / "helpers.py").write_text("X = 1\n")
    failure = one(
        report(result(exc_type="ModuleNotFoundError", message="No module named 'tests'")), project
    )
    assert failure.kind is FailureKind.TEST_CONFIG and "tests/__init__.py" in failure.hint
    relative_import = result(
        exc_type="ImportError", message="attempted relative import with no known parent package"
    )
    assert one(report(relative_import), project).kind is FailureKind.TEST_CONFIG


UNITTEST_LONGREPR = (
    "self = <tests.test_a.TestA testMethod=test_a>\n\n    def test_a(self):\n>       raise "
    "ValueError()\nE       ValueError\n\ntests/test_a.py:5: ValueError"
)


@pytest.mark.parametrize("exc_type", ["ValueError", None], ids=["type-known", "type-from-text"])
def test_an_exception_without_a_value_is_its_type_not_traceback_furniture(
    project: Path, exc_type: Optional[str]
) -> None:
    # Seen on a real project: "ValueError: self = <tests.test_x.TestX testMethod=test_y>".
    failure = one(report(result(exc_type=exc_type, longrepr=UNITTEST_LONGREPR)), project)
    assert failure.message == "ValueError"


def test_a_real_unittest_failure_without_a_value_says_its_exception(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_u.py").write_text(
        "import unittest\n\n\nclass TestU(unittest.TestCase):\n    def test_empty(self):\n        "
        "raise KeyError()\n"
    )
    rep = run_tests(root, default_test_command(root))
    assert [f.message for f in classify_report(rep, root)] == ["KeyError"]
