"""Test ids that move between runs: a parametrized list whose order is not fixed (a set of tuples
holding None hashes by address before Python 3.12) gives made-up ids (``expected6``) that change
from run to run; a candidate's full run must still be compared with the baseline's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer

from repairloop.cli import main
from repairloop.loop.test_ids import reconciled, stable_key, unmatched
from repairloop.types import ResultSource, TestOutcome, TestReport, TestResult, judge_run

SET_OF_TUPLES = """
    import pytest

    CASES = {(n, None if n % 3 else object(), str(n)) for n in range(9)}


    @pytest.mark.parametrize("number,expected,text", CASES)
    def test_case(number, expected, text):
        pass
"""


def test_made_up_parameter_ids_lose_their_position() -> None:
    assert stable_key("t.py::test_f[4-19-expected6-%C]") == "t.py::test_f[4-19-expected#-%C]"
    assert stable_key("t.py::test_f[4-19-expected18-%C]") == "t.py::test_f[4-19-expected#-%C]"
    assert stable_key("t.py::test_f[value3]") == "t.py::test_f[value#]"
    assert stable_key("t.py::test_plain") == "t.py::test_plain"
    assert stable_key("t.py::test_f[1.5-abc]") == "t.py::test_f[1.5-abc]"


def test_moved_ids_match_one_for_one_and_nothing_else_does() -> None:
    """As many ids of one stable key missing as new ones are the same tests; a test that is gone
    with nothing standing for it stays missing."""
    missing = ["t.py::test_f[a-obj1]", "t.py::test_f[b-obj0]", "t.py::test_gone"]
    new = ["t.py::test_f[a-obj0]", "t.py::test_f[b-obj1]"]
    assert unmatched(missing, new) == ["t.py::test_gone"]
    assert unmatched(missing, new[:1]) == ["t.py::test_f[b-obj0]", "t.py::test_gone"]
    assert unmatched(["t.py::test_f[x1]", "t.py::test_f[x2]"], ["t.py::test_f[x3]"]) == [
        "t.py::test_f[x1]",
        "t.py::test_f[x2]",
    ]


def _ids(root: Path) -> set:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return {line for line in out.splitlines() if "::" in line}


def test_real_made_up_ids_move_and_their_stable_keys_do_not(tmp_path: Path) -> None:
    """The shape seen on isodate: ids collected twice from an unchanged tree may differ, their
    stable keys never do."""
    (tmp_path / "test_cases.py").write_text(textwrap.dedent(SET_OF_TUPLES))
    runs = [_ids(tmp_path) for _ in range(4)]
    assert all(len(r) == 9 for r in runs)
    assert len({frozenset(r) for r in runs}) > 1  # the ids did move (9! orders)
    keys = [sorted(stable_key(t) for t in r) for r in runs]
    assert keys[0] == keys[1] == keys[2] == keys[3]
    for before, after in zip(runs, runs[1:]):
        assert unmatched(sorted(before - after), sorted(after - before)) == []


def _report(outcomes: Dict[str, str]) -> TestReport:
    results = tuple(TestResult(t, TestOutcome(o)) for t, o in outcomes.items())
    code = 1 if "failed" in outcomes.values() else 0
    return TestReport(("pytest",), code, results, source=ResultSource.PLUGIN)


def test_moved_ids_are_renamed_so_a_fix_counts_and_a_break_shows() -> None:
    """A group of one stable key: two tests passed at the baseline, one failed; in the next run
    all three ids moved. All passing: the failing test is fixed. One failing: nothing fixed or
    broken can be claimed. Two failing: one that passed is broken."""
    baseline = frozenset({"t.py::test_f[a-obj0]", "t.py::test_f[a-obj1]", "t.py::test_f[a-obj2]"})
    failing = ("t.py::test_f[a-obj1]",)
    moved = ("t.py::test_f[a-obj3]", "t.py::test_f[a-obj4]", "t.py::test_f[a-obj5]")
    all_pass, n = reconciled(_report(dict.fromkeys(moved, "passed")), baseline, failing)
    assert n == 3 and {r.test_id for r in all_pass.results} == baseline
    assert judge_run(all_pass, failing).fixed == failing
    one_fails, _ = reconciled(
        _report({moved[0]: "passed", moved[1]: "failed", moved[2]: "passed"}), baseline, failing
    )
    verdict = judge_run(one_fails, failing)
    assert verdict.fixed == () and verdict.broke == ()
    two_fail, _ = reconciled(
        _report({moved[0]: "failed", moved[1]: "failed", moved[2]: "passed"}), baseline, failing
    )
    assert len(judge_run(two_fail, failing).broke) == 1
    unchanged = _report(dict.fromkeys(baseline, "passed"))
    assert reconciled(unchanged, baseline, failing) == (unchanged, 0)


BY_OBJECTS = """
    import pytest

    from calc import double

    CASES = {(n, object(), str(n)) for n in range(20)}


    @pytest.mark.parametrize("number,marker,text", CASES)
    def test_double(number, marker, text):
        assert double(number) == number * 2
"""

RIGHT = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def double(n):
-    return n * 2 if n != 4 else 9
+    return n * 2
"""


def test_a_failing_test_whose_id_moves_every_run_is_repaired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failing test's own id moves between runs (``marker7`` then ``marker12``): the
    confirmation must not call it flaky, the targeted run must not reject the fix for not running
    it, and the full run and the proof must count it fixed; the console says ids were matched."""
    root = tmp_path / "calc"
    root.mkdir()
    (root / "calc.py").write_text("def double(n):\n    return n * 2 if n != 4 else 9\n")
    (root / "test_calc.py").write_text(textwrap.dedent(BY_OBJECTS))
    init_repo(root)
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code = main(
            ["run", str(root), "--model", "openai/scripted", "--api-base", srv.base_url]
            + ["--no-builtin", "--test-cmd", command, "--json"]
        )
    out, _ = capsys.readouterr()
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed", doc
    assert "moved since the baseline" in doc["iterations"][0]["reason"]
