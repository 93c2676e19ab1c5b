"""Fault localisation of the builtin engine: Ochiai over per-test coverage, traceback fallback.

The coverage tests run a real pytest subprocess through repairloop's runner
with per-test coverage contexts, on a small project built under tmp_path.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Dict

import pytest

from repairloop import runner
from repairloop.localise import EVERY_TEST, localise, ochiai, rank
from repairloop.types import FAR, Frame, TestFiles, TestReport

STATS = '''\
"""Small statistics module."""


def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 3
'''
BUG_LINE = 16

TESTS = """\
from mini.stats import mean, median


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_single():
    assert mean([4]) == 4


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_median_pair():
    assert median([10, 20]) == 15
"""
FAILING = ("tests/test_stats.py::test_median_even", "tests/test_stats.py::test_median_pair")


def write_project(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture
def stats_project(tmp_path: Path) -> Path:
    return write_project(
        tmp_path / "proj",
        {"mini/__init__.py": "", "mini/stats.py": STATS, "tests/test_stats.py": TESTS},
    )


def run_with_coverage(root: Path):
    return runner.run_tests(
        root,
        (sys.executable, "-m", "pytest", "-q"),
        timeout=120,
        pythonpath=[root],
        coverage_source=["mini"],
    )


def drop_coverage(report: TestReport) -> None:
    """The caller owns the runner's coverage data file and its private directory."""
    if report.coverage_file:
        shutil.rmtree(Path(report.coverage_file).parent, ignore_errors=True)


def sources_of(root: Path) -> Dict[str, str]:
    return {"mini/stats.py": (root / "mini/stats.py").read_text(), "mini/__init__.py": ""}


def test_ochiai_formula() -> None:
    lines = {
        ("m.py", 1): frozenset({"f1", "f2", "p1", "p2"}),  # run by every test
        ("m.py", 2): frozenset({"f1", "f2"}),  # only by the failing ones
        ("m.py", 3): frozenset({"f1", "p1"}),
        ("m.py", 4): frozenset({"p1"}),  # never by a failing test: not suspicious
    }
    scores = ochiai(lines, ["f1", "f2"], ["p1", "p2"])
    assert scores[("m.py", 2)] == (1.0, 2, 0)
    assert scores[("m.py", 1)][0] == pytest.approx(2 / (2 * 4) ** 0.5)  # ef / sqrt(F * (ef + ep))
    assert scores[("m.py", 3)][0] == pytest.approx(1 / (2 * 2) ** 0.5)
    assert ("m.py", 4) not in scores


def test_ties_are_broken_by_distance_to_the_failing_frames() -> None:
    scores = {("m.py", 3): (1.0, 1, 0), ("m.py", 20): (1.0, 1, 0), ("m.py", 9): (0.5, 1, 1)}
    frames = [Frame("m.py", 19)]
    ranked = rank(scores, frames)
    assert [(s.line, s.distance) for s in ranked] == [(20, 1), (3, 16), (9, 10)]
    assert rank(scores, [])[0].distance == FAR
    # Same input in another insertion order: same ranking (no dict-order dependence).
    assert rank(dict(reversed(list(scores.items()))), frames) == ranked


def test_ochiai_ranks_the_buggy_line_first(stats_project: Path) -> None:
    report = run_with_coverage(stats_project)
    assert report.coverage_file is not None, report.output[-2000:]
    try:
        loc = localise(
            report, stats_project, FAILING, "", TestFiles(("tests/*",)), sources_of(stats_project)
        )
    finally:
        drop_coverage(report)
    assert loc.method == "coverage"
    top = loc.suspects[0]
    assert (top.path, top.line, top.score) == ("mini/stats.py", BUG_LINE, 1.0)
    assert (top.failed, top.passed) == (2, 0)
    # no test file is ever suspected
    assert not any(s.path.startswith("tests/") for s in loc.suspects)
    module_level = [
        s for s in loc.suspects if s.path == "mini/__init__.py"
    ]  # run at import, for every test
    assert all(s.score < top.score for s in module_level)
    assert set(loc.passing) >= {
        "tests/test_stats.py::test_mean",
        "tests/test_stats.py::test_median_odd",
    }


def test_import_time_code_counts_as_run_by_every_test() -> None:
    lines = {("m.py", 1): frozenset({EVERY_TEST}), ("m.py", 5): frozenset({"t::fail"})}
    scores = ochiai(lines, ["t::fail"], ["t::a", "t::b", "t::c"])
    assert scores[("m.py", 5)][0] == 1.0
    assert scores[("m.py", 1)] == (0.5, 1, 3)  # 1 / sqrt(1 * (1 + 3)): a candidate, ranked low


def test_traceback_fallback_when_there_is_no_coverage(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        {
            "mini/__init__.py": "",
            "mini/items.py": "def last(xs):\n    i = len(xs)\n    return xs[i]\n\n\ndef "
            "first(xs):\n    return xs[0]\n",
            "tests/test_items.py": (
                "from mini.items import first, last\n\n\n"
                "def test_first():\n    assert first([1, 2]) == 1\n\n\n"
                "def test_last():\n    assert last([1, 2]) == 2\n"
            ),
        },
    )
    report = runner.run_tests(
        root, (sys.executable, "-m", "pytest", "-q"), timeout=120, pythonpath=[root]
    )
    assert report.coverage_file is None
    failing = ("tests/test_items.py::test_last",)
    assert report.failing_ids == failing
    sources = {"mini/items.py": (root / "mini/items.py").read_text()}
    loc = localise(report, root, failing, "", TestFiles(("tests/*",)), sources)
    assert loc.method == "traceback"
    assert "no per-test line data" in loc.note
    assert (loc.suspects[0].path, loc.suspects[0].line) == ("mini/items.py", 3)  # the raising frame
    assert ("mini/items.py", 2) in {
        (s.path, s.line) for s in loc.suspects
    }  # the rest of its function


def test_traceback_fallback_uses_the_functions_a_failing_test_calls(stats_project: Path) -> None:
    report = run_with_coverage(stats_project)
    drop_coverage(report)
    no_coverage = replace(report, coverage_file=None)
    loc = localise(
        no_coverage, stats_project, FAILING, "", TestFiles(("tests/*",)), sources_of(stats_project)
    )
    assert loc.method == "traceback"
    lines = {s.line for s in loc.suspects}
    assert BUG_LINE in lines  # median() is called by the failing tests
    assert 5 not in lines  # mean() is not


def test_traceback_text_frames_are_used_when_results_carry_none(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"pkg/mod.py": "a = 1\nb = 2\nc = 3\nd = 4\n"})
    report = TestReport(command=("pytest",), exit_code=1)  # no structured results at all
    text = 'Traceback (most recent call last):\n  File "pkg/mod.py", line 3, in <module>\n'
    loc = localise(
        report,
        root,
        ("tests/test_x.py::test_a",),
        text,
        TestFiles(("tests/*",)),
        {"pkg/mod.py": "a = 1\n"},
    )
    assert (loc.suspects[0].path, loc.suspects[0].line) == ("pkg/mod.py", 3)


NESTED = """\
def widest(rows):
    def width(cell):
        return len(str(cell)) - 1

    return max(width(cell) for row in rows for cell in row)


class Table:
    def render(self):
        def line(cells):
            return " | ".join(cells)

        return line(["a"])
"""


def test_a_nested_function_is_ranked_as_the_function_that_defines_it() -> None:
    """A closure's line is suspected in its outermost function (the unit a whole-function answer
    replaces); a method keeps its own name, with its nested helper inside it."""
    from repairloop.localise import rank_functions
    from repairloop.types import Suspect

    suspects = [Suspect("t.py", 3, 1.0), Suspect("t.py", 11, 0.9), Suspect("t.py", 5, 0.5)]
    ranked = rank_functions(suspects, {"t.py": NESTED}, {})
    assert [(f.name, f.start, f.end, f.lines) for f in ranked] == [
        ("widest", 1, 5, (3, 5)),
        ("Table.render", 9, 13, (11,)),
    ]
    assert [f.top_lines for f in ranked] == [1, 1]


TWINS = """\
def clip_text(values, limit=None):
    if limit is not None and limit < 0:
        raise ValueError("limit must not be negative")
    end = len(values) if limit is None else limit
    kept = []
    for position in range(end):
        kept.append(values[position])
    return "".join(kept)


def clip_items(values, limit=None):
    if limit is not None and limit < 0:
        raise ValueError("limit must not be negative")
    end = len(values) if limit is None else limit
    kept = []
    for position in range(end):
        kept.append(values[position])
    return list(kept)


def first(values):
    end = len(values) if limit is None else limit
    return values[0]
"""


def test_a_function_repeating_the_suspects_lines_is_its_copy() -> None:
    """A function no failing test ran that shares at least MIN_SHARED_LINES distinctive lines with
    a top suspect is listed as its copy, the shared lines first; one shared line is no copy."""
    from repairloop.localise.functions import rank_functions
    from repairloop.localise.related import MIN_SHARED_LINES, copies
    from repairloop.types import Suspect

    suspects = [Suspect("t.py", n, 1.0) for n in (4, 6, 7, 2, 3, 8)]
    ranked = rank_functions(suspects, {"t.py": TWINS}, {})
    (copy,) = copies(ranked, {"t.py": TWINS})
    assert (copy.name, copy.copy_of, copy.start, copy.end) == ("clip_items", "clip_text", 11, 18)
    assert copy.lines == (14, 16, 17, 12, 13) and len(copy.lines) >= MIN_SHARED_LINES
    assert "first" not in {c.name for c in copies(ranked, {"t.py": TWINS})}
    # a line found in more places than MAX_PLACES is an idiom: no evidence
    again = "    end = len(values) if limit is None else limit\n"
    crowded = TWINS + "".join(f"\n\ndef other_{n}(values, limit=None):\n{again}" for n in range(4))
    (copy,) = copies(rank_functions(suspects, {"t.py": crowded}, {}), {"t.py": crowded})
    assert 14 not in copy.lines


CHECKER = """\
class Checker:
    def load(self, node, parent):
        if parent == "shift":
            return "report"
        return node

    def name(self, node):
        return self.load(node, self.parent_of(node))

    def augmented(self, node):
        return self.load(node, "aug")

    def parent_of(self, node):
        return "shift"


def helper(value):
    return len(value)


def one(value):
    return helper(value)


def two(value):
    return helper(value) + 1


def three(value):
    return helper(value) + 2


def four(value):
    return helper(value) + 3
"""


def test_the_few_callers_of_a_suspect_come_with_it() -> None:
    """A suspect called from at most MAX_CALL_SITES places brings the callers no failing test ran
    (a fix that changes what it takes changes them too); a function called from more places is a
    utility, and its callers are no lead."""
    from repairloop.localise.functions import rank_functions
    from repairloop.localise.related import callers
    from repairloop.types import Suspect

    ranked = rank_functions(
        [Suspect("c.py", 3, 1.0), Suspect("c.py", 11, 0.5)], {"c.py": CHECKER}, {}
    )
    assert [f.name for f in ranked] == ["Checker.load", "Checker.augmented"]
    found = callers(ranked, {"c.py": CHECKER})
    assert [(f.name, f.calls, f.lines) for f in found] == [("Checker.name", "Checker.load", (8,))]
    busy = rank_functions([Suspect("c.py", 18, 1.0)], {"c.py": CHECKER}, {})
    assert callers(busy, {"c.py": CHECKER}) == ()  # helper has four callers


IS_TEXT = """\
def is_text(node):
    return isinstance(node, str)


def apply(node):
    if node is None:
        return None
    if not is_text(node):
        return node.text
    return node


def process(nodes):
    out = []
    for node in nodes:
        out.append(node)
        if not is_text(node):
            out.append(node.tail)
    return out


def render(nodes):
    return [is_text(n) for n in nodes] + [is_text(nodes)]
"""


def test_a_call_of_a_suspect_no_failing_test_reached_brings_its_function() -> None:
    """A function whose call of a top suspect no failing test ran comes with the suspect, with its
    own suspicious lines, though the tests ran other lines of it (the same misuse, fixed behind
    the crash); a caller is counted once however often it calls (render calls twice, and three
    callers are at most MAX_CALLING_FUNCTIONS); with no line data no ranked function is a
    caller."""
    from repairloop.localise.functions import rank_functions
    from repairloop.localise.related import callers
    from repairloop.types import Suspect

    suspects = [
        Suspect("c.py", 2, 1.0),
        Suspect("c.py", 9, 0.5),
        Suspect("c.py", 23, 0.4),
        Suspect("c.py", 14, 0.2),
    ]
    ranked = rank_functions(suspects, {"c.py": IS_TEXT}, {})
    assert [f.name for f in ranked] == ["is_text", "apply", "render", "process"]
    ran = {("c.py", n) for n in (2, 6, 8, 9, 14, 15, 16, 23)}  # the crash in apply comes first
    found = callers(ranked, {"c.py": IS_TEXT}, ran=ran)
    assert [(f.name, f.calls, f.lines) for f in found] == [("process", "is_text", (14,))]
    assert callers(ranked, {"c.py": IS_TEXT}, ran=ran | {("c.py", 17)}) == ()
    assert callers(ranked, {"c.py": IS_TEXT}) == ()  # no line data: every caller is ranked


HINTS = """\
def show_hint(command):
    return "Try '{command} --help' for help.".format(command=command)


def show_usage(command):
    return f"Usage: {command} [OPTIONS]"


def other():
    return "Try again"
"""


def test_a_function_whose_text_the_failure_quotes_is_a_speaker() -> None:
    """The code that wrote a wrong message is found by its literal's pieces between placeholders
    (at least MIN_FRAGMENT_CHARS characters) in the failing tests' messages; a piece held by more
    than MAX_HOLDERS functions, or a short one, names no one."""
    from repairloop.localise.related import speakers

    message = "assert \"Try 'cli foo --help' for help.\" in [\"Try 'cli foo -h' for help.\"]"
    found = speakers({"h.py": HINTS}, message)
    assert [(f.name, f.says, f.lines) for f in found] == [("show_hint", "--help' for help.", (2,))]
    assert speakers({"h.py": HINTS}, "") == ()
    crowded = HINTS + "".join(
        f'\n\ndef hint_{n}():\n    return "--help\' for help."\n' for n in range(3)
    )
    assert speakers({"h.py": crowded}, message) == ()


PLACEHOLDERS = """\
import re

STX = "\\u0002"
PREFIX = STX + "klzzwxh:"
TOKEN = PREFIX + "%s" + "\\u0003"
TOKEN_RE = re.compile(TOKEN % "([0-9]+)")


def make(n):
    return TOKEN % n


def unescape(text, stash):
    return TOKEN_RE.sub(lambda m: stash[m.group(1)], text)


def other():
    return STX
"""


def test_the_readers_of_a_constant_whose_text_the_failure_quotes_are_speakers() -> None:
    """A quoted piece held by a module-level constant names the functions reading it, or a
    constant built from it, by ``NAME`` or ``module.NAME`` (a leaked placeholder names the code
    that should have replaced it), most suspicious first; a constant more than MAX_READERS
    functions read names no one."""
    from repairloop.localise.functions import rank_functions
    from repairloop.localise.related import MAX_READERS, speakers
    from repairloop.types import Suspect

    sources = {
        "p.py": PLACEHOLDERS,
        "q.py": "import p\n\n\ndef strip(text):\n    return p.TOKEN_RE.sub('', text)\n",
    }
    message = "'<p>\\x02klzzwxh:0000\\x03</p>' != '<p><b>x</b></p>'"
    ranked = rank_functions([Suspect("p.py", 14, 0.7)], sources, {})
    found = speakers(sources, message, functions=ranked)
    assert [(f.path, f.name, f.via, f.says) for f in found] == [
        ("p.py", "unescape", "TOKEN_RE", "klzzwxh:"),
        ("p.py", "make", "TOKEN", "klzzwxh:"),
    ]
    assert [f.name for f in speakers(sources, message)] == ["make", "unescape"]  # by place
    crowded = dict(sources)
    for n in range(MAX_READERS - 2):
        crowded[f"r{n}.py"] = f"from p import TOKEN\n\n\ndef use{n}():\n    return TOKEN\n"
    assert speakers(crowded, message) == ()


def test_ties_go_to_the_function_the_failing_test_names() -> None:
    """Among functions of equal score and distance, the one whose name shares words with the
    failing tests' names ranks first (``test_header_...`` and ``HashHeaderProcessor.run``)."""
    from repairloop.localise import rank_functions
    from repairloop.types import Suspect

    module = (
        "class ListProcessor:\n    def run(self):\n        return 1\n\n\n"
        "class HashHeaderProcessor:\n    def run(self):\n        return 2\n"
    )
    suspects = [Suspect("b.py", 3, 0.7), Suspect("b.py", 8, 0.7)]
    plain = rank_functions(suspects, {"b.py": module}, {})
    assert [f.name for f in plain] == ["ListProcessor.run", "HashHeaderProcessor.run"]
    named = rank_functions(
        suspects, {"b.py": module}, {}, ["tests/test_blocks.py::test_headers_after_paragraph"]
    )
    assert [f.name for f in named] == ["HashHeaderProcessor.run", "ListProcessor.run"]


def test_ties_go_to_the_function_the_failing_test_describes(tmp_path: Path) -> None:
    """The failing test's docstring and comments count with its name (``described_by_tests``), a
    function's word matching a longer one that holds it (``compile`` in ``recompiled``)."""
    from repairloop.localise import rank_functions
    from repairloop.localise.ochiai import described_by_tests
    from repairloop.types import Suspect

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lists.py").write_text(
        "def test_other():\n    # nothing about rules\n    pass\n\n\n"
        "class TestLists:\n"
        "    def test_marker_run(self):\n"
        '        """A short marker run stays text."""\n'
        "        # the break rules are recompiled per item\n"
        "        assert True\n"
    )
    test_id = "tests/test_lists.py::TestLists::test_marker_run"
    described = described_by_tests([test_id], tmp_path)
    assert "recompiled per item" in described and "short marker run" in described
    assert "nothing about" not in described
    module = (
        "def clean_line(text):\n    return text\n\n\ndef compile_sc(rules):\n    return rules\n"
    )
    suspects = [Suspect("l.py", 2, 0.7), Suspect("l.py", 6, 0.7)]
    plain = rank_functions(suspects, {"l.py": module}, {}, [test_id])
    assert [f.name for f in plain] == ["clean_line", "compile_sc"]
    told = rank_functions(suspects, {"l.py": module}, {}, [test_id], described)
    assert [f.name for f in told] == ["compile_sc", "clean_line"]
