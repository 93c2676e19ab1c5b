"""A run counts only when it could not have been forged: it ended normally, and its two witnesses
agree.

Real pytest subprocesses on small projects whose own code plays the forger
(the runner does not know or care who wrote the code it runs).
"""

from __future__ import annotations

from pathlib import Path

from runner_helpers import PYTEST, write_project

from repairloop.runner import PLUGIN_DIR, run_tests
from repairloop.runner.crosscheck import disagreement
from repairloop.types import TestOutcome, TestResult

FAILING = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
}


def test_a_patched_results_plugin_is_caught_by_pytests_own_junit(tmp_path: Path) -> None:
    forger = (
        "import sys\n"
        "sys.modules['repairloop_pytest_plugin_recorder']._outcome = lambda report: 'passed'\n"
    )
    project = write_project(tmp_path, {**FAILING, "calc.py": FAILING["calc.py"] + forger})
    report = run_tests(project, PYTEST)
    assert [r.outcome for r in report.results] == [TestOutcome.PASSED]  # the plugin was fooled
    assert "test_add" in report.distrust and not report.green  # pytest's own record was not


def test_an_early_exit_with_status_0_is_never_green(tmp_path: Path) -> None:
    exiting = FAILING["calc.py"] + "import os\ngetattr(os, '_' + 'exit')(0)\n"
    report = run_tests(write_project(tmp_path, {**FAILING, "calc.py": exiting}), PYTEST)
    assert report.exit_code == 0 and not report.complete and not report.green


def test_an_honest_run_is_complete_and_trusted(tmp_path: Path) -> None:
    fixed = {**FAILING, "calc.py": "def add(a, b):\n    return a + b\n"}
    report = run_tests(write_project(tmp_path, fixed), PYTEST)
    assert report.complete and report.distrust == "" and report.green
    assert not list(tmp_path.rglob("*.xml"))  # pytest's witness is written outside the project


def test_witnesses_compare_failing_names_only() -> None:
    plugin = (
        TestResult("tests/test_a.py::TestX::test_m[1]", TestOutcome.FAILED),
        TestResult("tests/test_b.py", TestOutcome.ERROR),
    )
    junit = (
        TestResult("tests.test_a.TestX::test_m[1]", TestOutcome.FAILED),
        TestResult("tests.test_b", TestOutcome.ERROR),
    )
    assert disagreement(plugin, junit, expected=True) == ""
    assert "test_m[1]" in disagreement((), junit, expected=True)
    assert (
        "missing" in disagreement(plugin, None, expected=True)
        and disagreement(plugin, None, expected=False) == ""
    )


def test_a_candidate_that_turns_the_junit_witness_off_is_not_trusted(tmp_path: Path) -> None:
    """The witness is registered by the plugin, not asked for with an option; code under test that
    unregisters it (or blocks pytest's junitxml plugin) only leaves the run without its second
    witness, and such a run is never trusted."""
    forger = (
        "import pytest\n\n\n@pytest.hookimpl(trylast=True)\ndef pytest_configure(config):\n"
        "    witness = config.pluginmanager.get_plugin('repairloop-junit-witness')\n"
        "    if witness is not None:\n        config.pluginmanager.unregister(witness)\n"
    )
    fixed = {**FAILING, "calc.py": "def add(a, b):\n    return a + b\n", "conftest.py": forger}
    report = run_tests(write_project(tmp_path, fixed), (*PYTEST, "-p", "no:junitxml"))
    assert "JUnit record of the run is missing" in report.distrust and not report.green


# Code under test that, at exit, rewrites both witnesses so that they agree on a pass: it finds
# them through the garbage collector (the recorder's file, pytest's JUnit writer's file) and
# writes them after pytest wrote its own. With result files this forged the verdict.
REWRITE_AT_EXIT = """
import atexit, gc, json

def _forge():
    for obj in gc.get_objects():
        kind = type(obj).__name__
        try:
            if kind == "Recorder" and isinstance(obj._fh.name, str):
                with open(obj._fh.name, "w") as fh:
                    for rec in ({"kind": "session_start"}, {"kind": "test", "when": "call",
                        "nodeid": "tests/test_calc.py::test_add", "outcome": "passed"},
                        {"kind": "session", "exitstatus": 0, "collected": 1}):
                        fh.write(json.dumps(rec) + "\\n")
            if kind == "LogXML":
                with open(obj.logfile, "w") as fh:
                    fh.write('<testsuites><testsuite name="pytest" tests="1"><testcase '
                             'classname="tests.test_calc" name="test_add"/></testsuite>'
                             '</testsuites>')
        except Exception:
            pass

atexit.register(_forge)
"""


def test_witnesses_rewritten_at_exit_change_no_verdict(tmp_path: Path) -> None:
    project = write_project(tmp_path, {**FAILING, "calc.py": FAILING["calc.py"] + REWRITE_AT_EXIT})
    report = run_tests(project, PYTEST)
    assert [(r.test_id, r.outcome) for r in report.results] == [
        ("tests/test_calc.py::test_add", TestOutcome.FAILED)
    ]
    assert not report.green


# Code under test that keeps a copy of the results channel and writes a pass into it once the
# session is over (a thread that outlives the tests).
LATE_RECORDS = """
import os, threading, time

def _late(fd):
    time.sleep(0.5)
    os.write(fd, b'{"kind": "test", "when": "call", "outcome": "passed", '
                 b'"nodeid": "tests/test_calc.py::test_add"}\\n')

for _name in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + _name).startswith("pipe:"):
            threading.Thread(target=_late, args=(os.dup(int(_name)),)).start()
    except OSError:
        pass
"""


def test_records_sent_after_the_session_ended_leave_the_run_untrusted(tmp_path: Path) -> None:
    fixed = "def add(a, b):\n    return a + b\n"
    project = write_project(tmp_path, {**FAILING, "calc.py": fixed + LATE_RECORDS})
    report = run_tests(project, PYTEST)
    assert "after the session ended" in report.distrust and not report.green


def test_a_pytest_started_by_a_python_launcher_reports_through_the_files(tmp_path: Path) -> None:
    """A launcher such as tox starts pytest with Python's subprocess, which closes inherited
    descriptors: the plugin then writes the result files, and they are read as before."""
    launcher = (
        "import subprocess, sys; "
        "sys.exit(subprocess.call([sys.executable, '-m', 'pytest', '-q', '-p', "
        "'repairloop_pytest_plugin']))"
    )
    report = run_tests(write_project(tmp_path, FAILING), [PYTEST[0], "-c", launcher])
    assert [(r.test_id, r.outcome) for r in report.results] == [
        ("tests/test_calc.py::test_add", TestOutcome.FAILED)
    ]
    assert report.complete and report.distrust == ""


def test_the_plugin_uses_a_descriptor_only_when_it_is_that_pipe() -> None:
    import os
    import sys

    sys.path.insert(0, str(PLUGIN_DIR))
    from repairloop_pytest_plugin_channel import inherited_pipe

    read, write = os.pipe()
    try:
        inode = os.fstat(write).st_ino
        assert inherited_pipe(f"{write}:{inode}") == write
        assert inherited_pipe(f"{write}:{inode + 1}") is None  # the number names another pipe
        assert inherited_pipe("not-a-descriptor") is None and inherited_pipe(None) is None
    finally:
        os.close(read)
        os.close(write)
