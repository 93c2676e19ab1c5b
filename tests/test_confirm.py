"""Flaky before spending: failing tests re-run in the suite's order and alone
(``repairloop.loop.flaky``).

Real projects in temporary directories and real pytest runs through the
suite the loop uses; nothing of repairloop is mocked.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Dict

from repairloop.loop import suite as suite_module
from repairloop.loop.flaky import confirm_failures, with_flaky
from repairloop.settings import Settings
from repairloop.types import Failure, FailureKind


def project(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def suite_for(root: Path, command: str = "") -> suite_module.TestSuite:
    # unconfined: the flaky tests here keep state in files outside the tree, which the sandbox
    # forbids
    settings = Settings(
        test_cmd=command or f"{sys.executable} -m pytest -q", per_test_timeout=0, sandbox="none"
    )
    return suite_module.TestSuite.for_project(
        settings,
        root,
        {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"},
        lambda: 120.0,
    )


# The polluter sits among innocent tests, so finding it takes bisection.
POLLUTED = {
    "state.py": "SETTINGS = {'mode': 'safe'}\n",
    "tests/test_a.py": """
        import state

        def test_a1():
            pass

        def test_a2():
            pass

        def test_switches_mode():
            state.SETTINGS['mode'] = 'fast'

        def test_a3():
            pass
    """,
    "tests/test_b.py": """
        import state

        def test_b1():
            pass

        def test_default_mode():
            assert state.SETTINGS['mode'] == 'safe'
    """,
}


def test_a_test_that_passes_alone_but_fails_in_order_is_order_dependent_with_its_polluter(
    tmp_path: Path,
) -> None:
    root = project(tmp_path / "p", POLLUTED)
    suite = suite_for(root)
    baseline = suite.run(root)
    assert baseline.failing_ids == ("tests/test_b.py::test_default_mode",)
    found = confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=1)
    assert found.confirmed == ()
    (flaky,) = found.flaky
    assert flaky.test_id == "tests/test_b.py::test_default_mode"
    assert (
        flaky.reason.startswith("order-dependent")
        and "tests/test_a.py::test_switches_mode" in flaky.reason
    )
    assert flaky.command.endswith(
        "tests/test_a.py::test_switches_mode tests/test_b.py::test_default_mode"
    )
    # the command shows it: run as given, the test fails
    shown = suite.run(root, flaky.command.split()[-2:])
    assert "tests/test_b.py::test_default_mode" in shown.failing_ids


def test_a_test_whose_outcome_changes_between_identical_runs_is_flaky(tmp_path: Path) -> None:
    flag = tmp_path / "ran-once"
    root = project(
        tmp_path / "p",
        {
            "tests/test_x.py": f"""
        import os

        def test_first_run_fails():
            first = not os.path.exists({str(flag)!r})
            open({str(flag)!r}, "w").close()
            assert not first
    """
        },
    )
    suite = suite_for(root)
    baseline = suite.run(root)
    found = confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=1)
    assert [f.reason.split(":")[0] for f in found.flaky] == [
        "outcome changes between identical runs"
    ]


def test_a_real_failure_is_confirmed_and_costs_one_ordered_and_one_alone_run_per_round(
    tmp_path: Path,
) -> None:
    root = project(
        tmp_path / "p",
        {"tests/test_x.py": "def test_bad():\n    assert 1 == 2\n\ndef test_ok():\n    pass\n"},
    )
    suite = suite_for(root)
    baseline = suite.run(root)
    found = confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=2)
    assert found.flaky == () and found.confirmed == ("tests/test_x.py::test_bad",)
    assert found.runs == 4
    assert confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=0).runs == 0


def test_a_command_that_takes_no_test_ids_is_rerun_whole(tmp_path: Path) -> None:
    flag = tmp_path / "ran-once"
    root = project(
        tmp_path / "p",
        {
            "tests/test_x.py": f"""
        import os

        def test_first_run_fails():
            first = not os.path.exists({str(flag)!r})
            open({str(flag)!r}, "w").close()
            assert not first
    """
        },
    )
    # not a pytest command: no ids appended
    suite = suite_for(root, f"cd {root} && {sys.executable} -m pytest -q")
    baseline = suite.run(root)
    found = confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=1)
    assert found.runs == 1 and [f.test_id for f in found.flaky] == [
        "tests/test_x.py::test_first_run_fails"
    ]


def test_a_passing_test_that_fails_on_a_rerun_is_reported_as_unstable(tmp_path: Path) -> None:
    flag = tmp_path / "ran-once"
    root = project(
        tmp_path / "p",
        {
            "tests/test_x.py": f"""
        import os

        def test_bad():
            assert False

        def test_second_run_fails():
            first = not os.path.exists({str(flag)!r})
            open({str(flag)!r}, "a").close()
            assert first
    """
        },
    )
    suite = suite_for(root)
    baseline = suite.run(root)
    found = confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=1)
    assert found.confirmed == ("tests/test_x.py::test_bad",) and found.unstable == (
        "tests/test_x.py::test_second_run_fails",
    )


def test_flaky_failures_get_the_flaky_kind_and_the_command_in_their_hint(tmp_path: Path) -> None:
    root = project(tmp_path / "p", POLLUTED)
    suite = suite_for(root)
    baseline = suite.run(root)
    found = confirm_failures(suite, root, baseline.failing_ids, baseline, confirm_runs=1)
    failures = (
        Failure(
            "tests/test_b.py::test_default_mode", FailureKind.LOGIC, True, "assert 'fast' == 'safe'"
        ),
        Failure("tests/test_c.py::test_other", FailureKind.LOGIC, True, "assert 1 == 2"),
    )
    marked = with_flaky(failures, found)
    assert [(f.kind, f.retryable) for f in marked] == [
        (FailureKind.FLAKY, False),
        (FailureKind.LOGIC, True),
    ]
    assert "order-dependent" in marked[0].hint and "test_switches_mode" in marked[0].hint
