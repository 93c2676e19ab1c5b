"""What trying repairloop on real libraries showed (issue 14, items 1-4), end to end.

Each test runs ``repairloop run`` (offline: the builtin engine) or
``repairloop classify`` on a small project written here, through the real CLI,
with real pytest subprocesses in a real git repository.
"""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest
from conftest import init_repo

from repairloop.classify import classify_report
from repairloop.cli import main
from repairloop.loop.suite import TestSuite, per_test_seconds
from repairloop.settings import Settings
from repairloop.types import FailureKind, Frame, ResultSource, TestOutcome, TestReport, TestResult


def write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return init_repo(root)


def run_cli(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


UNITTEST_PROJECT = {
    "shop/__init__.py": "",
    "shop/prices.py": """
        def total(prices):
            result = 0
            for price in prices:
                result += price
            return result - 1
    """,
    "tests/__init__.py": "",
    "tests/test_prices.py": """
        import unittest

        from shop.prices import total


        class TotalTest(unittest.TestCase):
            def test_total(self):
                self.assertEqual(total([1, 2, 3]), 6)
    """,
}


@pytest.mark.slow
def test_the_console_says_when_fault_localisation_is_degraded(tmp_path: Path, capsys) -> None:
    # unittest: no pytest plugin runs, so no per-test line data is recorded.
    project = write(tmp_path / "shop", UNITTEST_PROJECT)
    command = f"{sys.executable} -m unittest discover -s tests -t ."
    _, out, err = run_cli(
        [
            "run",
            str(project),
            "--test-cmd",
            command,
            "--no-builtin",
            "--model",
            "builtin",
            "--timeout",
            "120",
            "--json",
        ],
        capsys,
    )
    doc = json.loads(out)
    assert "fault localisation degraded: the test run recorded no per-test line data" in err
    notes: List[str] = doc["notes"]
    assert any(n.startswith("fault localisation degraded") for n in notes), notes


# -- item 2: code that never returns (repaired end to end in test_misbehaving_tests.py) -----------


@pytest.mark.parametrize(
    "timeout, test_timeout, chosen",
    [
        (180.0, 300.0, 12.0),
        (900.0, 300.0, 60.0),
        (30.0, 300.0, 5.0),
        (3600.0, 20.0, 20.0),
    ],
)
def test_the_per_test_timeout_is_chosen_from_the_runs_budget(
    timeout: float, test_timeout: float, chosen: float
) -> None:
    seconds, said = per_test_seconds(Settings(timeout=timeout, test_timeout=test_timeout))
    assert seconds == chosen
    assert said.startswith(
        f"per-test timeout: {chosen:g} s, chosen from the run's {timeout:g} s budget"
    )


def test_a_per_test_timeout_the_user_sets_is_kept_and_zero_is_off() -> None:
    assert per_test_seconds(Settings(per_test_timeout=7)) == (7, "")
    assert per_test_seconds(Settings(per_test_timeout=0)) == (None, "")


def test_candidate_runs_stop_a_test_that_hung_at_the_baseline_early() -> None:
    suite = TestSuite(("pytest",), 300.0, None, {}, lambda: 100.0, per_test=60.0)
    baseline = TestReport(
        ("pytest",),
        1,
        results=(
            TestResult("t.py::fast", TestOutcome.PASSED, 0.01),
            TestResult("t.py::slow", TestOutcome.PASSED, 1.5),
            TestResult(
                "t.py::hangs",
                TestOutcome.FAILED,
                60.0,
                exc_type="Timeout",
                message="the test ran past the per-test timeout of 60 s (it used 59.80 s of CPU "
                "time)",
            ),
        ),
    )
    short, note = suite.for_candidates(baseline)
    assert short.per_test == 7.5 and suite.per_test == 60.0  # 5x the slowest passing test
    assert note.startswith(
        "1 test(s) ran past the per-test timeout at the baseline; candidate runs stop a test after "
        "7.5 s"
    )
    quick = replace(baseline, results=baseline.results[:1] + baseline.results[2:])
    assert suite.for_candidates(quick)[0].per_test == 2.0  # never below the floor
    assert replace(suite, per_test=None).for_candidates(baseline) == (
        replace(suite, per_test=None),
        "",
    )


def test_candidate_runs_keep_the_per_test_timeout_when_nothing_hung() -> None:
    """The short limit is for suites that hung at the baseline: an honest fix of a test slower
    than 5x the slowest passing one keeps the baseline's per-test timeout (seen on a held-out
    bench: a right fix of a slow test refused as timed out)."""
    suite = TestSuite(("pytest",), 300.0, None, {}, lambda: 100.0, per_test=60.0)
    baseline = TestReport(
        ("pytest",),
        1,
        results=(
            TestResult("t.py::fast", TestOutcome.PASSED, 0.01),
            TestResult("t.py::slow_and_wrong", TestOutcome.FAILED, 0.2, exc_type="AssertionError"),
        ),
    )
    assert suite.for_candidates(baseline) == (suite, "")


PLUGIN_FRAME = Frame("/opt/rl/runner/plugin/repairloop_pytest_plugin.py", 62, "alarm")
TEXTWRAP = Frame("/usr/lib/python3.11/textwrap.py", 340, "_wrap_chunks")


def per_test(used: float, *frames: Frame) -> FailureKind:
    message = f"the test ran past the per-test timeout of 2 s (it used {used:.2f} s of CPU time)"
    result = TestResult(
        "tests/test_a.py::test_a",
        TestOutcome.FAILED,
        exc_type="Timeout",
        message=message,
        frames=(Frame("tests/test_a.py", 3, "test_a"), *frames, PLUGIN_FRAME),
    )
    report = TestReport(("pytest",), 1, results=(result,), source=ResultSource.PLUGIN)
    return classify_report(report, Path("/nonexistent"))[0].kind


def test_a_test_stopped_while_computing_is_logic_wherever_the_alarm_landed() -> None:
    wrap = Frame("pkg/wrap.py", 28, "wrap")
    assert per_test(1.9, wrap) is FailureKind.LOGIC  # in the project's code
    assert (
        per_test(1.9, wrap, TEXTWRAP) is FailureKind.LOGIC
    )  # in a library the project's loop calls
    assert per_test(0.3, wrap, TEXTWRAP) is FailureKind.LOGIC  # on a busy machine (15% of a core)
    assert (
        per_test(0.0, wrap, Frame("/usr/lib/python3.11/socket.py", 700, "recv"))
        is FailureKind.TIMEOUT
    )  # waiting
    assert (
        per_test(0.0, wrap) is FailureKind.TIMEOUT
    )  # waiting in a C call made from the project's code
    assert (
        per_test(1.9, TEXTWRAP) is FailureKind.TIMEOUT
    )  # the test itself loops: no project code running
    assert per_test(1.9, Frame("tests/conftest.py", 5, "fixture"), TEXTWRAP) is FailureKind.TIMEOUT


# -- item 4: honest words on a partial result ----------------------------------------------------

TWO_BUGS = {
    "geo/__init__.py": "",
    "geo/shapes.py": """
        def area(width, height):
            return width * height + 1


        def label(name):
            return "shape " + name
    """,
    "tests/test_shapes.py": """
        from geo.shapes import area, label


        def test_area():
            assert area(2, 3) == 6


        def test_label():
            assert label("box") == "Shape: BOX (4 sides)"


        def test_square():
            assert area(1, 1) >= 1
    """,
}


@pytest.mark.slow
def test_a_partial_result_never_says_the_tests_pass(tmp_path: Path, capsys, monkeypatch) -> None:
    # The fix of area is the engine's 12th candidate; the default 2000 per search had it try 62
    # (pairs after the partial fix) and then all 66 for label, none of which can fix it.
    monkeypatch.setenv("REPAIRLOOP_BUILTIN_CANDIDATES", "20")
    project = write(tmp_path / "geo", TWO_BUGS)
    _, out, err = run_cli(["run", str(project), "--model", "builtin", "--timeout", "300"], capsys)
    said = " ".join((out + err).split())  # the console's panel wraps long lines
    assert "outcome: partially_fixed" in said, said
    assert "evidence: a partial fix: some failing tests pass with it, others still fail" in said
    assert "full suite passed" not in said and "the tests pass" not in said.replace(
        "no patch passes the tests", ""
    )


def test_the_evidence_of_a_partial_fix_never_says_the_tests_pass() -> None:
    from repairloop.types import Evidence
    from repairloop.types.run import Proof

    held, failed = (
        Proof(passed=True, held=2, required=2),
        Proof(passed=False, held=0, required=2, detail="flaky"),
    )
    for evidence in (
        Evidence(plausible=True, proof=held, partial=True),
        Evidence(plausible=True, partial=True),
        Evidence(plausible=True, proof=failed, partial=True),
    ):
        said = evidence.summary()
        assert said.startswith(
            "a partial fix: some failing tests pass with it, others still fail"
        ), said
        assert "the tests pass" not in said and "full suite passed" not in said
    assert "full suite passed 2 of 2" in Evidence(plausible=True, proof=held).summary()
    assert Evidence.from_json(Evidence(plausible=True, proof=held, partial=True).to_json()).partial
