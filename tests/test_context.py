"""context: grouping by root cause, slices from real tracebacks, the token budget's trim order."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from repairloop.classify import classify_report
from repairloop.context import build_context, group_failures
from repairloop.runner import default_test_command, run_tests
from repairloop.types import (
    Decision,
    Failure,
    FailureKind,
    Frame,
    LastAttempt,
    RepairContext,
    TestFiles,
    TestOutcome,
    TestReport,
    TestResult,
)

# the default test globs; what counts as a test is pinned in test_testfiles.py
TEST_FILES = TestFiles()


def run_and_classify(project: Path) -> Tuple[TestReport, Tuple[Failure, ...]]:
    roots = [Path("src")] if (project / "src").is_dir() else []
    report = run_tests(project, default_test_command(project), pythonpath=roots)
    return report, classify_report(report, project)


def results_of(report: TestReport) -> Dict[str, TestResult]:
    return {r.test_id: r for r in report.results}


def line_of(path: Path, text: str) -> int:
    return path.read_text().splitlines().index(text) + 1


def write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def failure(
    test_id: str,
    frames: Tuple[Frame, ...],
    exc_type: str = "ValueError",
    message: str = "boom",
    hint: str = "",
) -> Failure:
    return Failure(
        test_id, FailureKind.LOGIC, True, message, exc_type=exc_type, frames=frames, hint=hint
    )


def test_shared_root_cause_groups_two_then_one(make_project: Callable[..., Path]) -> None:
    project = make_project("shared_root_cause")
    _, failures = run_and_classify(project)
    groups = group_failures(failures, TEST_FILES)
    assert [[f.test_id for f in g] for g in groups] == [
        [
            "tests/test_pricing.py::test_order_total_with_large_line",
            "tests/test_pricing.py::test_parse_price_with_thousands_separator",
        ],
        ["tests/test_pricing.py::test_apply_discount"],
    ]


def test_grouping_uses_exception_type_and_innermost_code_frame() -> None:
    inner = Frame("pkg/a.py", 3, "parse")
    failures = [
        failure("t::c", (Frame("tests/t.py", 1, "c"), Frame("pkg/a.py", 9, "outer"), inner)),
        failure("t::a", (Frame("tests/t.py", 1, "a"), inner)),
        failure("t::b", (Frame("tests/t.py", 1, "b"), inner), exc_type="KeyError"),
        failure("t::d", (Frame("tests/t.py", 5, "d"),), exc_type="AssertionError"),
        failure("t::e", (Frame("tests/t.py", 7, "e"),), exc_type="AssertionError"),
    ]
    groups = [[f.test_id for f in g] for g in group_failures(failures, TEST_FILES)]
    assert groups == [["t::a", "t::c"], ["t::b"], ["t::d"], ["t::e"]]


def test_context_has_enclosing_functions_with_line_numbers_and_read_only_test(
    make_project: Callable[..., Path],
) -> None:
    project = make_project("shared_root_cause")
    report, failures = run_and_classify(project)
    group = group_failures(failures, TEST_FILES)[0]
    ctx = build_context(project, group, results_of(report), test_files=TEST_FILES)
    code = project / "orders" / "pricing.py"
    by_name = {s.name: s for s in ctx.slices}
    parse = by_name["parse_price"]
    assert (parse.path, parse.start_line) == (
        "orders/pricing.py",
        line_of(code, "def parse_price(text):"),
    )
    assert parse.end_line == line_of(code, '    return float(text.strip().lstrip("$"))')
    assert parse.text.splitlines()[0] == "def parse_price(text):" and not parse.read_only
    assert {"line_total", "order_total"} <= set(by_name)  # every project frame, de-duplicated
    assert ctx.slices[0].name == "parse_price"  # innermost first
    test = by_name["test_parse_price_with_thousands_separator"]
    assert test.read_only and test.path == "tests/test_pricing.py"
    assert "orders/pricing.py:6 in parse_price" in ctx.traceback
    assert "ValueError" in ctx.message
    assert ctx.failing_tests == tuple(f.test_id for f in group)
    assert ctx.tokens > 0 and ctx.trimmed == ()


def test_assertion_failure_shows_the_called_project_function(
    make_project: Callable[..., Path],
) -> None:
    project = make_project("off_by_one")
    report, failures = run_and_classify(project)
    ctx = build_context(project, failures, results_of(report), test_files=TEST_FILES)
    names = {(s.path, s.name, s.read_only) for s in ctx.slices}
    assert ("calc/lists.py", "last_n", False) in names  # found through calc/__init__.py's re-export
    assert ("tests/test_lists.py", "test_last_n", True) in names


def test_big_module_context_stays_small(make_project: Callable[..., Path]) -> None:
    project = make_project("big_module")
    assert len((project / "convert" / "units.py").read_text().splitlines()) > 2800
    report, failures = run_and_classify(project)
    ctx = build_context(project, failures, results_of(report), test_files=TEST_FILES)
    assert ctx.tokens < 3000
    assert any(s.name == "pound_to_ounce" and s.end_line - s.start_line < 10 for s in ctx.slices)


def test_no_site_packages_or_stdlib_frames(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {
            "pkg/__init__.py": "",
            "pkg/core.py": "import json\n\n\ndef load(text):\n    return json.loads(text)\n",
            "tests/test_core.py": "from pkg.core import load\n\n\ndef test_load():\n    assert "
            "load('{') == {}\n",
        },
    )
    frames = (
        Frame("tests/test_core.py", 5, "test_load"),
        Frame("pkg/core.py", 5, "load"),
        Frame(".venv/lib/python3.11/site-packages/simplejson/decoder.py", 40, "decode"),
        Frame("/usr/lib/python3.11/json/decoder.py", 337, "decode"),
    )
    ctx = build_context(
        root, [failure("tests/test_core.py::test_load", frames)], {}, test_files=TEST_FILES
    )
    assert {s.path for s in ctx.slices} == {"pkg/core.py", "tests/test_core.py"}
    assert "site-packages" not in ctx.traceback and "/usr/lib" not in ctx.traceback
    assert ctx.traceback.splitlines() == [
        "tests/test_core.py:5 in test_load",
        "pkg/core.py:5 in load",
    ]


def test_methods_classes_decorators_and_parametrized_ids(tmp_path: Path) -> None:
    big_body = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(20))
    root = write(
        tmp_path / "p",
        {
            "pkg/__init__.py": "",
            "pkg/shapes.py": "import functools\n\n\nclass Big:\n"
            + big_body
            + "    @functools.lru_cache()\n    def area(self):\n        return 1 / 0\n\n\n"
            "class Small:\n    def area(self):\n        return 1 / 0\n",
            "tests/test_shapes.py": """\
            import pytest


            class TestShapes:
                @pytest.mark.parametrize("n", [1, 2])
                def test_area(self, n):
                    assert n
            """,
        },
    )
    code = root / "pkg" / "shapes.py"
    decorator = line_of(code, "    @functools.lru_cache()")
    big_frame = Frame("pkg/shapes.py", decorator + 2, "area")
    small_frame = Frame("pkg/shapes.py", line_of(code, "class Small:") + 2, "area")
    test_frame = Frame("tests/test_shapes.py", 7, "test_area")
    ctx = build_context(
        root,
        [failure("tests/test_shapes.py::TestShapes::test_area[1-2]", (test_frame, big_frame))],
        {},
        test_files=TEST_FILES,
    )
    method = next(s for s in ctx.slices if s.name == "Big.area")
    assert (method.start_line, method.end_line) == (
        decorator,
        decorator + 2,
    )  # the method, with its decorator
    test = next(s for s in ctx.slices if s.read_only)
    assert test.name == "TestShapes.test_area" and test.start_line == 5
    ctx = build_context(root, [failure("t", (small_frame,))], {}, test_files=TEST_FILES)
    assert [s.name for s in ctx.slices] == ["Small"]  # a small class is shown whole


def test_file_that_does_not_parse_gets_a_window(make_project: Callable[..., Path]) -> None:
    project = make_project("syntax_error")
    report, failures = run_and_classify(project)
    ctx = build_context(project, failures, results_of(report), test_files=TEST_FILES)
    window = next(s for s in ctx.slices if s.path == "geometry/shapes.py")
    assert window.start_line <= 10 <= window.end_line and "def area(self)" in window.text
    assert any("geometry/shapes.py:10" in note for note in ctx.notes)  # classify's hint rides along


def test_last_attempt_is_carried_as_is_and_render_is_measured(
    make_project: Callable[..., Path],
) -> None:
    project = make_project("off_by_one")
    report, failures = run_and_classify(project)
    attempt = LastAttempt("--- a/x\n+++ b/x\n", Decision.REVERTED, "fixed nothing", broke=("t::x",))
    rendered: List[RepairContext] = []

    def render(ctx: RepairContext) -> str:
        rendered.append(ctx)
        return "x" * 400

    ctx = build_context(
        project,
        failures,
        results_of(report),
        test_files=TEST_FILES,
        last_attempt=attempt,
        render=render,
    )
    assert ctx.last_attempt is attempt
    assert ctx.tokens == 100 and rendered


def _huge_project(root: Path) -> Tuple[Path, Failure, Dict[str, TestResult]]:
    """Eleven nested project functions of about 200 lines each, called from one test."""
    body = "".join(f"    x{j} = {j}\n" for j in range(195))
    code = "".join(f"def f{i}(v):\n{body}    return f{i + 1}(v)\n\n\n" for i in range(10))
    code += f"def f10(v):\n{body}    raise ValueError(v)\n"
    write(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/deep.py": code,
            "tests/test_deep.py": "from pkg.deep import f0\n\n\ndef test_deep():\n    f0(1)\n",
        },
    )
    lines = (root / "pkg" / "deep.py").read_text().splitlines()
    frames = [Frame("tests/test_deep.py", 5, "test_deep")]
    frames += [
        Frame("pkg/deep.py", lines.index(f"    return f{i + 1}(v)") + 1, f"f{i}") for i in range(10)
    ]
    frames.append(Frame("pkg/deep.py", len(lines), "f10"))
    result = TestResult(
        "tests/test_deep.py::test_deep",
        TestOutcome.FAILED,
        exc_type="ValueError",
        message="1",
        frames=tuple(frames),
        output="captured line\n" * 2000,
    )
    return (
        root,
        failure(result.test_id, tuple(frames), message="ValueError: " + "m" * 5000),
        {result.test_id: result},
    )


def test_trimming_follows_the_documented_order(tmp_path: Path) -> None:
    root, fail, results = _huge_project(tmp_path / "p")
    attempt = LastAttempt("\n".join(f"+line {i}" for i in range(500)), Decision.REVERTED, "no")
    others = [f"tests/test_other.py::test_{i}" for i in range(30)]
    ctx = build_context(
        root,
        [fail],
        results,
        test_files=TEST_FILES,
        other_failing=others,
        last_attempt=attempt,
        token_budget=200,
    )
    steps = [t.split(":")[0] for t in ctx.trimmed]
    order = ["other_failing", "message", "slice dropped", "slice shrunk", "last attempt diff"]
    assert [s for s in order if s in steps] == order  # every step ran ...
    assert steps == sorted(steps, key=order.index)  # ... in this order
    assert len(ctx.other_failing) == 10 and len(ctx.message) < 2100
    names = {s.name for s in ctx.slices}
    assert names == {"f10", "test_deep"}  # the innermost frame's function and the test are kept
    f10 = next(s for s in ctx.slices if s.name == "f10")
    assert (
        f10.end_line - f10.start_line == 25 and "raise ValueError(v)" in f10.text
    )  # +-25 around the frame
    assert ctx.last_attempt is not None and len(ctx.last_attempt.diff.splitlines()) <= 61
    dropped = [t for t in ctx.trimmed if t.startswith("slice dropped")]
    assert "f0" in dropped[0] and "f9" in dropped[-1]  # farthest from the innermost frame first


def test_trimming_stops_as_soon_as_the_budget_fits(tmp_path: Path) -> None:
    root, fail, results = _huge_project(tmp_path / "p")
    ctx = build_context(root, [fail], results, test_files=TEST_FILES, token_budget=10**7)
    assert ctx.trimmed == () and len(ctx.slices) == 12
    ctx = build_context(root, [fail], results, test_files=TEST_FILES, token_budget=6000)
    assert ctx.tokens <= 6000
    assert not any(t.startswith("slice shrunk") for t in ctx.trimmed)
    assert {"f10", "test_deep"} <= {s.name for s in ctx.slices}


DOCTESTED = {
    "pkg/__init__.py": '''\
        """A package."""


        def double(x):
            """Twice x.

            >>> double(3)
            6
            """
            return x * 2 + (1 if x == 3 else 0)
        ''',
    "tests/__init__.py": "",
    "tests/util.py": "def check(a, b):\n    assert a == b, f'{a} != {b}'\n",
    "tests/test_a.py": "from pkg import double\nfrom tests.util import check\n\n\ndef "
    "test_double():\n    check(double(1), 3)\n",
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '--doctest-modules'\n",
}


def test_every_frame_of_a_failure_shown_has_its_code(tmp_path: Path) -> None:
    """Seen on a real project: a prompt showed a traceback but no code. A doctest's failure points
    at its example (the plugin's frame) and at the definition whose docstring holds it; an assertion
    helper in the test suite is shown read-only; the message is the example, what it expected and
    what it got."""
    project = write(tmp_path / "p", DOCTESTED)
    report, failures = run_and_classify(project)
    by_id = {f.test_id: f for f in failures}
    doctest = by_id["pkg/__init__.py::pkg.double"]
    assert doctest.message.splitlines()[1:] == [
        "    double(3)",
        "Expected:",
        "    6",
        "Got:",
        "    7",
    ]
    assert doctest.location == "pkg/__init__.py:7"
    ctx = build_context(project, [doctest], results_of(report), test_files=TEST_FILES)
    assert [(s.path, s.name) for s in ctx.slices] == [("pkg/__init__.py", "double")]
    assert "return x * 2" in ctx.slices[0].text and not ctx.slices[0].read_only
    helper = by_id["tests/test_a.py::test_double"]
    ctx = build_context(project, [helper], results_of(report), test_files=TEST_FILES)
    shown = {(s.path, s.name, s.read_only) for s in ctx.slices}
    assert ("tests/util.py", "check", True) in shown and (
        "pkg/__init__.py",
        "double",
        False,
    ) in shown
    assert "tests/util.py:2 in check" in ctx.traceback


def test_a_slice_dropped_for_room_comes_back_when_a_long_one_is_shrunk(tmp_path: Path) -> None:
    """Step 3 drops the small callers while the long innermost function still overflows; once
    step 4 shrinks it, they fit again and are shown (the prompt keeps its order)."""
    root = tmp_path / "p"
    body = "".join(f"    x{j} = {j}\n" for j in range(300))
    code = "".join(f"def f{i}(v):\n    return f{i + 1}(v)\n\n\n" for i in range(3))
    code += f"def f3(v):\n{body}    raise ValueError(v)\n"
    write(
        root,
        {
            "pkg/__init__.py": "",
            "pkg/deep.py": code,
            "tests/test_deep.py": "from pkg.deep import f0\n\n\ndef test_deep():\n    f0(1)\n",
        },
    )
    lines = code.splitlines()
    frames = [Frame("tests/test_deep.py", 5, "test_deep")]
    frames += [Frame("pkg/deep.py", 2 + 4 * i, f"f{i}") for i in range(3)]
    frames.append(Frame("pkg/deep.py", len(lines), "f3"))
    result = TestResult(
        "tests/test_deep.py::test_deep",
        TestOutcome.FAILED,
        exc_type="ValueError",
        message="1",
        frames=tuple(frames),
    )
    fail = failure(result.test_id, tuple(frames), message="ValueError: 1")
    results = {result.test_id: result}
    full = build_context(root, [fail], results, test_files=TEST_FILES, token_budget=10**7)
    ctx = build_context(
        root, [fail], results, test_files=TEST_FILES, token_budget=full.tokens - 100
    )
    assert [t.split(":")[0] for t in ctx.trimmed] == ["slice shrunk"]
    assert [s.name for s in ctx.slices] == [s.name for s in full.slices]
    assert {"f0", "f1", "f2", "f3", "test_deep"} <= {s.name for s in ctx.slices}
    f3 = next(s for s in ctx.slices if s.name == "f3")
    assert f3.end_line - f3.start_line == 25 and ctx.tokens <= full.tokens - 100


def test_a_long_suspect_is_shown_from_its_def_line_when_the_suspicious_line_is_near(
    tmp_path: Path,
) -> None:
    """A suspect over LONG_FUNCTION lines is shown as LONG_FUNCTION lines: from its def line when
    its most suspicious line is within reach of it, else its signature, a comment naming the lines
    left out, and the lines from LEAD before the suspicious one, in one slice."""
    from repairloop.context.source import Files
    from repairloop.context.suspects import LEAD, LONG_FUNCTION, suspect_pieces
    from repairloop.types import CodeSlice, SuspectFunction

    def shown(root: Path, anchor: int) -> CodeSlice:
        fn = SuspectFunction("pkg/m.py", "big", 1, 402, 1.0, lines=(anchor,))
        (piece,) = suspect_pieces(Files(root), [fn])
        return piece.code

    root = tmp_path
    body = "".join(f"    x{j} = {j}\n" for j in range(399))
    write(root, {"pkg/m.py": f"def big(\n    v,\n):\n{body}    return v\n"})
    near = shown(root, LONG_FUNCTION - LEAD)
    assert (near.start_line, near.end_line) == (1, LONG_FUNCTION)
    assert near.name == f"big (lines 1-{LONG_FUNCTION} of 1-402: the rest not shown)"
    anchor = LONG_FUNCTION - LEAD + 1
    far = shown(root, anchor)
    lines = far.text.splitlines()
    assert lines[:3] == ["def big(", "    v,", "):"]  # the whole signature
    assert lines[3] == f"    # ... lines 4-{anchor - LEAD - 1} not shown ..."
    assert lines[4] == f"    x{anchor - LEAD - 4} = {anchor - LEAD - 4}"  # file line anchor - LEAD
    last = anchor - LEAD + LONG_FUNCTION - 3 - 1 - 1  # signature and comment take 4 lines
    assert len(lines) == LONG_FUNCTION and (far.start_line, far.end_line) == (1, last)
    assert far.name == f"big (lines 1-3 and {anchor - LEAD}-{last} of 1-402: the rest not shown)"
    assert shown(root, 401).end_line == 402  # never past the function's end


def test_a_long_suspect_is_shown_where_most_of_its_most_suspicious_lines_are(
    tmp_path: Path,
) -> None:
    """Lines that share the function's score (``top_lines``) are all equally suspicious: the
    window is the one holding most of them, not the one around the first."""
    from repairloop.context.source import Files
    from repairloop.context.suspects import suspect_pieces
    from repairloop.types import SuspectFunction

    body = "".join(f"    x{j} = {j}\n" for j in range(399))
    write(tmp_path, {"pkg/m.py": f"def big(v):\n{body}    return v\n"})
    fn = SuspectFunction(
        "pkg/m.py", "big", 1, 401, 1.0, lines=(150, 300, 310, 320, 20), top_lines=4
    )
    (piece,) = suspect_pieces(Files(tmp_path), [fn])
    text = piece.code.text
    assert all(f"x{n - 2} = " in text for n in (300, 310, 320))
    assert "x148 = " not in text and "x18 = " not in text


def test_a_method_whose_docstring_has_a_line_at_column_zero_brings_its_imports(
    tmp_path: Path,
) -> None:
    """A docstring line continued at column 0 (after a backslash) does not stop the method from
    parsing: the module-level import it uses is shown with it (semver's ``to_dict`` and
    ``import collections``, fixtures/realbugs)."""
    from repairloop.context.source import Files
    from repairloop.context.suspects import suspect_pieces
    from repairloop.types import SuspectFunction

    module = (
        "import collections\n"
        "\n"
        "\n"
        "class Version:\n"
        "    def to_dict(self):\n"
        '        """\n'
        "        >>> Version().to_dict()\n"
        "        OrderedDict([('major', 3), \\\n"
        "('minor', 2)])\n"
        '        """\n'
        "        return collections.OrderedDict(major=3, minor=2)\n"
    )
    write(tmp_path, {"pkg/version.py": module})
    fn = SuspectFunction("pkg/version.py", "Version.to_dict", 5, 11, 1.0, lines=(11,))
    pieces = suspect_pieces(Files(tmp_path), [fn])
    assert [(p.code.name, p.code.text) for p in pieces if p.code.name == "import"] == [
        ("import", "import collections")
    ]


def test_a_long_copy_is_labelled_like_a_short_one(tmp_path: Path) -> None:
    """A function shown because it repeats a suspect's lines says so in its slice's name, long or
    short."""
    from repairloop.context.source import Files
    from repairloop.context.suspects import suspect_pieces
    from repairloop.types import SuspectFunction

    body = "".join(f"    x{j} = {j}\n" for j in range(199))
    write(
        tmp_path,
        {"pkg/m.py": f"def big(v):\n{body}    return v\n\n\ndef small(v):\n    return v\n"},
    )
    label = " (repeats lines of other; no failing test runs it)"
    for start, end in ((1, 201), (204, 205)):
        fn = SuspectFunction("pkg/m.py", "f", start, end, 1.0, lines=(start + 1,), copy_of="other")
        (piece,) = suspect_pieces(Files(tmp_path), [fn])
        assert piece.code.name.endswith(label), piece.code.name
