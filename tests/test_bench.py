"""``repairloop bench``'s parts that need no repair run: shards, whitespace-normalised comparison,
the hidden-test verdict, merging shards and its refusals, the command line's routing and refusals,
and the progress line. The runs themselves are in ``test_bench_e2e.py``."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

from repairloop.cli import main
from repairloop.cli.bench import BenchProgress
from repairloop.errors import ConfigError
from repairloop.integrations.bench import (
    BENCH_JSON,
    BenchRun,
    CaseResult,
    Shard,
    find_cases,
    markdown_table,
    merge,
    parse_shard,
    same_code,
    select_shard,
    totals,
)
from repairloop.integrations.bench.correct import hidden_verdict, matches_reference, patched_copy
from repairloop.reports.console import make_console
from repairloop.types import ResultSource, TestOutcome, TestReport, TestResult

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "fixtures" / "bench"


def row(name: str, outcome: str = "fixed", **extra: Any) -> CaseResult:
    plausible = outcome == "fixed"
    fields: Dict[str, Any] = {
        "plausible": plausible,
        "seconds": float(len(name)),
        "tokens": 10,
        "cost_usd": 0.01,
    }
    fields.update(extra)
    return CaseResult(
        name, "literal", True, outcome, "success" if plausible else "stagnation", **fields
    )


ROWS = [
    row("a", correct=True, matches_reference=True, passes_hidden_tests=True),
    row("b", correct=False, matches_reference=False, passes_hidden_tests=False),
    row("c", "not_fixed"),
    row("d"),
    row("e", "error", plausible=False),
    row("f", correct=True, matches_reference=False, passes_hidden_tests=True, edits_tests=True),
]
BENCH_INFO = {
    "cases_dir": "cases",
    "cases": [r.name for r in ROWS],
    "models": [],
    "timeout": None,
    "workers": None,
}


def write_shards(root: Path, count: int) -> List[Path]:
    """The rows of ROWS split as ``--shard I/count`` would, each written as a kept bench.json."""
    dirs = []
    for index in range(1, count + 1):
        shard = Shard(index, count)
        mine = tuple(r for r in ROWS if r in select_shard_rows(shard))
        path = root / f"shard-{index}"
        path.mkdir()
        (path / BENCH_JSON).write_text(json.dumps(BenchRun(BENCH_INFO, mine, shard).to_json()))
        dirs.append(path)
    return dirs


def select_shard_rows(shard: Shard) -> List[CaseResult]:
    return ROWS[shard.index - 1 :: shard.count]


# -- shards
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 3, 5, 40])
def test_shards_cover_every_case_once_and_differ_by_at_most_one(count: int) -> None:
    cases = find_cases(BENCH)
    slices = [select_shard(cases, Shard(i, count)) for i in range(1, count + 1)]
    names = [c.name for part in slices for c in part]
    assert sorted(names) == sorted(c.name for c in cases) and len(names) == len(set(names))
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert [c.name for c in select_shard(list(reversed(cases)), Shard(1, count))] == [
        c.name for c in slices[0]
    ]


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "2", "1/0", "-1/2", ""])
def test_a_shard_that_is_not_i_of_n_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="is not I/N"):
        parse_shard(text)


def test_a_shard_is_read() -> None:
    assert parse_shard(" 2/4 ") == Shard(2, 4)


# -- same change after normalising whitespace
# ----------------------------------------------------------


@pytest.mark.parametrize(
    "first, second, same",
    [
        ("def f(x):\n    return x*3\n", "def f(x):\n    return x * 3\n", True),
        ("def f(x):\n  return (x +\n          1)\n", "def f(x):\n    return (x + 1)\n\n\n", True),
        ("def f(x):\n    return x * 3  \n", "def f(x):\n    return x * 3\n", True),
        ("def f(x):\n    return x * 3\n", "def f(x):\n    return 3 * x\n", False),
        # indentation is structure: a statement moved out of the loop is another change
        ("for i in r:\n    a()\n    b()\n", "for i in r:\n    a()\nb()\n", False),
        ("s = 'a b'\n", "s = 'a  b'\n", False),  # whitespace inside a string is content
        ("x = 1  # one\n", "x = 1\n", False),  # a comment is part of the change
    ],
)
def test_python_is_compared_as_tokens(first: str, second: str, same: bool) -> None:
    assert same_code("m.py", first, second) is same


def test_other_files_are_compared_as_words_and_missing_files_only_match_missing() -> None:
    assert same_code("README.md", "a  b\n\nc\n", "a b c")
    assert not same_code("README.md", "a b", "a c")
    assert same_code("m.py", None, None) and not same_code("m.py", None, "")
    # untokenizable: words
    assert same_code("m.py", "def broken(:\n  x =  1\n", "def broken(:\n x = 1")


def test_a_patch_matches_the_reference_it_was_written_like(tmp_path: Path) -> None:
    case = find_cases(BENCH)[[c.name for c in find_cases(BENCH)].index("caesar_modulus")]
    reference = case.reference.read_text() if case.reference else ""
    spaced = reference.replace("% 26 + base)", "%26 + base)")
    wrong = reference.replace("% 26 + base)", "% 26 + base + 0)")
    ref_root, touched = patched_copy(case, reference, tmp_path / "ref")
    for name, patch, expected in (("spaced", spaced, True), ("wrong", wrong, False)):
        root, changed = patched_copy(case, patch, tmp_path / name)
        assert matches_reference(root, changed, ref_root, touched) is expected, name
    assert not (ref_root / "reference.patch").exists() and not (ref_root / "hidden_tests").exists()


# -- the hidden-test verdict
# ---------------------------------------------------------------------------


def report(results: List[TestResult], exit_code: int = 0, **extra: Any) -> TestReport:
    return TestReport(
        ("pytest",),
        exit_code,
        tuple(results),
        source=ResultSource.PLUGIN,
        collected=len(results),
        **extra,
    )


HIDDEN = ("tests/test_x_hidden.py",)
PASSED = TestResult("tests/test_x_hidden.py::test_a", TestOutcome.PASSED)
VISIBLE = TestResult("tests/test_x.py::test_v", TestOutcome.PASSED)


def test_hidden_tests_pass_only_when_reported_passed_in_a_green_run() -> None:
    assert hidden_verdict(report([VISIBLE, PASSED]), HIDDEN) == (True, 1, "1 hidden test(s) passed")
    failed = TestResult("tests/test_x_hidden.py::test_b", TestOutcome.FAILED)
    ok, count, detail = hidden_verdict(report([VISIBLE, PASSED, failed], 1), HIDDEN)
    assert (ok, count) == (False, 2) and "test_x_hidden.py::test_b" in detail
    skipped = TestResult("tests/test_x_hidden.py::test_c", TestOutcome.SKIPPED)
    assert (
        hidden_verdict(report([VISIBLE, PASSED, skipped]), HIDDEN)[0] is False
    )  # skipped is not passed
    broke = TestResult("tests/test_x.py::test_w", TestOutcome.FAILED)
    assert "1 other test(s) failed" in hidden_verdict(report([PASSED, broke], 1), HIDDEN)[2]


def test_hidden_tests_that_never_ran_or_a_run_cut_short_do_not_pass() -> None:
    ok, count, detail = hidden_verdict(report([VISIBLE]), HIDDEN)
    assert (ok, count) == (False, 0) and "no hidden test ran" in detail
    assert hidden_verdict(report([VISIBLE, PASSED], 0, complete=False), HIDDEN)[0] is False
    assert hidden_verdict(report([VISIBLE, PASSED], None, timed_out=True), HIDDEN)[2].endswith(
        "it timed out"
    )


# -- totals and merging
# ----------------------------------------------------------------------------------


def test_totals_count_correct_among_the_judged_plausible_patches() -> None:
    t = totals(ROWS)
    assert (t["cases"], t["fixed"], t["plausible"], t["judged"], t["correct"]) == (6, 4, 4, 3, 2)
    assert t["correct_share"] == 0.667 and t["errors"] == 1 and t["patches_editing_tests"] == 1
    assert totals([row("x")])["correct_share"] is None  # nothing judged: no share, not 0%
    assert "correct: 2 of the 3" in markdown_table(ROWS) and "(67%)" in markdown_table(ROWS)


@pytest.mark.parametrize("count", [2, 3, 6])
def test_merged_shards_give_the_totals_and_rows_of_one_run(count: int, tmp_path: Path) -> None:
    merged = merge(list(reversed(write_shards(tmp_path, count))))
    assert merged.to_json()["totals"] == totals(ROWS)
    assert [r.name for r in merged.cases] == [r.name for r in ROWS]
    assert markdown_table(merged.cases) == markdown_table(ROWS)


def test_merge_points_kept_runs_at_the_directory_given(tmp_path: Path) -> None:
    dirs = write_shards(tmp_path, 2)
    data = json.loads((dirs[0] / BENCH_JSON).read_text())
    data["cases"][0]["run_dir"] = "/elsewhere/on/the/ci/machine/a"  # where the shard's job kept it
    (dirs[0] / BENCH_JSON).write_text(json.dumps(data))
    (dirs[0] / "a").mkdir()
    (dirs[0] / "a" / "journal.jsonl").write_text("")
    merged = {r.name: r for r in merge(dirs).cases}
    assert merged["a"].run_dir == str(dirs[0] / "a")


def _refusal(tmp_path: Path, change: Any) -> str:
    dirs = write_shards(tmp_path, 3)
    args = change(dirs)
    with pytest.raises(ConfigError) as info:
        merge(args)
    return info.value.message


def _edit(path: Path, **changes: Any) -> Path:
    data = json.loads((path / BENCH_JSON).read_text())
    data.update(changes)
    (path / BENCH_JSON).write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d[:2], "shard(s) 3/3 missing"),
        (lambda d: [d[0], d[1], d[2], d[1]], "shard 2/3 is given twice"),
        (
            lambda d: [d[0], d[1], _edit(d[2], bench={**BENCH_INFO, "models": ["openai/other"]})],
            "their models differ",
        ),
        (lambda d: [d[0], d[1], _edit(d[2], complete=False)], "is an unfinished bench"),
        (lambda d: [d[0], d[1], _edit(d[2], shard=None)], "is a whole bench, not a shard"),
        (
            lambda d: [d[0], d[1], _edit(d[2], shard={"index": 3, "count": 4})],
            "split the bench differently",
        ),
        (lambda d: [d[0], d[1], d[2].parent / "nowhere"], "does not exist"),
        (lambda d: [d[0], d[1], _edit(d[2], cases="x")], "is not a bench result"),
        (lambda d: [d[0], d[1], _edit(d[2], cases=[])], "no shard ran case(s) c, f"),
        (lambda d: [], "no shards to merge"),
    ],
)
def test_merge_refuses_what_is_not_every_shard_of_one_finished_bench(
    change: Any, message: str, tmp_path: Path
) -> None:
    assert message in _refusal(tmp_path, change)


# -- the command line
# --------------------------------------------------------------------------------------


def test_merge_errors_are_usage_errors_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = write_shards(tmp_path, 2)
    code = main(["bench", "merge", str(dirs[0]), "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "shard(s) 2/2 missing" in err and "hint:" in err
    assert json.loads(out)["error"]["exit_code"] == 2


def test_merge_prints_one_table_or_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = write_shards(tmp_path, 2)
    assert main(["bench", "merge", *map(str, dirs)]) == 0
    assert capsys.readouterr().out == markdown_table(ROWS) + "\n"
    assert main(["bench", "merge", *map(str, dirs), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["merged_from"] == [str(d) for d in dirs] and document["shard"] is None


def test_bench_refuses_a_keep_directory_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "kept"
    keep.mkdir()
    (keep / "old.txt").write_text("a previous bench")
    assert (
        main(["bench", str(BENCH), "--keep", str(keep)]) == 2
    )  # routed to `bench run`, refused before any case runs
    err = capsys.readouterr().err
    assert "--keep" in err and "is not an empty directory" in err
    assert sorted(p.name for p in keep.iterdir()) == ["old.txt"]


def test_bench_refuses_a_reference_fix_that_does_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases"
    shutil.copytree(BENCH / "caesar_modulus", cases / "caesar_modulus")
    (cases / "caesar_modulus" / "reference.patch").write_text(
        "--- a/cipher.py\n+++ b/cipher.py\n@@ -1,1 +1,1 @@\n-not in the file\n+anything\n"
    )
    assert main(["bench", "run", str(cases), "--shard", "1/1"]) == 2
    err = capsys.readouterr().err
    assert "reference.patch does not apply to its case" in err


@pytest.mark.parametrize(
    "args, message", [(["--shard", "3/2"], "is not I/N"), (["--shard", "x"], "is not I/N")]
)
def test_bench_refuses_a_bad_shard(
    args: List[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", str(BENCH), *args]) == 2
    assert message in capsys.readouterr().err


def test_a_case_with_an_empty_hidden_tests_directory_is_refused(tmp_path: Path) -> None:
    shutil.copytree(
        BENCH / "caesar_modulus",
        tmp_path / "c" / "caesar_modulus",
        ignore=shutil.ignore_patterns("hidden_tests"),
    )
    (tmp_path / "c" / "caesar_modulus" / "hidden_tests").mkdir()
    with pytest.raises(ConfigError, match="holds no files"):
        find_cases(tmp_path / "c")


# -- progress
# ------------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_progress_says_cases_done_fixed_so_far_elapsed_and_time_left() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = BenchProgress(make_console(stream), clock)
    progress.start([object()] * 4)
    clock.now += 60
    progress.case_done(row("a", correct=True))
    clock.now += 60
    progress.case_done(row("b", "not_fixed"))
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "bench: 4 case(s)"
    assert lines[1].startswith("[1/4] a: fixed (success, 1.0s); correct")
    assert lines[1].endswith("fixed so far 1, elapsed 1:00, about 3:00 left")
    assert lines[2].endswith("fixed so far 1, elapsed 2:00, about 2:00 left")


def test_on_a_terminal_the_progress_bar_shows_the_same_counts() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream, clock = Terminal(), Clock()
    progress = BenchProgress(make_console(stream), clock)
    progress.start([object()] * 2)
    clock.now += 30
    progress.case_done(row("a"))
    progress.progress.refresh()
    shown = stream.getvalue()
    progress.close()
    assert "1/2" in shown and "1 fixed" in shown and "0:30 left" in shown


# -- the README's GitHub Actions matrix
# --------------------------------------------------------------------


def test_readme_matrix_runs_every_shard_then_merges_them_with_flags_that_exist(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import re

    import yaml

    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"```yaml\n(.*?)```", text[text.index("### Spreading a bench over CI machines") :], re.S
    )
    assert block is not None
    jobs = yaml.safe_load(block.group(1))["jobs"]
    shards = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and jobs["merge"]["needs"] == "shard"
    steps = jobs["shard"]["steps"] + jobs["merge"]["steps"]
    for step in steps:
        if "uses" in step:
            assert re.match(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$", step["uses"]), step["uses"]
    bench = next(s["run"] for s in jobs["shard"]["steps"] if "repairloop bench" in s.get("run", ""))
    assert (
        f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in bench
        and "--keep shard-${{ matrix.shard }}" in bench
    )
    upload = next(s for s in jobs["shard"]["steps"] if "upload-artifact" in s.get("uses", ""))
    download = next(s for s in jobs["merge"]["steps"] if "download-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "shard-${{ matrix.shard }}"
    assert upload["with"]["name"].startswith(download["with"]["pattern"].rstrip("*"))
    merges = [
        line
        for s in jobs["merge"]["steps"]
        for line in s.get("run", "").splitlines()
        if "bench merge" in line
    ]
    assert merges and all(
        f"{download['with']['path']}/{download['with']['pattern']}" in line for line in merges
    )
    for command, lines in (("run", [bench]), ("merge", merges)):
        assert main(["bench", command, "--help"]) == 0
        help_text = capsys.readouterr().out
        for flag in {f for line in lines for f in re.findall(r"--[\w-]+", line)}:
            assert flag in help_text, flag
