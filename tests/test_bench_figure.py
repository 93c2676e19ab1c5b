"""``make bench``'s figure 6 says how many of the offline engine's plausible patches are correct;
figure 13 whether the first prompt shows the code a real bug's fix changes.

Figure 6 is built from ``bench --json`` rows (tests/bench/engine_figure.py,
tests/bench/correct_figure.py); these rows are written here, so the shares
and the checks are tested without running the engine. Figure 13's answer and
in-prompt check (tests/bench/context_check.py) are tested on source and prompt
texts written here, without the network or a run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

BENCH_SCRIPTS = Path(__file__).resolve().parent / "bench"
sys.path.insert(0, str(BENCH_SCRIPTS))

import context_check  # noqa: E402
import context_figure  # noqa: E402
import engine_figure  # noqa: E402
import realbugs  # noqa: E402


def row(
    name: str, plausible: bool, correct: Optional[bool], same: Optional[bool] = None
) -> Dict[str, Any]:
    """A row as ``bench --json`` writes it, with the limits figure 6 adds to it."""
    return {
        "name": name,
        "outcome": "fixed" if plausible else "not_fixed",
        "stop_reason": "success" if plausible else "no_model_left",
        "seconds": 10.0,
        "single_mutation": True,
        "edits_tests": False,
        "plausible": plausible,
        "correct": correct,
        "matches_reference": same,
        "limit": 120.0,
        "own_limit": 120.0,
        "judge_detail": ""
        if correct is not False
        else "1 of 4 hidden test(s) did not pass: tests/t_hidden.py::test_x",
    }


def figure(
    rows: List[Dict[str, Any]],
    fresh: Optional[List[Dict[str, Any]]] = None,
    half: Optional[float] = 150.0,
) -> Any:
    return engine_figure.engine_figure(
        Path("fixtures/bench"), 33, {"fresh": fresh or [], "warm": rows}, 60.0, half
    )


def test_figure_six_gives_the_plausible_and_the_correct_share() -> None:
    fig = figure(
        [
            row("a", True, True, True),
            row("b", True, True, False),
            row("c", True, False, False),
            row("d", False, None),
            row("e", True, None),
        ]
    )
    text = fig.markdown("this machine")
    assert "Plausible patches: 4 of 5 cases (80%)" in text
    assert (
        "correct (passing the case's hidden tests after the run): 2 of the 3 judged (67%)" in text
    )
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
    # stopped by the share, own limit 120 s
    cut = dict(row("slow", False, None), seconds=40.0, limit=41.0)
    fig = figure([row("a", True, True), cut])
    assert "| warm (default) | 1 of 33 | 1 of 33 | 100% |" in fig.markdown("this machine")
    assert (
        "Stopped by the end of the warm share before their own limit (not finished): slow (40 s)."
        in fig.notes
    )


def test_with_every_case_run_as_many_fixed_warm_as_fresh_meets_the_full_runs_target() -> None:
    fig = figure([row("a", True, True)], [row("a", True, True)], half=None)
    check = next(c for c in fig.checks if "at least as many" in c.target)
    assert (check.measured, check.met) == ("1 vs 1 of 33", True)


# --- figure 13 ------------------------------------------------------------------------------

BUGGY = '''import functools


def helper(x):
    return x


@functools.lru_cache()
def total(items):
    """Sum of items."""
    result = 0
    for item in items:
        result += item
    return result - 1


class Box:
    size = 2

    def area(self, n):
        return n * self.size + 1

    def name(self):
        return "box"
'''
FIXED = BUGGY.replace("    return result - 1\n", "    return result\n").replace(
    "        return n * self.size + 1\n", "        return n * self.size\n"
)


def test_the_whole_function_answer_is_the_fixed_text_and_applies_to_the_buggy_code(
    tmp_path: Path,
) -> None:
    from repairloop.patch import apply_answer

    entries = ["pkg/mod.py::total", "pkg/mod.py::Box.area"]
    answer = context_check.whole_function_answer(
        {"pkg/mod.py": FIXED}, {"pkg/mod.py": BUGGY}, entries
    )
    assert answer is not None
    assert (
        'pkg/mod.py\n```python\n@functools.lru_cache()\ndef total(items):\n    """Sum of items."""'
    ) in answer
    assert "    return result\n```" in answer
    assert (
        "pkg/mod.py\n```python\nclass Box:\n    def area(self, n):\n"
        "        return n * self.size\n```"
    ) in answer
    for absent in ("return result - 1", "def name", "size = 2"):
        assert absent not in answer
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(BUGGY)
    (change,) = apply_answer(answer, tmp_path).changes
    assert change.new_text == FIXED


def test_a_fix_outside_functions_is_no_whole_function_answer_but_the_reference_diff() -> None:
    sources = ({"m.py": FIXED.replace("size = 2", "size = 3")}, {"m.py": BUGGY})
    for entry in ("m.py::<module>", "m.py::Box", "m.py::Box.volume", "m.py::nowhere"):
        assert context_check.whole_function_answer(*sources, [entry]) is None
    diff = context_check.reference_diff(*sources)
    assert diff.startswith("```diff\n--- a/m.py\n+++ b/m.py\n@@")
    assert "-    size = 2\n+    size = 3\n" in diff and diff.endswith("```\n")


def test_the_lines_a_prompt_must_show_are_the_def_line_and_the_changed_lines() -> None:
    needles = context_check.expected_lines(BUGGY, FIXED, ["total", "Box.area"])
    assert needles == {
        "total": ["def total(items):", "    return result - 1"],
        "Box.area": ["    def area(self, n):", "        return n * self.size + 1"],
    }
    inserted = BUGGY.replace('        return "box"', '        self.check()\n        return "box"')
    # an insertion right after the def line: the def line is its anchor, and needed once
    assert context_check.expected_lines(BUGGY, inserted, ["Box.name"]) == {
        "Box.name": ["    def name(self):"]
    }
    added = BUGGY + "\n    def volume(self):\n        return 0\n"
    needed = context_check.expected_lines(BUGGY, added, ["Box.volume"])["Box.volume"]
    assert needed[0] == "class Box:"  # a method the fix adds: the class it goes into


NUMBERED_PROMPT = '''## Code

### pkg/mod.py, lines 8-14 (total)
```python
   8 | @functools.lru_cache()
   9 | def total(items):
  10 |     """Sum of items."""
  11 |     result = 0
  12 |     for item in items:
  13 |         result += item
  14 |     return result - 1
```
'''


def test_a_function_is_in_the_prompt_when_one_block_shows_its_def_and_changed_lines() -> None:
    needles = context_check.expected_lines(BUGGY, FIXED, ["total", "Box.area"])
    assert context_check.missing_from_prompt(NUMBERED_PROMPT, needles["total"]) is None
    plain = "\n".join(line[7:] if "| " in line else line for line in NUMBERED_PROMPT.splitlines())
    assert "\n    return result - 1\n" in plain  # today's layout: no line numbers
    assert context_check.missing_from_prompt(plain, needles["total"]) is None
    missing = context_check.missing_from_prompt(NUMBERED_PROMPT, needles["Box.area"])
    assert missing == "def area(self, n):"
    trimmed = NUMBERED_PROMPT.replace("  14 |     return result - 1\n", "")
    assert context_check.missing_from_prompt(trimmed, needles["total"]) == "return result - 1"
    outside = NUMBERED_PROMPT.replace("  14 |     return result - 1\n```", "```\nreturn result - 1")
    assert context_check.missing_from_prompt(outside, needles["total"]) == "return result - 1"
    shown, why = context_figure.judge_prompt(
        NUMBERED_PROMPT, {"pkg/mod.py::Box.area": needles["Box.area"]}
    )
    assert not shown
    assert why == (
        "pkg/mod.py::Box.area: `def area(self, n):` not shown "
        "(shown: pkg/mod.py, lines 8-14 (total))"
    )


def test_the_loop_runs_the_case_command_as_given_with_this_python() -> None:
    """The case's own command, ``-p no:cacheprovider`` included: the loop adds no option a
    configuration could reject (tests/test_pytest_configs.py)."""
    cmd = "python -m pytest -q -p no:cacheprovider -o pythonpath=src tests/test_x.py"
    assert (
        context_figure.loop_test_cmd(cmd, "/v/bin/python")
        == "/v/bin/python -m pytest -q -p no:cacheprovider -o pythonpath=src tests/test_x.py"
    )


Way = Tuple[bool, int, str]  # in the prompt, tokens, outcome


def case_result(name: str, kind: str, localised: Way, traceback: Way) -> Any:
    case = realbugs.RealBug(
        name, Path(name), "lib", "1", "0" * 64, "", "", ("m.py::f",), ("t",), "", "callee"
    )
    ways = {}
    for way, (shown, tokens, outcome) in zip(
        ("localised", "traceback only"), (localised, traceback)
    ):
        why = "" if shown else "m.py::f: `def f():` not shown"
        detail = "" if outcome == "fixed" else "rejected: no patch"
        ways[way] = context_figure.WayRun(shown, why, tokens, outcome, detail, 9.0)
    return context_figure.CaseResult(case, kind, ways)


def test_figure_thirteen_judges_the_localised_way_and_shows_the_traceback_way_beside_it() -> None:
    results = [
        case_result(f"c{n}", "whole", (True, 100 * n, "fixed"), (n < 5, 50, "fixed"))
        for n in range(1, 20)
    ]
    results.append(case_result("d", "diff", (True, 2000, "fixed"), (False, 60, "not_fixed")))
    fig = context_figure.context_figure(results, 59, False, 120.0)
    shown, fixed = fig.checks
    assert shown.measured == "20 of 20 (100.0%); traceback only: 4 of 20 (20.0%)" and shown.met
    assert fixed.measured == "20 of 20 (100.0%); traceback only: 19 of 20 (95.0%)" and fixed.met
    text = fig.markdown("this machine")
    assert (
        "| **answered as the reference diff** | 1 cases |  | 1 of 1 (100.0%) | "
        "median 2,000, p90 2,000 | 1 fixed |"
    ) in text
    assert (
        "First-prompt tokens: localised median 1,050, p90 1,800; traceback only median 50, p90 50"
    ) in text
    assert "Code not in the first prompt, traceback only: c5 (callee): m.py::f: `def f():`" in text
    assert "Not fixed, traceback only: d: not_fixed, rejected: no patch" in text
    one_missed = [case_result("e", "whole", (False, 10, "fixed"), (False, 10, "fixed"))]
    assert context_figure.context_figure(one_missed + results[:19], 59, False, 1.0).checks[0].met
    two_missed = one_missed + [case_result("f", "whole", (False, 9, "no"), (True, 9, "fixed"))]
    fig = context_figure.context_figure(two_missed + results[:18], 59, False, 1.0)
    assert [c.met for c in fig.checks] == [False, True]  # 18 of 20 shown (90%), 19 of 20 fixed
    assert context_figure.p90([5, 1, 4, 2, 3, 10, 9, 8, 7, 6]) == 9.0


def test_a_figure_not_measured_is_carried_over_with_its_date() -> None:
    import run
    from figure import Figure

    previous = (
        "# Benchmarks\n\nGenerated by `make bench` (`tests/bench/run.py`) on 2026-12-04 23:00 UTC "
        "in 9 s.\n\n## Targets\n\n| figure | target | measured | verdict |\n| --- | --- | --- | "
        "--- |\n| 14. Fidelity | diffs fixed | 32 of 32 | met |\n\n## 13. Context\n\nold 13\n\n"
        "## 14. Fidelity\n\nCompares: fixes.\n\n- target: diffs fixed; **met**\n"
    )
    rows, section = run.carried_over(previous, 14)
    assert rows == ["| 14. Fidelity | diffs fixed | 32 of 32 | met |"]
    assert section.startswith("## 14. Fidelity\n\nCarried over: not measured by this run")
    assert "2026-12-04 23:00 UTC" in section and "- target: diffs fixed; **met**" in section
    thirteen = Figure(13, "Context", "new measurements")
    text = run.render({13: thirteen}, "host", 1.0, "load", previous)
    assert "| 14. Fidelity | diffs fixed | 32 of 32 | met |" in text and "## 14. Fidelity" in text
    assert "old 13" not in text and "new measurements" in text  # measured: never carried over
    assert text.index("## 13. Context") < text.index("## 14. Fidelity")
    again = run.render({13: thirteen}, "host", 1.0, "load", text)
    assert again.count("Carried over") == 1  # carried twice, still marked once
    assert run.carried_over("# Benchmarks\n", 14) == ([], "")
    dated = previous.replace("Compares: fixes.", "Measured by `a script` on 2026-12-05.")
    assert "Carried over" not in run.carried_over(dated, 14)[1]  # it says when already


def behaviour_row(set_key: str, case: str, right: bool, outcome: str, flagged: bool) -> Any:
    import behaviour_figure

    detail = (
        f"changes_passing_behaviour: tests/t.py::test_{case} takes other lines" if flagged else ""
    )
    return behaviour_figure.Row(set_key, case, right, outcome, flagged, detail, 12.0)


def test_figure_seventeen_counts_flags_only_on_runs_that_ended_fixed() -> None:
    import behaviour_figure

    rows = [behaviour_row("a", f"ref{n}", True, "fixed", n == 0) for n in range(20)]
    rows += [
        behaviour_row("c", "w1", False, "fixed", True),
        behaviour_row("c", "w2", False, "fixed", True),
        behaviour_row("c", "w3", False, "fixed", False),
        behaviour_row("c", "w4", False, "not_fixed", True),  # not proven: not counted
        behaviour_row("d", "shop: wrong-lookup-table", False, "fixed", False),
        behaviour_row("d", "shop: right", True, "not_fixed", False),
    ]
    fig = behaviour_figure.behaviour_figure(rows, 60.0)
    right, wrong = fig.checks
    assert (right.measured, right.met) == ("1 of 20 (5.0%)", True)
    assert (wrong.measured, wrong.met) == ("2 of 3 (66.7%)", True)
    text = fig.markdown("host")
    assert "## 17. The behaviour check" in text
    assert "| c. bench wrong patches | w4 | wrong | not_fixed | - (not counted) |" in text
    assert "| c. bench wrong patches | w1 | wrong | fixed | **flagged** |" in text
    assert "d. shop, wrong: 1 patch(es), 1 ended fixed, flagged 0 of 1 (0.0%)" in text
    assert "Every wrong patch, the shop's included: 2 of 4 (50.0%) flagged." in text
    assert "runs that did not: c. bench wrong patches: w4" in text
    assert "none flagged." in text  # the shop's overfitting answers


def test_figure_seventeen_misses_a_target_it_does_not_meet() -> None:
    import behaviour_figure

    rows = [behaviour_row("b", f"bug{n}", True, "fixed", n < 2) for n in range(20)]
    rows += [behaviour_row("c", f"w{n}", False, "fixed", n == 0) for n in range(2)]
    right, wrong = behaviour_figure.behaviour_figure(rows, 1.0).checks
    assert (right.measured, right.met) == ("2 of 20 (10.0%)", False)
    assert (wrong.measured, wrong.met) == ("1 of 2 (50.0%)", False)  # half is not more than half
    empty = behaviour_figure.behaviour_figure([], 1.0)
    assert [c.met for c in empty.checks] == [None, None]  # nothing proven: not judged


def engine_row(name: str, outcome: str, judged: str = "", flagged: bool = False) -> Dict[str, Any]:
    """A row of figure 16 (tests/bench/engine_realbugs_figure.py ``engine_run``)."""
    return {
        "name": name,
        "outcome": outcome,
        "seconds": 30.0,
        "detail": "",
        "judged": judged,
        "behaviour_flagged": flagged,
        "other_paths": 0,
    }


def test_figure_16_counts_right_fixes_by_syntax_or_the_whole_suite() -> None:
    import engine_realbugs_figure as erf

    before = [
        engine_row("a", "fixed", "right"),
        engine_row("b", "fixed", "wrong: fails 2 the reference passes (t)"),
        engine_row("c", "not_fixed"),
    ]
    after = [
        engine_row("a", "fixed", "right"),
        engine_row("b", "fixed", "wrong: fails 2 the reference passes (t)", flagged=True),
        engine_row("c", "fixed", "same tests"),
    ]
    fig = erf.engine_realbugs_figure({"before": before, "after": after}, 60.0, "before X")
    check = {c.target: c for c in fig.checks}["more right fixes than before"]
    assert check.measured == "1 before, 2 after" and check.met is True
    assert fig.rows[3] == ["c", "not_fixed (30 s)", "fixed, same tests (30 s)"]
    text = " ".join(fig.notes)
    assert "right fixes 0 of 2 (other paths" in text and "wrong fixes 1 of 1" in text
    assert "b (wrong: fails 2" in text


def test_figure_16_runs_the_whole_suite_of_a_narrowed_test_command() -> None:
    import engine_realbugs_figure as erf

    narrowed = "python -m pytest -q -o pythonpath=. tests/test_a.py tests/test_b.py::test_x"
    assert erf.whole_suite(narrowed) == "python -m pytest -q -o pythonpath=. tests"
    kept = "python -m pytest tests/test_core.py --deselect tests/test_core.py::test_v"
    assert erf.whole_suite(kept) == "python -m pytest tests --deselect tests/test_core.py::test_v"
