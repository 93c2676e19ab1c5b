"""``make bench``'s figure 6 says how many of the offline engine's plausible patches are correct.

The figure is built from ``bench --json`` rows (tests/bench/speed_figures.py,
tests/bench/correct_figure.py); these rows are written here, so the shares
and the check are tested without running the engine.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

BENCH_SCRIPTS = Path(__file__).resolve().parent / "bench"
sys.path.insert(0, str(BENCH_SCRIPTS))

import speed_figures  # noqa: E402


def row(name: str, plausible: bool, correct: Optional[bool], same: Optional[bool] = None) -> Dict[str, Any]:
    """A row as ``bench --json`` writes it, with the limits figure 6 adds to it."""
    return {"name": name, "outcome": "fixed" if plausible else "not_fixed", "stop_reason": "success" if plausible else
            "no_model_left", "seconds": 10.0, "single_mutation": True, "edits_tests": False, "plausible": plausible,
            "correct": correct, "matches_reference": same, "limit": 120.0, "own_limit": 120.0,
            "judge_detail": "" if correct is not False else "1 of 4 hidden test(s) did not pass: tests/t_hidden.py::test_x"}


def figure(rows: List[Dict[str, Any]]) -> Any:
    return speed_figures._engine_figure(Path("fixtures/bench"), 33, rows, 60.0)


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
