"""Fault localisation's evidence without coverage.py: the pytest plugin's own line tracer.

Real pytest runs through ``repairloop.runner.run_tests`` on a small project
whose environment cannot import coverage.py (a shadowing module raises
ImportError), on this interpreter (``sys.settrace`` before 3.12,
``sys.monitoring`` from 3.12) and on a Python 3.12+ interpreter of this
machine (pyenv's), which gets the pure-Python pytest of repairloop's own
environment on its path.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest
from runner_helpers import PYTEST, write_project

from repairloop.localise import localise
from repairloop.localise.spectra import EVERY_TEST, read_spectra
from repairloop.runner import run_tests
from repairloop.types import TestFiles, TestReport

PROJECT = {
    "mini/__init__.py": "",
    "mini/calc.py": """
        def add(a, b):
            return a + b


        def mean(values):
            total = sum(values)
            return total / (len(values) + 1)
    """,
    "tests/test_calc.py": """
        from mini.calc import add, mean


        def test_add():
            assert add(1, 2) == 3


        def test_mean():
            assert mean([2, 4]) == 3


        def test_mean_one():
            assert mean([5]) == 5
    """,
    # The project's environment has no coverage.py.
    "shadow/coverage.py": "raise ImportError('coverage.py is not installed in this environment')\n",
}
BUG_LINE = 7  # return total / (len(values) + 1)
TEST_FILES = TestFiles(("tests/*",))
# What pytest needs, all pure Python: lent to another interpreter from repairloop's own environment.
PURE_PYTEST = ("_pytest", "pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py")


def newer_python() -> Optional[str]:
    """A Python 3.12+ interpreter of this machine (sys.monitoring), or None."""
    found = [shutil.which(f"python3.{minor}") for minor in range(12, 16)]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9].*/bin/python")))
    for python in filter(None, found):
        done = subprocess.run(
            [python, "-c", "import sys; print(hasattr(sys, 'monitoring'))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.stdout.strip() == "True":
            return python
    return None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "proj", PROJECT)


@pytest.fixture
def lent_pytest(tmp_path: Path) -> Path:
    """A directory with links to repairloop's pure-Python pytest, for another interpreter's path."""
    import _pytest

    site = Path(_pytest.__file__).parent.parent
    lent = tmp_path / "lent"
    lent.mkdir()
    for name in PURE_PYTEST:
        if (site / name).exists():
            (lent / name).symlink_to(site / name)
    return lent


def traced(
    root: Path, command: tuple, env: Optional[Dict[str, str]] = None
) -> Iterator[TestReport]:
    report = run_tests(
        root,
        command,
        pythonpath=[Path("shadow"), Path(".")],
        coverage_source=["mini"],
        timeout=120,
        env=env,
    )
    try:
        yield report
    finally:
        if report.coverage_file:
            shutil.rmtree(Path(report.coverage_file).parent, ignore_errors=True)


def check_spectra(report: TestReport, root: Path, tool: str) -> None:
    assert report.coverage_file is not None, report.output[-2000:]
    assert report.coverage_file.endswith("repairloop-lines.jsonl")
    lines, found_tool = read_spectra(report.coverage_file, root, TEST_FILES)
    assert found_tool == tool
    assert lines[("mini/calc.py", BUG_LINE)] == {
        "tests/test_calc.py::test_mean",
        "tests/test_calc.py::test_mean_one",
    }
    assert lines[("mini/calc.py", 2)] == {"tests/test_calc.py::test_add"}
    assert lines[("mini/calc.py", 1)] == {
        EVERY_TEST
    }  # the def line runs at import, outside any test
    assert not any(path.startswith(("tests/", "shadow/")) for path, _ in lines)


def test_without_coverage_py_the_plugin_traces_each_tests_lines(project: Path) -> None:
    for report in traced(project, PYTEST):
        assert report.failing_ids == (
            "tests/test_calc.py::test_mean",
            "tests/test_calc.py::test_mean_one",
        )
        check_spectra(
            report, project, "sys.monitoring" if sys.version_info >= (3, 12) else "sys.settrace"
        )
        assert "per-test coverage was not recorded" not in report.output


def test_on_python_3_12_the_tracer_uses_sys_monitoring(project: Path, lent_pytest: Path) -> None:
    python = newer_python()
    if python is None:
        pytest.skip(
            "no Python 3.12+ interpreter on this machine (python3.12 on PATH or pyenv's 3.12+)"
        )
    env = dict(os.environ, PYTHONPATH=str(lent_pytest))
    for report in traced(project, (python, "-m", "pytest", "-q"), env):
        check_spectra(report, project, "sys.monitoring")


def test_ochiai_over_the_tracers_lines_ranks_the_buggy_line_first(project: Path) -> None:
    failing: List[str] = ["tests/test_calc.py::test_mean", "tests/test_calc.py::test_mean_one"]
    sources = {"mini/calc.py": (project / "mini/calc.py").read_text(), "mini/__init__.py": ""}
    for report in traced(project, PYTEST):
        loc = localise(report, project, failing, "", TEST_FILES, sources)
    assert loc.method == "coverage" and not loc.degraded and loc.note == ""
    assert loc.tool in ("sys.settrace", "sys.monitoring")
    top = {
        (s.path, s.line) for s in loc.suspects if s.score == 1.0
    }  # mean's body: only the failing tests run it
    assert top == {("mini/calc.py", BUG_LINE - 1), ("mini/calc.py", BUG_LINE)}
    assert all(s.score < 1.0 for s in loc.suspects if s.line == 1)
