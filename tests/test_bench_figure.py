"""``make bench``'s figure 6 says how many of the offline engine's plausible patches are correct.

The figure is built from ``bench --json`` rows (tests/bench/engine_figure.py,
tests/bench/correct_figure.py); these rows are written here, so the shares
and the checks are tested without running the engine.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

BENCH_SCRIPTS = Path(__file__).resolve().parent / "bench"
sys.path.insert(0, str(BENCH_SCRIPTS))

import engine_figure  # noqa: E402


def row(name: str, plausible: bool, correct: Optional[bool], same: Optional[bool] = None) -> Dict[str, Any]:
    """A row as ``bench --json`` writes it, with the limits figure 6 adds to it."""
    return {"name": name, "outcome": "fixed" if plausible else "not_fixed", "stop_reason": "success" if plausible else
            "no_model_left", "seconds": 10.0, "single_mutation": True, "edits_tests": False, "plausible": plausible,
            "correct": correct, "matches_reference": same, "limit": 120.0, "own_limit": 120.0,
            "judge_detail": "" if correct is not False else "1 of 4 hidden test(s) did not pass: tests/t_hidden.py::test_x"}


def figure(rows: List[Dict[str, Any]], fresh: Optional[List[Dict[str, Any]]] = None, half: Optional[float] = 150.0) -> Any:
    return engine_figure.engine_figure(Path("fixtures/bench"), 33, {"fresh": fresh or [], "warm": rows}, 60.0, half)


def test_figure_six_gives_the_plausible_and_the_correct_share() -> None:
    fig = figure([row("a", True, True, True), row("b", True, True, False), row("c", True, False, False),
                  row("d", False, None), row("e", True, None)])
    text = fig.markdown("this machine")
    assert "Plausible patches: 4 of 5 cases (80%)" in text
    assert "correct (passing the case's hidden tests after the run): 2 of the 3 judged (67%)" in text
    assert "the same change as the reference fix after normalising whitespace: 1." in text
    check = next(c for c in fig.checks if "plausible patch is correct" in c.target)
    assert (check.measured, check.met) == ("2 of 3 (67%)", False)
    assert "Plausible but not correct (overfitting): c (1 of 4 hidden test(s) did not pass" in text


def test_every_plausible_patch_correct_meets_the_target_and_none_judged_is_not_judged() -> None:
    all_correct = figure([row("a", True, True, True), row("b", False, None)])
    check = next(c for c in all_correct.checks if "plausible patch is correct" in c.target)
    assert (check.measured, check.met) == ("1 of 1 (100%)", True)
    assert "overfitting" not in all_correct.markdown("this machine")
    none_judged = figure([row("a", False, None), row("b", False, None)])
    check = next(c for c in none_judged.checks if "plausible patch is correct" in c.target)
    assert (check.measured, check.met) == ("0 of 0 (none judged)", None)


def test_the_warm_way_must_fix_more_cases_than_the_fresh_way_in_the_same_share() -> None:
    fresh = [row("a", True, True), row("b", False, None)]
    more = figure([row("a", True, True), row("b", True, True), row("c", True, True)], fresh)
    check = next(c for c in more.checks if "more bench cases validating warm" in c.target)
    assert (check.measured, check.met) == ("3 vs 1 of 33", True)
    text = more.markdown("this machine")
    assert "| fresh (`warm = false`) | 2 of 33 | 1 of 33 | 50% |" in text
    assert "| warm (default) | 3 of 33 | 3 of 33 | 100% |" in text
    same = figure([row("a", True, True), row("b", False, None)], fresh)
    check = next(c for c in same.checks if "more bench cases validating warm" in c.target)
    assert check.met is False  # as many is not "went up"


def test_a_case_the_share_cut_short_is_not_finished_and_not_in_the_rate() -> None:
    cut = dict(row("slow", False, None), seconds=40.0, limit=41.0)  # stopped by the share, own limit 120 s
    fig = figure([row("a", True, True), cut])
    assert "| warm (default) | 1 of 33 | 1 of 33 | 100% |" in fig.markdown("this machine")
    assert "Stopped by the end of the warm share before their own limit (not finished): slow (40 s)." in fig.notes


def test_with_every_case_run_as_many_fixed_warm_as_fresh_meets_the_full_runs_target() -> None:
    fig = figure([row("a", True, True)], [row("a", True, True)], half=None)
    check = next(c for c in fig.checks if "at least as many" in c.target)
    assert (check.measured, check.met) == ("1 vs 1 of 33", True)
