"""Operators added for real one-line bugs the first families could not fix in one edit.

Missing call wrappers (``abs``, ``int``, ``len``, a recursive call), in-place
methods used for their value (``xs.sort()``), confused list methods
(``append``/``extend``), a missing ``- 1`` on a copied value or a ``min``
term, and missing update statements (a loop counter, a ``seen.add``, a
counter's decrement). Each test mutates a real snippet and checks the edit
is one line, compiles, and is the expected one.
"""

from __future__ import annotations

import difflib
import sys
import textwrap
import time
from pathlib import Path
from typing import List, Sequence, Tuple

import pytest

from repairloop import runner
from repairloop.localise import localise
from repairloop.propose.builtin import BuiltinProposer
from repairloop.propose.builtin.edits import Source, apply_edits
from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.hints import family_boosts
from repairloop.propose.builtin.mutate import mutate_source
from repairloop.propose.builtin.mutation import Mutation
from repairloop.propose.builtin.pool import WorkerPool
from repairloop.propose.builtin.scratch import ValidationPlan, Verdict
from repairloop.propose.builtin.search import Candidate, Search, order_candidates
from repairloop.types import (
    BudgetLeft,
    ProposalRequest,
    RepairContext,
    Suspect,
    TestFiles,
    TestOutcome,
    TestReport,
    TestResult,
)


def changed_lines(old: str, new: str) -> Tuple[List[str], List[str]]:
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def edits_of(code: str, line: int, operator: str) -> List[Tuple[Mutation, str]]:
    """(mutation, whole new text) of every ``operator`` mutation of ``line``; each must compile."""
    text = textwrap.dedent(code)
    out = []
    for mutation in mutate_source("m.py", text, line):
        if mutation.operator == operator:
            new = apply_edits(text, [mutation.edit])
            compile(new, "m.py", "exec")
            out.append((mutation, new))
    return out


def find(code: str, line: int, operator: str, new_line: str) -> Mutation:
    """The ``operator`` mutation of ``line`` that changes or inserts exactly ``new_line``."""
    text = textwrap.dedent(code)
    seen = []
    for mutation, new in edits_of(code, line, operator):
        removed, added = changed_lines(text, new)
        seen.append(added)
        if added == [new_line] and len(removed) <= 1:
            return mutation
    raise AssertionError(f"no {operator} mutation gives {new_line!r}; got {seen}")


def lines_added(code: str, line: int, operator: str) -> List[str]:
    text = textwrap.dedent(code)
    return [a for _, new in edits_of(code, line, operator) for a in changed_lines(text, new)[1]]


# -- wrap_call -------------------------------------------------------------------------


def test_abs_around_a_compared_difference() -> None:
    code = """\
    def close(a, b, eps):
        if a - b < eps:
            return True
        return False
    """
    m = find(code, 2, "wrap_call", "    if abs(a - b) < eps:")
    assert m.replacement == "abs(a - b)"


def test_int_around_an_operand_of_arithmetic() -> None:
    code = "def decode(pairs):\n    return [ch * count for count, ch in pairs]\n"
    find(code, 2, "wrap_call", "    return [ch * int(count) for count, ch in pairs]")


def test_len_around_a_range_argument_and_a_compared_sequence() -> None:
    code = "def idx(xs, i):\n    for k in range(xs):\n        pass\n    return i < xs\n"
    find(code, 2, "wrap_call", "    for k in range(len(xs)):")
    find(code, 4, "wrap_call", "    return i < len(xs)")


def test_the_missing_recursive_call_comes_first() -> None:
    code = """\
    def flat(xs):
        out = []
        for x in xs:
            if isinstance(x, list):
                out.extend(x)
            else:
                out.append(x)
        return out
    """
    wrapped = [
        m for m in mutate_source("m.py", textwrap.dedent(code), 5) if m.operator == "wrap_call"
    ]
    assert wrapped[0].replacement == "flat(x)"
    find(code, 5, "wrap_call", "            out.extend(flat(x))")


def test_no_wrapper_twice_and_none_for_builtin_arguments() -> None:
    code = "def d(a, b):\n    return abs(a - b) < 1 and len(a) > 0\n"
    texts = lines_added(code, 2, "wrap_call")
    assert not any("abs(abs(" in t for t in texts)
    assert not any("len(len(" in t or "(int(a))" in t for t in texts)


# -- method_to_function and list methods ----------------------------------------------


def test_sort_used_for_its_value_becomes_sorted() -> None:
    code = "def kth(xs, k):\n    ordered = xs.sort(reverse=True)\n    return ordered[k]\n"
    m = find(code, 2, "wrong_function", "    ordered = sorted(xs, reverse=True)")
    assert m.prior == pytest.approx(0.7)


def test_sorted_called_for_an_effect_becomes_sort() -> None:
    code = "def s(xs):\n    sorted(xs)\n    return xs\n"
    find(code, 2, "wrong_function", "    xs.sort()")


def test_sort_as_a_statement_is_left_alone() -> None:
    code = "def s(xs):\n    xs.sort()\n    return xs\n"
    assert not any("sorted(" in t for t in lines_added(code, 2, "wrong_function"))


@pytest.mark.parametrize(
    "code, new_line",
    [
        ("def p(rows, row):\n    rows.extend(row)\n", "    rows.append(row)"),
        ("def p(out, part):\n    out.append(part)\n", "    out.extend(part)"),
        ("def p(d):\n    return list(d.keys())\n", "    return list(d.values())"),
    ],
    ids=["extend-append", "append-extend", "keys-values"],
)
def test_confused_collection_methods(code: str, new_line: str) -> None:
    find(code, 2, "wrong_function", new_line)


# -- data flow raises the right wrong_variable / swap_operands candidates -------------


def _prior(code: str, line: int, operator: str, new_line: str) -> float:
    return find(code, line, operator, new_line).prior


def test_an_index_used_only_here_on_that_sequence_points_at_its_usual_index() -> None:
    code = """\
    def merge(left, right):
        out, i, j = [], 0, 0
        while i < len(left) and j < len(right):
            if left[i] <= right[j]:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
        return out + left[i:] + right[i:]
    """
    smelly = _prior(code, 10, "wrong_variable", "    return out + left[i:] + right[j:]")
    plain = _prior(code, 10, "wrong_variable", "    return out + left[j:] + right[i:]")
    assert smelly == pytest.approx(1.6 * plain)


def test_a_result_never_read_is_the_likely_right_variable() -> None:
    code = """\
    def best_run(xs):
        best = total = 0
        for x in xs:
            total = max(0, total + x)
            best = max(best, x)
        return best
    """
    smelly = _prior(code, 5, "wrong_variable", "        best = max(best, total)")
    assert smelly == pytest.approx(
        1.6 * _prior(code, 5, "wrong_variable", "        best = max(best, xs)")
    )


def test_swapping_a_string_accumulation_is_a_full_weight_candidate() -> None:
    code = (
        "def b(n, d):\n    out = ''\n    while n:\n        out = out + d[n % 2]\n        n //= 2\n"
    )
    number = (
        "def s(n, d):\n    out = 0\n    while n:\n        out = out + d[n % 2]\n        n //= 2\n"
    )
    assert _prior(code, 4, "swap_operands", "        out = d[n % 2] + out") == pytest.approx(0.6)
    assert _prior(number, 4, "swap_operands", "        out = d[n % 2] + out") == pytest.approx(0.36)


# -- off by one on copied values and min/max terms ------------------------------------


def test_assigned_value_minus_one() -> None:
    code = "def b(lo, mid):\n    hi = mid\n    return hi\n"
    find(code, 2, "off_by_one", "    hi = mid - 1")


def test_tuple_assignment_elements() -> None:
    code = "def b(xs, lo):\n    i, j = lo, len(xs)\n    return i\n"
    find(code, 2, "off_by_one", "    i, j = lo - 1, len(xs)")


def test_computed_assignments_are_not_offset_whole() -> None:
    code = "def m(lo, hi):\n    mid = (lo + hi) // 2\n    return mid\n"
    assert not any(m.description == "assigned value + 1" for m in mutate_source("m.py", code, 2))


def test_min_argument_plus_one() -> None:
    code = "def d(t, i, j):\n    t[i][j] = min(t[i - 1][j] + 1, t[i][j - 1])\n"
    find(code, 2, "off_by_one", "    t[i][j] = min(t[i - 1][j] + 1, t[i][j - 1] + 1)")


def test_doubling_a_unit_step_ranks_below_other_literal_changes() -> None:
    code = "def f(mid, k):\n    return mid + 1, k * 3\n"
    mutations = {
        m.replacement: m
        for m in mutate_source("m.py", code, 2)
        if m.operator == "literal_off_by_one"
    }
    assert mutations["2"].prior < mutations["4"].prior


# -- insert_update --------------------------------------------------------------------


INSERTION = """\
def insertion(xs):
    for i in range(1, len(xs)):
        key = xs[i]
        j = i - 1
        while j >= 0 and xs[j] > key:
            xs[j + 1] = xs[j]
        xs[j + 1] = key
    return xs
"""


def test_a_stalled_while_loop_gets_its_counter_update() -> None:
    m = find(INSERTION, 6, "insert_update", "            j -= 1")
    assert m.start == m.end  # an insertion at the end of the loop body
    updates = [m for m in mutate_source("m.py", INSERTION, 5) if m.operator == "insert_update"]
    assert updates[0].replacement.strip() == "j -= 1"  # `j >= 0` counts down: tried first
    assert updates[0].prior == pytest.approx(0.96)  # nothing else can end the loop


def test_the_loop_update_is_modelled_on_the_functions_own_update() -> None:
    code = (
        "def digits(n):\n    total = 0\n    while n > 0:\n        total += n % 10\n    n //= "
        "10\n    return total\n"
    )
    first = next(m for m in mutate_source("m.py", code, 4) if m.operator == "insert_update")
    assert first.replacement == "        n //= 10\n"


def test_no_update_for_a_loop_that_changes_its_condition() -> None:
    code = "def f(q):\n    while q:\n        q.pop()\n    i = 0\n    while i < 3:\n        i += 1\n"
    assert not lines_added(code, 3, "insert_update")
    assert not lines_added(code, 6, "insert_update")


def test_a_guarded_set_is_filled_under_the_guard() -> None:
    code = """\
    def reach(graph, start):
        seen = {start}
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in graph[node]:
                if nxt not in seen:
                    todo.append(nxt)
        return seen
    """
    m = find(code, 8, "insert_update", "                seen.add(nxt)")
    assert m.prior == pytest.approx(0.96)  # a guard whose set is never filled: a certain smell


def test_a_skip_guard_is_followed_by_the_add() -> None:
    code = """\
    def count(items):
        done = []
        n = 0
        for item in items:
            if item in done:
                continue
            n += 1
        return n
    """
    find(code, 5, "insert_update", "        done.append(item)")


def test_no_add_when_the_set_is_filled_elsewhere_or_is_a_dict() -> None:
    filled = (
        "def f(xs):\n    seen = set()\n    for x in xs:\n        if x not in seen:\n          "
        "  seen.add(x)\n"
    )
    mapping = (
        "def f(xs):\n    seen = {}\n    for x in xs:\n        if x not in seen:\n            "
        "print(x)\n"
    )
    assert not lines_added(filled, 5, "insert_update")
    assert not lines_added(mapping, 5, "insert_update")


def test_the_counterpart_of_a_counter_update_goes_before_the_condition() -> None:
    code = """\
    def kahn(nodes, edges):
        indeg = {n: 0 for n in nodes}
        for u, v in edges:
            indeg[v] += 1
        ready = [n for n in nodes if indeg[n] == 0]
        for n in ready:
            for m in nodes:
                if indeg[m] == 0:
                    ready.append(m)
        return ready
    """
    m = find(code, 8, "insert_update", "            indeg[m] -= 1")
    assert m.prior == pytest.approx(0.6)  # the opposite operator first
    find(code, 8, "insert_update", "            indeg[m] += 1")


def test_insertions_are_deterministic() -> None:
    first = [mutate_source("m.py", INSERTION, line) for line in range(1, 9)]
    assert first == [mutate_source("m.py", INSERTION, line) for line in range(1, 9)]


# -- end to end -----------------------------------------------------------------------


def _run_tests(
    root: Path, test_ids: Sequence[str], timeout: float, with_coverage: bool
) -> TestReport:
    return runner.run_tests(
        root,
        (sys.executable, "-m", "pytest", "-q"),
        test_ids=test_ids,
        timeout=timeout,
        pythonpath=[root],
        coverage_source=["."] if with_coverage else None,
    )


@pytest.mark.slow
def test_the_engine_repairs_a_missing_abs(tmp_path: Path) -> None:
    root = tmp_path / "newton"
    (root / "tests").mkdir(parents=True)
    (root / "newton.py").write_text(
        textwrap.dedent("""\
        def root(x, eps=1e-9):
            guess = 1.0
            for _ in range(100):
                better = (guess + x / guess) / 2
                if better - guess < eps:
                    return better
                guess = better
            return None
    """)
    )
    (root / "tests" / "test_newton.py").write_text(
        textwrap.dedent("""\
        from newton import root

        def test_quarter():
            assert abs(root(0.25) - 0.5) < 1e-6

        def test_nine():
            assert abs(root(9.0) - 3.0) < 1e-6

        def test_two():
            assert abs(root(2.0) - 1.41421356237) < 1e-6
    """)
    )
    baseline = _run_tests(root, (), 120, False)
    context = RepairContext(failing_tests=baseline.failing_ids, message="", traceback="", slices=())
    # The loop is bounded: a wrong candidate that never converges fails after 100 steps (about 1.7
    # s) instead of costing its timeout (8 of the 31 candidates with `while True`). The timeout
    # stays 4 s rather than the default 10, should one hang all the same.
    engine = BuiltinProposer(
        localiser=localise,
        project_root=root,
        run_tests=_run_tests,
        test_files=TestFiles(("tests/*",)),
        workers=2,
        candidate_timeout=4.0,
        extra_candidates=0,
    )  # the first plausible patch is the answer
    proposal = engine.propose(ProposalRequest(context=context, budget=BudgetLeft(seconds=120.0)))
    assert "+        if abs(better - guess) < eps:" in proposal.answer


# -- validation: a probe target first when the failing tests are slow ----------------


def test_slow_failing_tests_are_probed_with_the_quickest_first(tmp_path: Path) -> None:
    slow = TestReport(
        ("pytest",),
        1,
        results=(
            TestResult("t.py::hangs", TestOutcome.FAILED, duration=5.0),
            TestResult("t.py::quick", TestOutcome.FAILED, duration=0.01),
            TestResult("t.py::ok", TestOutcome.PASSED, duration=0.01),
        ),
        seconds=5.5,
    )
    engine = BuiltinProposer(
        localiser=localise,
        project_root=tmp_path,
        run_tests=_run_tests,
        test_files=TestFiles(("tests/*",)),
    )
    plan = engine._make_plan(slow, ("t.py::hangs", "t.py::quick"))
    assert plan.probe == ("t.py::quick",)
    fast = TestReport(
        ("pytest",),
        1,
        results=(
            TestResult("t.py::a", TestOutcome.FAILED, duration=0.01),
            TestResult("t.py::b", TestOutcome.FAILED, duration=0.01),
        ),
    )
    assert engine._make_plan(fast, ("t.py::a", "t.py::b")).probe == ()


def test_a_candidate_failing_the_probe_runs_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "tests").mkdir(parents=True)
    (root / "m.py").write_text("def f():\n    return 1\n")
    (root / "tests" / "test_m.py").write_text(
        "from m import f\n\n\ndef test_a():\n    assert f() == 2\n\n\ndef test_b():\n    assert "
        "f() == 2\n"
    )
    calls: List[Tuple[str, ...]] = []

    def recording(
        root: Path, test_ids: Sequence[str], timeout: float, with_coverage: bool
    ) -> TestReport:
        calls.append(tuple(test_ids))
        return _run_tests(root, test_ids, timeout, with_coverage)

    targets = ("tests/test_m.py::test_a", "tests/test_m.py::test_b")
    plan = ValidationPlan(targets, frozenset(), 30.0, 30.0, probe=targets[:1], probe_timeout=30.0)
    original = {"m.py": "def f():\n    return 1\n"}
    with WorkerPool(root, 1, tmp_path / "scratch") as pool:
        wrong = pool.validate(
            {"m.py": "def f():\n    return 3\n"},
            original,
            recording,
            plan,
            time.monotonic,
            lambda: None,
        )
        assert (wrong.status, calls) == ("failing", [targets[:1]])
        calls.clear()
        right = pool.validate(
            {"m.py": "def f():\n    return 2\n"},
            original,
            recording,
            plan,
            time.monotonic,
            lambda: None,
        )
    assert right.status == "plausible"
    assert calls == [targets[:1], targets, ()]  # probe, every target, the suite


# -- symptoms raise the families that fix them ----------------------------------------


def _failing(test_id: str, exc_type: str, message: str) -> TestResult:
    return TestResult(test_id, TestOutcome.FAILED, exc_type=exc_type, message=message)


def test_a_none_used_as_a_list_raises_wrong_function_first() -> None:
    report = TestReport(
        ("pytest",),
        1,
        results=(
            _failing("t::a", "TypeError", "'NoneType' object is not subscriptable"),
            _failing("t::b", "TypeError", "'NoneType' object is not subscriptable"),
            _failing("t::c", "AssertionError", "assert 1 == 2"),
        ),
    )
    boosts = family_boosts(report, ("t::a", "t::b", "t::c"))
    assert boosts["wrong_function"] > 1.0 and "wrap_call" not in boosts


def test_a_str_in_arithmetic_raises_wrap_call_and_a_minority_symptom_raises_nothing() -> None:
    report = TestReport(
        ("pytest",),
        1,
        results=(
            _failing("t::a", "TypeError", "can't multiply sequence by non-int of type 'str'"),
            _failing("t::b", "AssertionError", "assert 1 == 2"),
            _failing("t::c", "AssertionError", "assert 1 == 3"),
        ),
    )
    assert family_boosts(report, ("t::a",))["wrap_call"] > 1.0
    assert family_boosts(report, ("t::a", "t::b", "t::c")) == {}


def test_boosts_reorder_candidates_deterministically() -> None:
    text = "def f(xs, k):\n    ordered = xs.sort()\n    return ordered[k]\n"
    models = {"m.py": FileModel(Source("m.py", text))}
    suspects = [Suspect("m.py", 2, 1.0), Suspect("m.py", 3, 1.0)]
    plain = order_candidates(suspects, models)
    boosted = order_candidates(suspects, models, {"wrong_function": 1.3})
    assert boosted == order_candidates(suspects, models, {"wrong_function": 1.3})
    before = [c.mutations[0].replacement for c in plain].index("sorted(xs)")
    after = [c.mutations[0].replacement for c in boosted].index("sorted(xs)")
    assert after < before
    assert boosted[after].prior == pytest.approx(0.7 * 1.3)  # wrong_function's prior, raised


def test_between_one_line_patches_the_likelier_beats_the_shorter() -> None:
    text = "def f(lo, mid):\n    lo = mid + 1\n    hi = mid\n"
    source = Source("m.py", text)
    step = text.index("1\n")
    after_mid = text.index("mid\n", step) + 3
    likely = Mutation(
        "off_by_one", "m.py", 3, after_mid, after_mid, " - 1", 0.58, "assigned value - 1"
    )
    doubled = Mutation("literal_off_by_one", "m.py", 2, step, step + 1, "2", 0.45, "`1` -> `2`")
    candidates = [Candidate((m,), 0.8, m.prior, i) for i, m in enumerate((likely, doubled))]
    search = Search(candidates, {"m.py": source.text}, workers=1)
    search.run(lambda changed: Verdict("plausible", "", 1), lambda s: True, clock=lambda: 0.0)
    best = search.plausible(set())
    assert [r.candidate.mutations[0] for r in best] == [likely, doubled]
    assert best[0].size[1] > best[1].size[1]  # more characters, still first


def test_a_reset_after_the_value_is_handed_on_ranks_above_other_copies() -> None:
    code = """\
    def words(text, width):
        lines, line = [], ""
        for word in text.split():
            if len(line) + len(word) > width:
                lines.append(line)
            else:
                line = line + word
        return lines
    """
    inserts = [
        m
        for m in mutate_source("m.py", textwrap.dedent(code), 5)
        if m.operator == "insert_statement"
    ]
    best = max(inserts, key=lambda m: m.prior)
    assert best.description == "insert `line = line + word` after"
    assert best.prior == pytest.approx(0.3 * 0.9 * 2.0)


def test_a_single_comparison_is_negated_by_the_comparison_family_only() -> None:
    code = (
        "def s(xs, j):\n    if xs[j] < xs[j + 1]:\n        return 1\n    if a < b < c:\n        "
        "return 2\n"
    )
    assert not lines_added(code, 2, "negate_condition")  # `xs[j] >= xs[j + 1]` says it plainly
    find(code, 2, "comparison", "    if xs[j] >= xs[j + 1]:")
    find(code, 4, "negate_condition", "    if not a < b < c:")
