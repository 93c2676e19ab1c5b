"""run_tests on small real projects: structured results from the plugin, JUnit XML, exit codes.

Every test writes a tiny project under tmp_path and runs real pytest in a
subprocess through ``repairloop.runner.run_tests``.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from pathlib import Path

import pytest
from runner_helpers import PYTEST, PYTHON, read_pid, result_for, wait_gone, write_project

from repairloop.errors import ProjectError
from repairloop.runner import (
    PLUGIN_DIR,
    default_test_command,
    is_pytest_command,
    project_python,
    run_tests,
)
from repairloop.runner.junit import read_junit
from repairloop.types import Frame, TestOutcome

CALC = {
    "src/calc.py": """
        def add(a, b):
            return a + b


        def mean(values):
            assert values, "mean of nothing"
            return sum(values) / (len(values) + 1)
    """,
    "tests/test_calc.py": """
        from calc import add, mean


        def test_add():
            assert add(2, 3) == 5


        def test_mean():
            assert mean([2, 4]) == 3


        def test_mean_empty():
            mean([])
    """,
}
SRC = (Path("src"),)


def test_passing_suite_is_green(tmp_path: Path) -> None:
    passing = """
        from calc import add

        def test_add():
            assert add(1, 1) == 2

        def test_add_zero():
            assert add(0, 5) == 5
    """
    root = write_project(
        tmp_path, {"src/calc.py": CALC["src/calc.py"], "tests/test_ok.py": passing}
    )
    report = run_tests(root, PYTEST, pythonpath=SRC, timeout=120)
    assert report.exit_code == 0
    assert report.source == "plugin"
    assert report.collected == 2
    assert report.passed_ids == ("tests/test_ok.py::test_add", "tests/test_ok.py::test_add_zero")
    assert report.green


def test_failing_assertion_has_type_message_and_frames(tmp_path: Path) -> None:
    root = write_project(tmp_path, CALC)
    report = run_tests(root, PYTEST, pythonpath=SRC, timeout=120)
    assert report.exit_code == 1 and not report.green
    wrong = result_for(report, "tests/test_calc.py::test_mean")
    assert wrong.outcome is TestOutcome.FAILED and wrong.phase == "call"
    assert wrong.exc_type == "AssertionError"
    assert "assert 2.0 == 3" in wrong.message
    assert wrong.frames == (Frame("tests/test_calc.py", 9, "test_mean"),)
    empty = result_for(report, "tests/test_calc.py::test_mean_empty")
    assert empty.exc_type == "AssertionError"
    assert "mean of nothing" in empty.message
    # The project function that raised is a frame, innermost last, path relative to root.
    assert empty.frames[-1] == Frame("src/calc.py", 6, "mean")
    assert empty.frames[0].function == "test_mean_empty"
    assert report.failing_ids == (
        "tests/test_calc.py::test_mean",
        "tests/test_calc.py::test_mean_empty",
    )


def test_captured_output_of_a_failing_test_is_kept(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "tests/test_out.py": """
        def test_prints():
            print("value was 41")
            assert False
    """
        },
    )
    report = run_tests(root, PYTEST, timeout=120)
    assert "value was 41" in result_for(report, "tests/test_out.py::test_prints").output


def test_no_tests_collected_is_exit_5_and_not_green(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"tests/test_nothing.py": "VALUE = 1\n"})
    report = run_tests(root, PYTEST, timeout=120)
    assert report.exit_code == 5
    assert report.collected == 0
    assert not report.green


@pytest.mark.parametrize("command", [["repairloop-no-such-cmd"], "repairloop-no-such-cmd -q"])
def test_command_not_found_is_127_and_never_green(tmp_path: Path, command: object) -> None:
    report = run_tests(tmp_path, command, timeout=60)  # type: ignore[arg-type]
    assert report.exit_code == 127
    assert "not found" in report.output
    assert report.source == "exit_code"
    assert not report.green


def test_collection_error_names_the_broken_file_and_line(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "src/broken.py": "x = 1\n\ndef oops(:\n    pass\n",
            "tests/test_broken.py": "from broken import oops\n\ndef test_it():\n    oops()\n",
            "tests/test_missing.py": "import repairloop_missing_pkg\n",
            "tests/test_fine.py": "def test_fine():\n    assert True\n",
        },
    )
    report = run_tests(root, PYTEST, pythonpath=SRC, timeout=120)
    assert not report.green
    broken = result_for(report, "tests/test_broken.py")
    assert broken.outcome is TestOutcome.ERROR and broken.phase == "collect"
    assert broken.exc_type == "SyntaxError"
    assert broken.frames[-1].path == "src/broken.py" and broken.frames[-1].line == 3
    missing = result_for(report, "tests/test_missing.py")
    assert missing.exc_type == "ModuleNotFoundError"
    assert "repairloop_missing_pkg" in missing.message
    # --continue-on-collection-errors: the healthy module still ran.
    assert result_for(report, "tests/test_fine.py::test_fine").outcome is TestOutcome.PASSED


def test_missing_fixture_is_a_setup_error(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "tests/test_fx.py": """
        def test_needs(no_such_fixture):
            pass
    """
        },
    )
    report = run_tests(root, PYTEST, timeout=120)
    result = result_for(report, "tests/test_fx.py::test_needs")
    assert result.outcome is TestOutcome.ERROR and result.phase == "setup"
    assert result.exc_type == "FixtureLookupError"
    assert "fixture 'no_such_fixture' not found" in result.message
    assert result.frames[0].path == "tests/test_fx.py"


def test_setup_and_teardown_exceptions_are_errors(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "tests/test_fx.py": """
        import pytest

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup exploded")

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown exploded")

        def test_setup(broken_setup):
            pass

        def test_teardown(broken_teardown):
            pass

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False
    """
        },
    )
    report = run_tests(root, PYTEST, timeout=120)
    setup = result_for(report, "tests/test_fx.py::test_setup")
    assert (setup.outcome, setup.phase) == (TestOutcome.ERROR, "setup")
    assert setup.exc_type == "RuntimeError"
    teardown = result_for(report, "tests/test_fx.py::test_teardown")
    assert (teardown.outcome, teardown.phase) == (TestOutcome.ERROR, "teardown")
    assert teardown.message == "teardown exploded"
    assert result_for(report, "tests/test_fx.py::test_xfail").outcome is TestOutcome.XFAILED


def test_targeted_rerun_runs_only_the_given_ids(tmp_path: Path) -> None:
    root = write_project(tmp_path, CALC)
    report = run_tests(
        root, PYTEST, pythonpath=SRC, timeout=120, test_ids=["tests/test_calc.py::test_mean"]
    )
    assert [r.test_id for r in report.results] == ["tests/test_calc.py::test_mean"]
    assert report.collected == 1
    assert report.command[-1] == "tests/test_calc.py::test_mean"


SET_IDS = """
    import os

    import pytest

    NAMES = {"name%d" % i for i in range(16)}


    @pytest.mark.parametrize("name,value", [(n, object()) for n in NAMES])
    def test_each(name, value):
        pass


    def test_seed():
        assert os.environ["PYTHONHASHSEED"] == os.environ["EXPECTED_SEED"]
"""


def test_ids_built_from_a_set_are_the_same_in_every_run(tmp_path: Path) -> None:
    """A parametrize id holding an object's position in a set (``name3-value7``) changes with
    string hashing; runs get a fixed PYTHONHASHSEED, so every run names the same tests, unless
    the user set a seed, which is kept."""
    root = write_project(tmp_path, {"tests/test_ids.py": SET_IDS})
    base = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    runs = [
        run_tests(root, PYTEST, timeout=120, env={**base, "EXPECTED_SEED": "0"}) for _ in range(3)
    ]
    assert all(r.green and r.collected == 17 for r in runs)
    assert runs[0].passed_ids == runs[1].passed_ids == runs[2].passed_ids
    own = run_tests(
        root, PYTEST, timeout=120, env={**base, "PYTHONHASHSEED": "7", "EXPECTED_SEED": "7"}
    )
    assert own.green


def test_hanging_test_is_killed_with_its_forked_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    root = write_project(
        tmp_path / "proj",
        {
            "tests/test_hang.py": f"""
        import subprocess, sys, time

        def test_first():
            assert True

        def test_hangs():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(str(child.pid))
            time.sleep(600)
    """
        },
    )
    report = run_tests(root, PYTEST, timeout=2)
    assert report.timed_out and report.exit_code is None
    assert not report.green
    assert report.seconds < 60
    assert "timed out after 2 s" in report.output
    # What finished before the kill is still known, and the running test is named.
    assert result_for(report, "tests/test_hang.py::test_first").outcome is TestOutcome.PASSED
    hung = result_for(report, "tests/test_hang.py::test_hangs")
    assert hung.outcome is TestOutcome.ERROR and hung.exc_type == "Timeout"
    assert wait_gone(read_pid(pid_file))


def test_grandchild_of_a_test_does_not_keep_the_run_alive(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    root = write_project(
        tmp_path / "proj",
        {
            "tests/test_fork.py": f"""
        import subprocess, sys

        def test_forks():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(str(child.pid))
    """
        },
    )
    # -s: no capture, so the grandchild holds the very pipe the runner reads.
    report = run_tests(root, PYTEST + ("-s",), timeout=300)
    assert report.exit_code == 0 and report.green
    assert report.seconds < 60
    assert wait_gone(read_pid(pid_file))


def test_huge_and_undecodable_output_is_capped_and_kept(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "tests/test_noisy.py": """
        import os

        def test_noisy():
            os.write(1, b"START \\xff\\xfe\\n")
            for _ in range(5000):
                os.write(1, b"y" * 1023 + b"\\n")
            os.write(1, b"DONE\\n")
    """
        },
    )
    report = run_tests(root, PYTEST + ("-s",), timeout=120, output_limit=20_000)
    assert report.green
    assert len(report.output) < 21_000
    assert "START \\xff\\xfe" in report.output
    assert "bytes of output dropped" in report.output
    assert "1 passed" in report.output  # the tail survives


def test_shell_command_running_pytest_underneath_still_gets_plugin_results(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path, CALC)
    command = f"cd . && {PYTHON} -m pytest -q tests"
    assert not is_pytest_command(command)
    report = run_tests(root, command, pythonpath=SRC, timeout=120)
    assert report.source == "plugin"
    assert result_for(report, "tests/test_calc.py::test_mean").exc_type == "AssertionError"


def test_junit_xml_is_used_when_the_plugin_is_off(tmp_path: Path) -> None:
    root = write_project(tmp_path, {**CALC, "tests/test_syntax.py": "def broken(:\n"})
    command = (
        f"cd . && {PYTHON} -m pytest -q -p no:repairloop_pytest_plugin"
        " --continue-on-collection-errors --junitxml=out/junit.xml"
    )
    report = run_tests(root, command, pythonpath=SRC, junit_xml="out/junit.xml", timeout=120)
    assert report.source == "junit"
    assert report.collected == 3
    mean = result_for(report, "tests/test_calc.py::test_mean")
    assert mean.outcome is TestOutcome.FAILED and mean.exc_type == "AssertionError"
    assert Frame("tests/test_calc.py", 9, "") in mean.frames
    syntax = result_for(report, "tests/test_syntax.py")
    assert syntax.phase == "collect" and syntax.exc_type == "SyntaxError"
    assert (syntax.frames[-1].path, syntax.frames[-1].line) == ("tests/test_syntax.py", 1)
    assert result_for(report, "tests/test_calc.py::test_add").outcome is TestOutcome.PASSED
    assert not report.green


def test_a_junit_xml_the_command_never_wrote_is_said(tmp_path: Path) -> None:
    # A new user's trial: `--junit-xml nosuch.xml` with a command that writes none said nothing.
    root = write_project(tmp_path, CALC)
    report = run_tests(root, "sh -c 'exit 1'", junit_xml="nosuch.xml", timeout=60)
    assert report.source == "exit_code" and not report.results
    assert "wrote no JUnit XML at nosuch.xml (junit_xml)" in report.output


def test_junit_from_another_runner_uses_the_type_attribute(tmp_path: Path) -> None:
    xml = tmp_path / "report.xml"
    xml.write_text(
        '<testsuite tests="3">'
        '<testcase classname="pkg.MathTest" name="adds" time="0.5"/>'
        '<testcase classname="pkg.MathTest" name="divides">'
        '<failure type="java.lang.ArithmeticException" message="/ by zero">trace</failure>'
        "</testcase>"
        '<testcase classname="pkg.MathTest" name="later"><skipped/></testcase>'
        "</testsuite>"
    )
    parsed = read_junit(xml, tmp_path)
    assert parsed is not None and parsed.collected == 3
    by_id = {r.test_id: r for r in parsed.results}
    failed = by_id["pkg.MathTest::divides"]
    assert (failed.outcome, failed.exc_type, failed.message) == (
        TestOutcome.FAILED,
        "ArithmeticException",
        "/ by zero",
    )
    assert by_id["pkg.MathTest::adds"].duration == 0.5
    assert by_id["pkg.MathTest::later"].outcome is TestOutcome.SKIPPED


def test_truncated_junit_reads_as_absent(tmp_path: Path) -> None:
    xml = tmp_path / "cut.xml"
    xml.write_text('<testsuite tests="3"><testcase classname="a" name="b">')
    assert read_junit(xml, tmp_path) is None
    assert read_junit(tmp_path / "missing.xml", tmp_path) is None


def test_per_test_coverage_contexts_name_the_failing_test_on_the_buggy_line(
    tmp_path: Path,
) -> None:
    pytest.importorskip("coverage")
    from coverage import CoverageData

    root = write_project(tmp_path, CALC)
    report = run_tests(root, PYTEST, pythonpath=SRC, coverage_source=["src"], timeout=120)
    assert report.coverage_file is not None
    try:
        data = CoverageData(report.coverage_file)
        data.read()
        calc = next(f for f in data.measured_files() if f.endswith("calc.py"))
        buggy = data.contexts_by_lineno(calc)[7]  # return sum(values) / (len(values) + 1)
        assert "tests/test_calc.py::test_mean" in buggy
        assert "tests/test_calc.py::test_add" not in buggy
        assert "tests/test_calc.py::test_add" in data.contexts_by_lineno(calc)[2]
    finally:
        shutil.rmtree(Path(report.coverage_file).parent, ignore_errors=True)


def test_run_goes_on_when_coverage_is_not_importable(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            **CALC,
            "shadow/coverage.py": "raise ImportError('no coverage in this environment')\n",
        },
    )
    report = run_tests(
        root, PYTEST, pythonpath=(Path("shadow"), *SRC), coverage_source=["src"], timeout=120
    )
    try:  # the plugin's own line tracer takes over (tests/test_line_tracer.py)
        assert report.coverage_file is not None and report.coverage_file.endswith(
            "repairloop-lines.jsonl"
        )
        assert report.source == "plugin" and report.collected == 3
        assert "per-test coverage was not recorded" not in report.output
    finally:
        if report.coverage_file:
            shutil.rmtree(Path(report.coverage_file).parent, ignore_errors=True)


def test_workspace_source_roots_beat_an_installed_copy(tmp_path: Path) -> None:
    installed = write_project(tmp_path / "site", {"calc.py": "def add(a, b):\n    return 0\n"})
    root = write_project(tmp_path / "ws", CALC)
    env = {**os.environ, "PYTHONPATH": str(installed)}
    report = run_tests(
        root,
        PYTEST,
        env=env,
        pythonpath=SRC,
        timeout=120,
        test_ids=["tests/test_calc.py::test_add"],
    )
    assert report.green, report.output[-2000:]


def test_test_process_environment_is_quiet_and_nested_runs_stay_out(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "tests/test_env.py": """
        import os, sys

        def test_env():
            assert os.environ["NO_COLOR"] == "1"
            assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1"
            # popped by the plugin so a pytest started by a test cannot write our results
            assert "REPAIRLOOP_RESULTS" not in os.environ
    """
        },
    )
    report = run_tests(root, PYTEST, timeout=120)
    assert report.green, report.output[-2000:]
    assert not list(root.rglob("__pycache__"))


def test_plugin_loads_from_its_directory_without_repairloop(tmp_path: Path) -> None:
    root = write_project(
        tmp_path,
        {
            "tests/test_origin.py": """
        import os, sys

        def test_origin():
            plugin = sys.modules["repairloop_pytest_plugin"]
            assert os.path.dirname(plugin.__file__) == os.environ["EXPECTED_PLUGIN_DIR"]
            assert not [m for m in sys.modules if m.split(".")[0] == "repairloop"]
    """
        },
    )
    env = {**os.environ, "PYTHONNOUSERSITE": "1", "EXPECTED_PLUGIN_DIR": str(PLUGIN_DIR)}
    env.pop("PYTHONPATH", None)
    report = run_tests(root, PYTEST, env=env, timeout=120)
    assert report.source == "plugin"
    assert report.green, report.output[-2000:]


@pytest.mark.parametrize(
    "module", sorted(p.name for p in PLUGIN_DIR.glob("repairloop_pytest_plugin*.py"))
)
def test_plugin_imports_only_stdlib_and_pytest_at_module_level(module: str) -> None:
    tree = ast.parse((PLUGIN_DIR / module).read_text(encoding="utf-8"))
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or pytest.skip("needs Python 3.10+")
    siblings = {p.stem for p in PLUGIN_DIR.glob("repairloop_pytest_plugin*.py")}
    allowed = stdlib | {"pytest", "__future__"} | siblings
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top_level if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in top_level if isinstance(n, ast.ImportFrom)]
    assert names and all(name.split(".")[0] in allowed for name in names), names
    # Anything else (coverage, pytest's own JUnit writer) is imported inside a function.
    every = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    nested = [n for n in every if n not in top_level]
    nested_names = {
        a.name.split(".")[0] for n in nested if isinstance(n, ast.Import) for a in n.names
    }
    nested_names |= {
        (n.module or "").split(".")[0] for n in nested if isinstance(n, ast.ImportFrom)
    }
    assert nested_names - stdlib - set(siblings) <= {"coverage", "_pytest"}, nested_names


def test_project_python_is_the_venv_interpreter_unresolved(tmp_path: Path) -> None:
    assert (
        project_python(tmp_path) == sys.executable
    )  # the python on PATH (conftest puts ours first)
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    assert project_python(tmp_path) == str(venv_bin / "python")


def test_default_test_command_needs_tests_or_pytest_config(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as raised:
        default_test_command(tmp_path)
    assert (
        "found no tests" in raised.value.message
    )  # what was missing, not only what it means (no command)
    assert "--test-cmd" in raised.value.hint
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    assert default_test_command(tmp_path) == (sys.executable, "-m", "pytest")


def test_default_test_command_finds_nested_test_files_but_not_in_venvs(tmp_path: Path) -> None:
    venv = tmp_path / "env" / "lib"
    venv.mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "test_inside_venv.py").write_text("")
    with pytest.raises(ProjectError):
        default_test_command(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "calc_test.py").write_text("")
    assert default_test_command(tmp_path)[1:] == ("-m", "pytest")


@pytest.mark.parametrize(
    "command, expected",
    [
        (["pytest"], True),
        (["py.test", "-x"], True),
        (["python", "-m", "pytest"], True),
        (["/opt/venv/bin/python3.11", "-m", "pytest", "-q"], True),
        ("python3 -m pytest tests", True),
        ("FOO=1 pytest -q", True),
        ("python -mpytest", True),
        ("make test", False),
        ("pytest | tee log", False),
        ("cd src && pytest", False),
        (["python", "run_tests.py"], False),
        (["python", "-m", "unittest"], False),
        ("pytest 'unbalanced", False),
    ],
)
def test_is_pytest_command(command: object, expected: bool) -> None:
    assert is_pytest_command(command) is expected  # type: ignore[arg-type]


def test_project_python_prefers_the_active_virtualenv_then_a_path_python_with_pytest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    active = tmp_path / "active"
    (active / "bin").mkdir(parents=True)
    (active / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.setenv("VIRTUAL_ENV", str(active))
    assert project_python(tmp_path / "project") == str(active / "bin" / "python")
    monkeypatch.delenv("VIRTUAL_ENV")
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name in ("python", "python3"):  # a PATH python without pytest is passed over
        (fake / name).write_text("#!/bin/sh\nexit 1\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    assert project_python(tmp_path / "project") == sys.executable
