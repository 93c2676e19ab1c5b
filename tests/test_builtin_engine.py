"""The builtin engine end to end: real pytest runs through repairloop's runner.

Projects are benchmark cases (fixtures/bench) or small ones written under
tmp_path. Budgets are small and workers=2 so the suite stays quick.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import pytest

from repairloop import runner
from repairloop.errors import EngineExhausted
from repairloop.localise import localise
from repairloop.loop.candidate import model_failed
from repairloop.patch.dropped import drops_input
from repairloop.propose.builtin import BuiltinProposer
from repairloop.propose.builtin.edits import Source
from repairloop.propose.builtin.engine import TIME_SPENT
from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutation import Mutation
from repairloop.propose.builtin.pool import WorkerPool
from repairloop.propose.builtin.scratch import ValidationPlan, Verdict
from repairloop.propose.builtin.search import Candidate, Search, order_candidates
from repairloop.types import (
    Budget,
    BudgetLeft,
    ChainMove,
    ProposalRequest,
    RepairContext,
    Suspect,
    TestFiles,
    TestReport,
)

BENCH = Path(__file__).resolve().parent.parent / "fixtures" / "bench"
TEST_FILES = TestFiles(("tests/*", "test_*.py", "*_test.py", "conftest.py"))


def run_tests(
    root: Path, test_ids: Sequence[str], timeout: float, with_coverage: bool
) -> TestReport:
    """The loop's RunTests adapter: pytest in ``root``, per-test coverage of the project on
    request."""
    return runner.run_tests(
        root,
        (sys.executable, "-m", "pytest", "-q"),
        test_ids=test_ids,
        timeout=timeout,
        pythonpath=[root],
        coverage_source=["."] if with_coverage else None,
    )


def without_coverage(
    root: Path, test_ids: Sequence[str], timeout: float, with_coverage: bool
) -> TestReport:
    """A test environment where coverage.py is unavailable: coverage_file is always None."""
    return run_tests(root, test_ids, timeout, False)


def tree_digest(root: Path) -> Dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def request_for(root: Path, seconds: float = 120.0) -> ProposalRequest:
    baseline = run_tests(root, (), 120, False)
    assert baseline.failing_ids, baseline.output[-2000:]
    context = RepairContext(failing_tests=baseline.failing_ids, message="", traceback="", slices=())
    return ProposalRequest(context=context, budget=BudgetLeft(seconds=seconds))


def bench_copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(BENCH / name, tmp_path / name))


def write_project(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def changed_paths(diff: str) -> List[str]:
    return [line[6:] for line in diff.splitlines() if line.startswith("+++ b/")]


INC = {
    "calc.py": "def inc(x):\n    return x + 2\n\n\ndef dec(x):\n    return x - 1\n",
    "tests/test_calc.py": (
        "from calc import dec, inc\n\n\ndef test_inc():\n    assert inc(1) == 2\n\n\n"
        "def test_dec():\n    assert dec(1) == 0\n"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "case, fixed_line",
    [
        ("binary_search_bound", "+    while lo <= hi:"),
        ("caesar_modulus", "+    return chr((ord(c) - base + k) % 26 + base)"),
        ("components_negated", "+        if not seen[v]:"),
    ],
)
def test_engine_repairs_bench_cases(case: str, fixed_line: str, tmp_path: Path) -> None:
    project = bench_copy(case, tmp_path)
    before = tree_digest(project)
    engine = BuiltinProposer(
        localiser=localise,
        project_root=project,
        run_tests=run_tests,
        test_files=TEST_FILES,
        workers=2,
        scratch_dir=tmp_path / "scratch",
    )
    proposal = engine.propose(request_for(project))
    assert proposal.engine == "builtin" and proposal.model == "builtin"
    assert proposal.usage.tokens == 0 and proposal.usage.cost_usd == 0.0
    assert fixed_line in proposal.answer.splitlines()
    removed = [
        line
        for line in proposal.answer.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    assert len(removed) == 1  # a one-line fix is a one-line diff
    assert all(not p.startswith("tests/") for p in changed_paths(proposal.answer))
    notes = proposal.notes
    assert notes["localisation_method"] == "coverage"
    assert notes["localisation"][0]["score"] > 0
    assert notes["counts"]["plausible"] >= 1 and notes["tried"]
    assert "plausible, not proven" in notes["plausible_note"]
    assert tree_digest(project) == before  # the workspace itself is never written
    assert list((tmp_path / "scratch").iterdir()) == []  # scratch copies are cleaned up


@pytest.mark.slow
def test_later_calls_continue_and_never_repeat_a_diff(tmp_path: Path) -> None:
    project = write_project(tmp_path / "inc", INC)
    engine = BuiltinProposer(
        localiser=localise,
        project_root=project,
        run_tests=run_tests,
        test_files=TEST_FILES,
        workers=2,
        max_candidates=40,
        extra_search_share=100.0,
        extra_candidates=100,
    )
    request = request_for(project)
    first = engine.propose(request)
    # Smallest edit first; the tie between `x + 1` and `x * 2` goes to the higher operator prior.
    assert "+    return x + 1" in first.answer.splitlines()
    assert first.notes["alternatives"], "the extra search should have found other plausible patches"
    answers = [first.answer]
    for _ in range(6):
        try:
            answers.append(engine.propose(request).answer)
        except EngineExhausted as exc:
            assert "tried" in exc.message and exc.notes["counts"]["tried"] >= 1
            break
    assert len(answers) >= 2
    assert len(set(answers)) == len(answers)
    assert answers[1] == first.notes["alternatives"][0]


def test_traceback_fallback_when_coverage_is_unavailable(tmp_path: Path) -> None:
    project = write_project(tmp_path / "inc", INC)
    engine = BuiltinProposer(
        localiser=localise,
        project_root=project,
        run_tests=without_coverage,
        test_files=TEST_FILES,
        workers=2,
        max_candidates=30,
    )
    proposal = engine.propose(request_for(project))
    assert proposal.notes["localisation_method"] == "traceback"
    assert "no per-test line data" in proposal.notes["localisation_note"]
    assert proposal.notes["localisation"][0]["path"] == "calc.py"
    assert "+    return x + 1" in proposal.answer.splitlines()


def test_engine_exhausted_on_a_multi_bug_case(tmp_path: Path) -> None:
    project = bench_copy("roman_missing_subtractive", tmp_path)
    # Mutants of to_roman's loop run forever: a short candidate timeout keeps this test quick.
    engine = BuiltinProposer(
        localiser=localise,
        project_root=project,
        run_tests=run_tests,
        test_files=TEST_FILES,
        workers=2,
        max_candidates=4,
        candidate_timeout=3.0,
    )
    with pytest.raises(EngineExhausted) as caught:
        engine.propose(request_for(project))
    error = caught.value
    assert "none of the 4 candidate edits it tried" in error.message
    assert not error.out_of_time  # out of candidates with time left: the next link's turn
    assert model_failed("builtin", error)[0] is ChainMove.NEXT
    assert error.notes["counts"]["tried"] == 4
    assert len(error.notes["tried"]) == 4
    assert {"operator", "path", "line", "outcome", "reason"} <= set(error.notes["tried"][0])
    assert error.notes["localisation_method"] == "coverage"
    assert (
        error.usage.seconds > 0 and error.usage.calls == 0
    )  # the search took engine time (it showed 0.0 s)


def test_a_search_stopped_by_the_runs_time_ends_the_run_on_its_time_budget(
    tmp_path: Path,
) -> None:
    # A new user's trial: the engine's search ran out of the run's time and the run ended
    # "no_model_left" ("nothing left to try"), as if the engine had no edit left.
    project = write_project(tmp_path / "inc", INC)
    engine = BuiltinProposer(
        localiser=localise, project_root=project, run_tests=run_tests, test_files=TEST_FILES
    )
    with pytest.raises(EngineExhausted) as caught:
        engine.propose(request_for(project, seconds=0.001))
    # out of time in the search, or already in its localisation run on a slow machine
    assert caught.value.out_of_time and caught.value.notes.get("stopped_because", TIME_SPENT) == (
        TIME_SPENT
    )
    move, _, reason, refusal = model_failed("builtin", caught.value)
    assert move is ChainMove.STAY and reason.startswith("builtin failed: ")
    assert refusal is not None and refusal.budget is Budget.SECONDS  # the stop policy's budget end


def test_an_infinitely_looping_candidate_costs_no_more_than_its_timeout(tmp_path: Path) -> None:
    project = write_project(
        tmp_path / "loop",
        {
            "count.py": "def count_down(n):\n    steps = 0\n    while n > 0:\n        n -= 1\n     "
            "   steps += 1\n    return steps\n",
            "tests/test_count.py": "from count import count_down\n\n\ndef test_three():\n    "
            "assert count_down(3) == 3\n",
        },
    )
    original = (project / "count.py").read_text()
    looping = original.replace("n -= 1", "n += 1")
    timeout = 2.0
    plan = ValidationPlan(("tests/test_count.py::test_three",), frozenset(), timeout, timeout)
    with WorkerPool(project, 1, tmp_path / "scratch") as pool:
        verdict = pool.validate(
            {"count.py": looping},
            {"count.py": original},
            run_tests,
            plan,
            clock=__import__("time").monotonic,
            time_left=lambda: None,
        )
        restored = (pool.base / "worker-0" / "count.py").read_text()  # type: ignore[operator]
    assert verdict.status == "timeout"
    # The runner kills the process group at the timeout; allow for start-up and the kill itself.
    assert verdict.seconds < timeout + 10
    assert restored == original
    assert (project / "count.py").read_text() == original


def test_candidate_order_is_deterministic(tmp_path: Path) -> None:
    text = (BENCH / "binary_search_bound" / "searching.py").read_text()
    suspects = [Suspect("searching.py", line, 0.5) for line in range(5, 16)]
    models = {"searching.py": FileModel(Source("searching.py", text))}
    first = order_candidates(suspects, models)
    again = order_candidates(suspects, {"searching.py": FileModel(Source("searching.py", text))})
    assert [c.mutations for c in first] == [c.mutations for c in again]
    scores = [c.suspiciousness * c.prior for c in first]
    assert scores == sorted(scores, reverse=True)
    assert first[0].operator == "comparison"  # the highest prior at equal suspiciousness


CLAMP = "def clamp(x, lo, hi):\n    return max(lo, max(x, hi))\n"


def test_a_plausible_patch_that_stops_reading_an_input_is_chosen_after_one_that_does_not() -> None:
    # fixtures/bench/stats_two_bugs: the engine answered `max(x, lo)` (clamp ignores hi) over
    # `min(x, hi)`, both passing every visible test (figure 17's wrong patches).
    source = Source("m.py", CLAMP)
    start = source.line_starts[1] + len("    return max(lo, ")

    def mutation(new: str, prior: float) -> Mutation:
        return Mutation("wrong", "m.py", 2, start, start + len("max(x, hi)"), new, prior, new)

    wrong, right = mutation("max(x, lo)", 0.9), mutation("min(x, hi)", 0.5)
    candidates = [Candidate((m,), 1.0, m.prior, i) for i, m in enumerate((wrong, right))]
    everything = lambda changed: Verdict("plausible", "", 1)  # noqa: E731 - both pass the tests

    def chosen(distrusted: Callable[[Dict[str, str], Dict[str, str]], bool]) -> str:
        search = Search(candidates, {"m.py": CLAMP}, 1, distrusted=distrusted)
        search.run(everything, lambda s: True, clock=lambda: 0.0)
        return search.plausible(set())[0].diff

    assert "+    return max(lo, max(x, lo))" in chosen(lambda old, new: False)  # the prior's pick
    by_the_loop = lambda old, new: drops_input(old, new, TEST_FILES)  # noqa: E731 - chain.py's
    assert "+    return max(lo, min(x, hi))" in chosen(by_the_loop)


def test_pairs_come_after_every_single_and_start_from_partial_fixes() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    source = Source("m.py", text)

    def mutation(line: int, new: str) -> Mutation:
        start = source.line_starts[line - 1] + 4
        return Mutation(
            "literal_off_by_one", "m.py", line, start, start + 1, new, 0.9, f"line {line} -> {new}"
        )

    singles = [mutation(1, "5"), mutation(3, "9"), mutation(2, "6")]
    candidates = [Candidate((m,), 1.0, m.prior, i) for i, m in enumerate(singles)]

    def validate(
        changed: Dict[str, str],
    ) -> Verdict:  # two independent bugs: a must be 5, b must be 6
        fixed = ("a = 5" in changed["m.py"]) + ("b = 6" in changed["m.py"])
        return Verdict("plausible" if fixed == 2 else "failing", "", fixed)

    search = Search(candidates, {"m.py": text}, workers=2)
    search.run(validate, lambda s: True, clock=lambda: 0.0)
    kinds = [len(r.candidate.mutations) for r in search.results]
    assert kinds[:3] == [1, 1, 1] and set(kinds[3:]) == {2}
    first_pair = search.results[3].candidate
    assert {m.line for m in first_pair.mutations} == {1, 2}  # the two partial fixes first
    best = search.plausible(set())
    assert len(best) == 1 and "+a = 5" in best[0].diff and "+b = 6" in best[0].diff
    assert search.exhausted


def test_a_partial_fix_in_code_the_still_failing_tests_never_run_is_known_despite_junk() -> None:
    # Two failing tests, two independent bugs: t1 runs line 1 only, t2 line 2 only. Fixing line 1
    # fixes t1; t2, still failing, never runs line 1: unrelated. Adding a second edit that fixes
    # nothing on line 2 (which t2 runs) must not make the pair win over the single edit.
    text = "area = 1\nlabel = 2\n"
    source = Source("m.py", text)

    def mutation(line: int, new: str) -> Mutation:
        start = source.line_starts[line - 1] + len(text.splitlines()[line - 1]) - 1
        return Mutation(
            "literal_off_by_one", "m.py", line, start, start + 1, new, 0.9, f"line {line} -> {new}"
        )

    candidates = [
        Candidate((m,), 1.0, m.prior, i) for i, m in enumerate([mutation(1, "0"), mutation(2, "3")])
    ]
    targets = ("t.py::t1", "t.py::t2")

    def validate(changed: Dict[str, str]) -> Verdict:
        if "area = 0" in changed["m.py"]:
            return Verdict("plausible", "", 1, missed_group=1, missed=1, still=("t.py::t2",))
        return Verdict("failing", "", 0)

    ran_by = {("m.py", 1): frozenset(targets[:1]), ("m.py", 2): frozenset(targets[1:])}
    search = Search(candidates, {"m.py": text}, workers=1, ran_by=ran_by, targets=targets)
    search.run(validate, lambda s: True, clock=lambda: 0.0)
    best = search.plausible(set())
    assert [len(r.candidate.mutations) for r in best] == [
        1,
        2,
    ]  # the single edit, then the pair with a junk edit
    assert [(r.unrelated, r.unshared) for r in best] == [(True, 1), (False, 1)]
    # without per-test line data nothing is known
    blind = Search(candidates, {"m.py": text}, workers=1)
    blind.run(validate, lambda s: True, clock=lambda: 0.0)
    assert [(r.unrelated, r.unshared) for r in blind.plausible(set())] == [(False, 0), (False, 0)]


def test_at_equal_fixes_the_edit_at_a_statement_every_failing_test_runs_wins() -> None:
    text = "a = 1\nb = 2\n"
    source = Source("m.py", text)
    singles = [
        Mutation(
            "literal_off_by_one",
            "m.py",
            n,
            source.line_starts[n - 1] + 4,
            source.line_starts[n - 1] + 5,
            "9",
            0.9,
            f"line {n}",
        )
        for n in (1, 2)
    ]
    candidates = [Candidate((m,), 1.0, m.prior, i) for i, m in enumerate(singles)]
    targets = ("t.py::t1", "t.py::t2")
    ran_by = {("m.py", 1): frozenset(targets[:1]), ("m.py", 2): frozenset(targets)}
    search = Search(candidates, {"m.py": text}, workers=1, ran_by=ran_by, targets=targets)
    search.run(lambda changed: Verdict("plausible", "", 2), lambda s: True, clock=lambda: 0.0)
    assert [r.candidate.mutations[0].line for r in search.plausible(set())][:2] == [
        2,
        1,
    ]  # line 1 came first


def test_an_engine_with_no_edit_to_try_says_why_not_that_it_tried_none() -> None:
    """Seen in a new user's trial: a failing test command that is not pytest gave "none of the 0
    candidate edits it tried made any of the 1 failing test(s) pass". With nothing to try the
    message says why: no project line to change, or no edit that applies to the lines named."""
    from repairloop.propose.builtin.engine_report import exhausted_message
    from repairloop.propose.builtin.search import Search

    empty = Search([], {}, 1)
    assert exhausted_message(empty, 1, False, "all candidates tried", 0) == (
        "the offline engine found no patch: it had no candidate edit to try, as the failing tests "
        "point at no line of the project's code (a test command that is not pytest names no "
        "failing test or frame)"
    )
    assert exhausted_message(empty, 2, True, "all candidates tried", 14).endswith(
        "found no further patch: it had no candidate edit to try, as none of its edits applies "
        "to the lines the failing tests point at"
    )
