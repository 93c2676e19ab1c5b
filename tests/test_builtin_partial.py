"""The offline engine with an unrelated broken test: a partial fix is still a fix.

README ("How a run stops"): a candidate is kept when it fixes at least one
failing test and breaks none. The engine must judge candidates the same way, or
one test nobody can repair (``assert 1 == 2``) blocks the fix of a real bug.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Dict, Tuple

import pytest
from conftest import init_repo

from repairloop.cli import main
from repairloop.propose.builtin.mutation import Mutation
from repairloop.propose.builtin.scratch import ValidationPlan, Verdict, judge_suite, judge_targets
from repairloop.propose.builtin.search import Candidate, Result
from repairloop.settings import DEFAULT_MODEL_BY_KEY
from repairloop.types import TestOutcome, TestReport, TestResult

GROUP, OTHER, PASSING = (
    "tests/test_a.py::test_bug",
    "tests/test_odd.py::test_odd",
    "tests/test_a.py::test_ok",
)


def report(outcomes: Dict[str, TestOutcome], exit_code: int = 1) -> TestReport:
    results = tuple(TestResult(test_id, outcome) for test_id, outcome in outcomes.items())
    return TestReport(("pytest",), exit_code, results=results, source="plugin")


PLAN = ValidationPlan(
    targets=(GROUP, OTHER),
    allowed_failing=frozenset(),
    target_timeout=10.0,
    suite_timeout=10.0,
    group=(GROUP,),
)
P, F = TestOutcome.PASSED, TestOutcome.FAILED


def test_fixing_one_failing_test_while_another_stays_failing_is_plausible() -> None:
    verdict = judge_suite(report({GROUP: P, OTHER: F, PASSING: P}), PLAN, 10.0)
    assert verdict.status == "plausible" and verdict.fixed == 1 and verdict.missed_group == 0
    # Plausible, but not complete: the search goes on for a patch that fixes every failing test.
    assert verdict.missed == 1 and not verdict.complete and OTHER in verdict.reason
    everything = judge_suite(report({GROUP: P, OTHER: P, PASSING: P}, exit_code=0), PLAN, 10.0)
    assert everything.complete and everything.missed == 0
    # The other failing test fixed instead of the group's: plausible too, but not complete.
    other_only = judge_suite(report({GROUP: F, OTHER: P, PASSING: P}), PLAN, 10.0)
    assert (
        other_only.status == "plausible"
        and other_only.missed_group == 1
        and not other_only.complete
    )


def test_a_partial_fix_that_breaks_a_passing_test_is_rejected() -> None:
    verdict = judge_suite(report({GROUP: P, OTHER: F, PASSING: F}), PLAN, 10.0)
    assert verdict.status == "broke_passing" and PASSING in verdict.reason


def test_fixing_no_failing_test_is_not_plausible() -> None:
    assert judge_suite(report({GROUP: F, OTHER: F, PASSING: P}), PLAN, 10.0).status == "failing"
    targets = judge_targets(report({GROUP: F, OTHER: F}), PLAN.targets, 10.0)
    assert targets.status == "failing"
    assert judge_targets(report({GROUP: P, OTHER: F}), PLAN.targets, 10.0).status == "partial"


def result(line: int, verdict: Verdict, size: Tuple[int, int]) -> Result:
    mutation = Mutation("comparison", "m.py", line, 0, 1, ">=", 0.9, f"line {line}")
    return Result(Candidate((mutation,), 0.5, 0.9, line), verdict, diff=f"diff {line}", size=size)


def test_the_best_patch_fixes_every_failing_test_then_the_group() -> None:
    small_other = result(1, Verdict("plausible", "", fixed=1, missed_group=1, missed=1), (2, 1))
    group_fix = result(2, Verdict("plausible", "", fixed=1, missed_group=0, missed=1), (4, 3))
    both = result(3, Verdict("plausible", "", fixed=2, missed_group=0, missed=0), (6, 5))
    ranked = sorted([small_other, group_fix, both], key=Result.choice_key)
    assert [r.candidate.order for r in ranked] == [3, 2, 1]


@pytest.mark.slow
def test_run_fixes_the_bug_and_leaves_the_unrelated_failing_test(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    for key, _ in DEFAULT_MODEL_BY_KEY:  # no provider key: the offline engine is the whole chain
        monkeypatch.delenv(key, raising=False)
    project = tmp_path / "people"
    (project / "tests").mkdir(parents=True)
    (project / "people.py").write_text("def is_adult(age):\n    return age > 18\n")
    (project / "tests" / "test_people.py").write_text(
        textwrap.dedent("""\
        from people import is_adult


        def test_eighteen():
            assert is_adult(18)


        def test_child():
            assert not is_adult(17)
    """)
    )
    (project / "tests" / "test_odd.py").write_text("def test_odd():\n    assert 1 == 2\n")
    init_repo(project)
    status_before = subprocess.run(
        ["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True
    ).stdout

    code = main(["run", str(project), "--json"])
    doc = json.loads(capsys.readouterr().out)

    assert doc["outcome"] == "partially_fixed", doc["stop_detail"]
    assert code == 1
    assert doc["fixed_tests"] == ["tests/test_people.py::test_eighteen"]
    assert doc["still_failing"] == ["tests/test_odd.py::test_odd"]
    kept = [it for it in doc["iterations"] if it["decision"] == "kept"]
    assert len(kept) == 1 and kept[0]["engine"] == "builtin"
    assert "+    return age >= 18" in doc["patch"].splitlines()
    assert "tests/" not in "".join(
        line for line in doc["patch"].splitlines() if line.startswith("+++")
    )
    assert doc["stop_detail"].startswith(
        "nothing left to try: the offline engine found no further patch"
    )
    # No --apply: the user's tree is untouched.
    assert (project / "people.py").read_text() == "def is_adult(age):\n    return age > 18\n"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True
    ).stdout
    assert status == status_before
