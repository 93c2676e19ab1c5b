"""The canned runner tells the loop what the real one would: its scripts are pinned to real runs.

Tests of the loop's decisions run on ``tests/canned_runner.py`` with the fixture projects'
results in ``tests/canned_projects.py``. Here each script's report is compared with a real
run of the fixture (``TestSuite``, the plugin, the sandbox) at its start state, and with
its fix written in, so the canned results cannot drift from what pytest reports; and the
canned runner answers the loop's other questions the way the real one does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from canned_projects import SCRIPTS, canned
from canned_runner import TIMED_OUT, NoWarm, Tree, report_of
from test_e2e_run import PRICE_FIX, RIGHT, WRONG

from repairloop.journal import Journal
from repairloop.loop.prefilter import JournalledWarm
from repairloop.loop.suite import TestSuite
from repairloop.settings import Settings
from repairloop.types import Frame, TestReport

Shape = Tuple[str, str, str, Optional[str], str, Tuple[Frame, ...]]


def shape(report: TestReport) -> Tuple[Optional[int], bool, List[Shape]]:
    """What the loop reads of a report: exit code, green, and per test its id, outcome, phase,
    exception, the message's first line and the frames."""
    rows = [
        (
            r.test_id,
            r.outcome.value,
            r.phase,
            r.exc_type,
            (r.message.splitlines() or [""])[0],
            r.frames,
        )
        for r in report.results
    ]
    return report.exit_code, report.green, rows


def real_report(project: Path) -> TestReport:
    return TestSuite.for_project(Settings(), project, dict(os.environ), lambda: 120.0).run(project)


def patched(project: Path, diff: str) -> None:
    """Write a unified diff's one-line changes into ``project`` (the fixes used by the loop
    tests)."""
    path = project / diff.split("\n", 2)[1].removeprefix("+++ b/")
    lines = diff.splitlines()
    old = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    new = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    text = path.read_text()
    for before, after in zip(old, new):
        assert before in text
        text = text.replace(before, after)
    path.write_text(text)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(SCRIPTS))
def test_each_script_reports_what_the_fixture_really_reports(case: str, make_project) -> None:
    project = make_project(case)
    assert shape(report_of(SCRIPTS[case](Tree(project)), (), 0.01)) == shape(real_report(project))


@pytest.mark.slow
@pytest.mark.parametrize(
    "case, diff", [("off_by_one", RIGHT), ("off_by_one", WRONG), ("shared_root_cause", PRICE_FIX)]
)
def test_a_candidate_changes_the_canned_results_as_it_changes_the_real_ones(
    case: str, diff: str, make_project
) -> None:
    project = make_project(case)
    patched(project, diff)
    assert shape(report_of(SCRIPTS[case](Tree(project)), (), 0.01)) == shape(real_report(project))


def test_test_ids_select_as_pytest_does() -> None:
    verdicts = SCRIPTS["syntax_error"](Tree(Path("/nonexistent")))
    report = report_of(verdicts, ["tests/test_shapes.py"], 0.01)
    assert [r.test_id for r in report.results] == ["tests/test_shapes.py"] and report.exit_code == 1
    assert report.command[-1] == "tests/test_shapes.py"
    assert [r.test_id for r in report_of(verdicts, ["tests/test_units.py"], 0.01).results] == [
        "tests/test_units.py::test_inches_to_cm"
    ]


def test_a_timed_out_run_is_killed_with_no_results() -> None:
    report = report_of(TIMED_OUT, (), 4.0)
    assert report.timed_out and report.exit_code is None and not report.results and not report.green


def test_the_runner_answers_the_loops_other_questions(tmp_path: Path) -> None:
    runner = canned("off_by_one")(Settings(test_timeout=30.0), tmp_path, {}, lambda: 10.0, None)
    assert runner.time_limit() == 10.0 and runner.time_limit(past_deadline=True) == 30.0
    assert runner.for_candidates(runner.run(tmp_path)) == (runner, "") and runner.plain() is runner
    assert runner.redirected == () and not runner.sandbox_status.confined
    assert runner.interpreter is not None and '"found": false' in (
        runner.interpreter(["-c", "probe", "cv2", "opencv-python"], 5.0) or ""
    )


def test_its_warm_process_is_refused_and_journalled_as_the_real_one_is(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run")
    warm = JournalledWarm(NoWarm(), journal, "loop")
    assert not warm.ready() and warm.run(["t"], [], 5.0) is None
    warm.close()
    events = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    assert (
        len(events) == 1 and '"action": "refused"' in events[0] and "no warm process" in events[0]
    )
