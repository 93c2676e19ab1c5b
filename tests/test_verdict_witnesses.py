"""A run counts only when it could not have been forged: it ended normally, and its two witnesses
agree.

Real pytest subprocesses on small projects whose own code plays the forger
(the runner does not know or care who wrote the code it runs).
"""

from __future__ import annotations

from pathlib import Path

from runner_helpers import PYTEST, write_project

from repairloop.runner import run_tests
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
