"""Operators for the shapes of real fixes (issue 28): each test mutates a snippet in that shape and
finds the fix among the family's mutations, so it fails without the family.

The shapes and how often they occur in the real bugs of fixtures/realbugs* are in
fixtures/bench/README.md; each family also has a bench case there.
"""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

from repairloop.localise import localise
from repairloop.propose.builtin import BuiltinProposer
from repairloop.propose.builtin.edits import apply_edits
from repairloop.propose.builtin.hints import family_boosts
from repairloop.propose.builtin.mutate import mutate_source
from repairloop.types import TestFiles, TestOutcome, TestReport, TestResult


def changes(code: str, line: int, operator: str) -> List[Tuple[List[str], List[str]]]:
    """(removed lines, added lines) of every ``operator`` mutation of ``line``; each compiles."""
    text = textwrap.dedent(code)
    found = []
    for mutation in mutate_source("m.py", text, line):
        if mutation.operator != operator:
            continue
        new = apply_edits(text, [mutation.edit])
        compile(new, "m.py", "exec")
        diff = list(difflib.ndiff(text.splitlines(), new.splitlines()))
        found.append(
            (
                [d[2:].strip() for d in diff if d.startswith("- ")],
                [d[2:].strip() for d in diff if d.startswith("+ ")],
            )
        )
    return found


def added(code: str, line: int, operator: str) -> List[List[str]]:
    return [a for _, a in changes(code, line, operator)]


ROW = """
MAX_WIDTH = 24
MAX_ROWS = 5
SEPARATOR = " | "
DIGITS = 6


def render_row(cells, widths, pad=" ", align="left"):
    parts = []
    for cell, width in zip(cells, widths):
        text = str(cell)
        room = max(0, width - len(text))
        piece = text + pad * room if align == "left" else pad * room + text
        parts.append(piece)
    row = SEPARATOR.join(parts)
    return row[:MAX_ROWS] + "0" * DIGITS
"""


def test_wrong_constant_offers_another_module_constant_where_locals_crowd_out_module_names() -> (
    None
):
    assert ['return row[:MAX_WIDTH] + "0" * DIGITS'] in added(ROW, 16, "wrong_constant")
    # wrong_variable's eight choices are the function's own locals here
    assert ['return row[:MAX_WIDTH] + "0" * DIGITS'] not in added(ROW, 16, "wrong_variable")


def test_constant_value_changes_the_definition_of_a_constant_read_on_the_line() -> None:
    found = changes(ROW, 16, "constant_value")
    assert (["DIGITS = 6"], ["DIGITS = 7"]) in found and (["DIGITS = 6"], ["DIGITS = 5"]) in found
    assert all(not r[0].startswith("SEPARATOR") for r, _ in found)  # a string: not a number


def test_self_callable_calls_a_method_where_a_module_function_is_called() -> None:
    code = """
    def escape(text):
        return text.replace("<", "&lt;")


    class Renderer:
        def safe_url(self, url):
            return "#" if url.startswith("javascript:") else escape(url)

        def image(self, src):
            return '<img src="' + escape(src) + '">'
    """
    found = added(code, 11, "self_callable")
    assert ["return '<img src=\"' + self.safe_url(src) + '\">'"] in found
    assert not any("self.image(" in line for lines in found for line in lines)  # no recursion


def test_self_callable_in_a_module_function_taking_self_offers_what_its_kind_calls() -> None:
    """mistune's renderer plug-ins: module-level functions whose ``self`` is the renderer."""
    code = """
    class Directive:
        def parse(self, m):
            return self.parse_title(m), self.parse_options(m), self.parse_content(m)


    def render_figure(self, src):
        return self.safe_url(src)


    def render_image(self, src):
        return '<img src="' + escape_text(src) + '">'
    """
    found = added(code, 12, "self_callable")
    assert found == [["return '<img src=\"' + self.safe_url(src) + '\">'"]]


def test_self_callable_ranks_a_method_sharing_a_word_with_the_call_below_the_unwrap() -> None:
    """mistune-image-alt-double-encoding (BENCHMARKS.md figure 16): ``escape_text(striptags(x))``
    was fixed by dropping the call; ``self.text(...)`` also passed the tests and ranked first."""
    code = textwrap.dedent(
        """
        class Renderer:
            def text(self, s):
                return s

            def safe_url(self, url):
                return url

            def image(self, src, alt):
                alt = escape_text(striptags(alt))
                return alt
        """
    )
    priors: Dict[Tuple[str, str], float] = {}
    for m in mutate_source("m.py", code, 10):  # both calls of the line; the higher prior counts
        if m.operator in ("self_callable", "sub_expression"):
            key = (m.operator, m.replacement)
            priors[key] = max(priors.get(key, 0.0), m.prior)
    unwrap = priors[("sub_expression", "striptags(alt)")]
    assert priors[("self_callable", "self.text")] < unwrap
    assert priors[("self_callable", "self.text")] == priors[("self_callable", "self.safe_url")]


def test_add_clause_adds_the_missing_lower_bound_and_nearby_comparisons() -> None:
    code = """
    def item_at(items, index, limit):
        if index >= len(items):
            return None
        if index > limit:
            return None
        return items[index]
    """
    found = added(code, 3, "add_clause")
    assert ["if index >= len(items) or index < 0:"] in found
    assert ["if index >= len(items) or index > limit:"] in found
    assert ["if index >= len(items) and index > limit:"] in found


def test_add_clause_parenthesises_an_or_before_and() -> None:
    code = """
    def f(a, b):
        if a or b:
            return 1
        if a > b:
            return 2
    """
    assert ["if (a or b) and a > b:"] in added(code, 3, "add_clause")


def test_clamp_wraps_a_difference_in_max_and_a_value_in_min_with_a_length() -> None:
    code = """
    def window(xs, center, radius, n=None):
        start = center - radius
        end = len(xs) if n is None else n
        return xs[start:end]
    """
    assert ["start = max(0, center - radius)"] in added(code, 3, "clamp")
    assert ["end = len(xs) if n is None else min(n, len(xs))"] in added(code, 4, "clamp")


def test_insert_break_ends_the_branch_of_an_if_inside_a_loop() -> None:
    code = """
    def parse(lines):
        start = len(lines)
        for i, line in enumerate(lines):
            if not line.strip():
                start = i + 1
            print(line)
        return start
    """
    assert ["break"] in added(code, 6, "insert_break")
    assert added(code, 7, "insert_break") == []  # not the loop's own last statement


def test_flush_after_loop_hands_on_the_last_group() -> None:
    code = """
    def runs(xs):
        out, current = [], []
        for x in xs:
            if current and x != current[-1]:
                out.append(current)
                current = []
            current.append(x)
        return out
    """
    for line in (4, 6):  # the loop's header, the hand-on statement
        assert ["if current:", "out.append(current)"] in added(code, line, "flush_after_loop")
    # the plain copy after the loop (from the header, insert_statement's copy is the same edit)
    assert ["out.append(current)"] in added(code, 6, "flush_after_loop")


def test_repeat_edit_applies_one_edit_to_every_line_that_reads_the_same() -> None:
    code = """
    def mean(xs):
        total = sum(xs) / len(xs)
        return round(total, 3)


    def spread(xs):
        total = max(xs) - min(xs)
        return round(total, 3)
    """
    found = changes(code, 4, "repeat_edit")
    assert (["return round(total, 3)"] * 2, ["return round(total, 2)"] * 2) in found


def test_a_target_that_hung_at_the_baseline_gets_a_short_candidate_timeout(tmp_path: Path) -> None:
    hung = TestReport(
        ("pytest",),
        1,
        results=(
            TestResult("t.py::a", TestOutcome.FAILED, duration=8.0, exc_type="plugin.Timeout"),
            TestResult("t.py::b", TestOutcome.FAILED, duration=8.0, exc_type="plugin.Timeout"),
            TestResult("t.py::ok", TestOutcome.PASSED, duration=0.01),
        ),
        seconds=16.5,
    )
    engine = BuiltinProposer(
        localiser=localise,
        project_root=tmp_path,
        run_tests=lambda *a: hung,
        test_files=TestFiles(("tests/*",)),
        candidate_timeout=10.0,
    )
    plan = engine._make_plan(hung, ("t.py::a", "t.py::b"))
    # not 3x the 16 s the hangs took: a candidate that keeps the hang is stopped after 5 s
    assert plan.target_timeout == 5.0 and plan.probe_timeout == 5.0
    assert plan.probe == ("t.py::a",)
    assert family_boosts(hung, ("t.py::a", "t.py::b"))["insert_break"] > 1.0
