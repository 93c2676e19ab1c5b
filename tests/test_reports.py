"""Reports from run journals: one real run through the scripted model, and journals written by hand.

The real run is the loop on ``fixtures/projects/off_by_one`` with the scripted
OpenAI-compatible server answering: a wrong patch, an answer without a patch
then another wrong patch (rejected once, retried in the same thread), and the
right patch; its tests' results are canned (``tests/canned_runner.py``), since
what is tested is the report of what the loop decided. Hand-written journals use the real
``Journal`` writer and the real event records for the cases a run cannot easily produce
(interrupted, torn, many runs).
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from canned_projects import canned
from conftest import PROJECTS, init_repo
from scripted_server import ScriptedServer
from test_e2e_run import OTHER_WRONG, RIGHT, WRONG

from repairloop.cli import main
from repairloop.errors import ConfigError, ProjectError
from repairloop.integrations.summary import fingerprint, markdown_summary
from repairloop.journal import (
    BaselineEvent,
    ClassifiedEvent,
    InterruptedEvent,
    IterationEvent,
    Journal,
    ModelRetryEvent,
    ProposalEvent,
    ResumedEvent,
    Shown,
    StartEvent,
    StoppedEvent,
    TestsSummary,
    run_dir_for,
)
from repairloop.loop.driver import repair
from repairloop.reports import (
    FORMATS,
    RunReport,
    RunStatus,
    compute_stats,
    find_run,
    format_names,
    load_run,
    load_runs,
    parse_since,
    render,
)
from repairloop.reports.chart import ChartPoint, chart_svg
from repairloop.reports.stats import repaired_code
from repairloop.settings import load_settings
from repairloop.types import (
    Decision,
    Failure,
    FailureKind,
    Iteration,
    Outcome,
    RunResult,
    StopReason,
    Usage,
)

# -- one run of the loop, shared by the tests below ----------------------------


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, RunResult]:
    project = tmp_path_factory.mktemp("reports") / "off_by_one"
    shutil.copytree(PROJECTS / "off_by_one", project, ignore=shutil.ignore_patterns("__pycache__"))
    init_repo(project)
    script = [
        ("ok", WRONG),
        ("ok", "I think last_n slices one too many."),
        ("ok", OTHER_WRONG),
        ("ok", RIGHT),
    ]
    with ScriptedServer(script) as srv:
        flags = {
            "models": ["openai/scripted"],
            "api_base": srv.base_url,
            "fallback_to_builtin": False,
        }
        result = repair(
            load_settings(project, flags, environ={}), project, runner=canned("off_by_one")
        )
    assert result.outcome.value == "fixed" and len(result.iterations) == 3
    return project, result


def cli(args: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.xdist_group("reports_real_run")  # one worker: the module's run is made once
def test_text_report_explains_every_iteration(real_run, capsys) -> None:
    project, result = real_run
    code, out, _ = cli(["report", "latest", "-C", str(project)], capsys)
    assert code == 0
    assert (
        f"repairloop run {result.run_id}" in out
        and "outcome: fixed" in out
        and "stopped: success" in out
    )
    for it in result.iterations:
        assert f"iteration {it.number}: openai/scripted (llm) -> {it.decision.value}" in out
        assert it.reason in out
        assert (
            f"{it.usage.prompt_tokens:,} prompt + {it.usage.completion_tokens:,} completion tokens"
            in out
        )
    assert "assert [2, 3, 4] == [3, 4]" in out  # the failure the model was shown
    assert (
        "answer rejected before testing: no patch found" in out
    )  # the structural retry of iteration 2
    assert "similarity to earlier candidates: previous 0.68, max 0.97" in out
    assert "+    return items[-n + 1:]" in out  # a rejected candidate's diff
    assert out.rstrip().endswith("def chunk(items, size):")  # the final patch closes the report
    assert "totals: 3 iterations, 4 model calls" in out


@pytest.mark.xdist_group("reports_real_run")  # one worker: the module's run is made once
def test_json_and_markdown_reports_carry_the_same_facts(real_run, capsys) -> None:
    project, result = real_run
    _, out, _ = cli(["report", result.run_id[:15], "-C", str(project), "--format", "json"], capsys)
    doc = json.loads(out)
    assert (
        doc["run_id"] == result.run_id
        and doc["outcome"] == "fixed"
        and doc["stop_reason"] == "success"
    )
    assert [i["decision"] for i in doc["iterations"]] == [
        i.decision.value for i in result.iterations
    ]
    assert doc["iterations"][0]["shown"]["failing_tests"] == ["tests/test_lists.py::test_last_n"]
    assert doc["totals"]["prompt_tokens"] == result.totals["prompt_tokens"]
    assert doc["patch"] == result.patch
    _, md, _ = cli(["report", "-C", str(project), "-f", "md"], capsys)
    assert md.startswith(f"# repairloop run {result.run_id}")
    assert md.count("## Iteration ") == 3 and "| 3 | openai/scripted | kept | 0 |" in md
    assert "```diff\n" in md


class _Tags(HTMLParser):
    """Collects start tags and their attributes; counts unclosed elements."""

    VOID = frozenset({"meta", "br", "img", "link", "input", "hr", "circle", "line", "polyline"})

    def __init__(self) -> None:
        super().__init__()
        self.tags: List[Tuple[str, Dict[str, Optional[str]]]] = []
        self.open: List[str] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.open and self.open[-1] == tag, (
            f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        )
        self.open.pop()


@pytest.mark.xdist_group("reports_real_run")  # one worker: the module's run is made once
def test_html_report_is_one_self_contained_file_with_the_chart(real_run, capsys, tmp_path) -> None:
    project, _result = real_run
    target = tmp_path / "report.html"
    code, out, _ = cli(["report", "-C", str(project), "-f", "html", "-o", str(target)], capsys)
    assert code == 0 and out == ""
    html = target.read_text(encoding="utf-8")
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html, re.I)  # nothing to fetch
    assert not re.search(r"<script|<link|<iframe|<img|\bsrc=|@import|url\(", html, re.I)
    parser = _Tags()
    parser.feed(html)
    parser.close()
    assert parser.open == [], "every element is closed"
    tags = [t for t, _ in parser.tags]
    assert tags.count("svg") == 1
    for series in ("pt-failing", "pt-tokens"):
        points = [a for t, a in parser.tags if t == "circle" and a.get("class") == series]
        assert [int(a["data-iteration"] or 0) for a in points] == [1, 2, 3]
    tokens = [
        float(a["cy"] or 0)
        for t, a in parser.tags
        if t == "circle" and a.get("class") == "pt-tokens"
    ]
    assert (
        tokens[1] < tokens[0] and tokens[1] < tokens[2]
    )  # iteration 2 (two attempts) is the tallest
    assert '<span class="add">+    return items[-n:]</span>' in html  # the diff is coloured
    assert '<span class="del">-    return items[-n - 1:]</span>' in html
    assert "Final patch" in html and "assert [2, 3, 4] == [3, 4]" in html


@pytest.mark.xdist_group("reports_real_run")  # one worker: the module's run is made once
def test_runs_and_stats_over_the_real_run(real_run, capsys) -> None:
    project, result = real_run
    code, out, _ = cli(["runs", "-C", str(project)], capsys)
    assert code == 0 and result.run_id in out and "fixed" in out and "success" in out
    _, out, _ = cli(["stats", "-C", str(project), "--json"], capsys)
    doc = json.loads(out)
    assert doc["runs"] == 1 and doc["fix_rate"] == 1.0 and doc["iterations_per_fix"] == 3.0
    assert doc["stop_reasons"] == {"success": 1} and doc["failure_kinds"] == {"logic": 1}
    assert doc["unpriced_runs"] == 1  # "openai/scripted" has no price: cost is unknown, not 0


@pytest.mark.xdist_group("reports_real_run")  # one worker: the module's run is made once
def test_the_journal_gives_back_the_live_result(real_run) -> None:
    """One model: the RunResult read back from the journal is the one the loop returned."""
    _project, result = real_run
    read = load_run(Path(result.run_dir))
    assert read.status is RunStatus.STOPPED and read.result.failures == result.failures
    assert read.result.to_json() == result.to_json()
    assert read.result.to_json() == json.loads((Path(result.run_dir) / "summary.json").read_text())


@pytest.mark.xdist_group("reports_real_run")
@pytest.mark.parametrize("fmt", format_names())
def test_every_format_renders_a_live_result_and_a_journal_read_one_the_same_way(
    real_run, fmt
) -> None:
    _project, result = real_run
    read = load_run(Path(result.run_dir))
    live = render(RunReport.of(result), fmt)
    assert live == render(RunReport.of(read.result), fmt)
    assert result.run_id in live and (result.patch or "").splitlines()[-1] in live
    if fmt == "console":  # the panel `run` ended with, drawn again from the journal alone
        assert render(read, fmt) == live


@pytest.mark.xdist_group("reports_real_run")  # one worker: the module's run is made once
def test_the_ci_summary_renders_the_journal_read_result_as_the_live_one(real_run) -> None:
    _project, result = real_run
    read = load_run(Path(result.run_dir)).result
    live = markdown_summary(
        result, fingerprint_text=fingerprint(result.failures), actions=["pushed"]
    )
    assert live == markdown_summary(
        read, fingerprint_text=fingerprint(read.failures), actions=["pushed"]
    )
    assert "### What was tried" in live and "| 3 | llm | openai/scripted | kept | 0 |" in live


# -- journals written by hand ----------------------------------------------------

PATCH = """\
diff --git a/calc/lists.py b/calc/lists.py
--- a/calc/lists.py
+++ b/calc/lists.py
@@ -12,7 +12,7 @@ def last_n(items, n):
-    return items[-n - 1:]
+    return items[-n:]
"""


def write_run(
    project: Path,
    run_id: str,
    *,
    outcome: Optional[str] = "fixed",
    patch: Optional[str] = PATCH,
    iterations: int = 1,
    started: str = "2024-05-02T10:00:00+00:00",
    answer: str = "diff",
    cost: Optional[float] = 0.001,
) -> Path:
    """A run directory whose journal holds what the loop writes for a run of ``iterations``."""
    clock_value = [started]
    journal = Journal(run_dir_for(project, run_id), clock=lambda: _parse(clock_value[0]))
    journal.record(StartEvent(run_id, str(project), ("openai/gpt-4o-mini",), {}))
    journal.record(BaselineEvent(TestsSummary(1, ("t::a", "t::b"), 3, 1.0)))
    journal.record(
        ClassifiedEvent(
            (
                Failure("t::a", FailureKind.LOGIC, True, ""),
                Failure("t::b", FailureKind.LOGIC, True, ""),
            )
        )
    )
    for number in range(1, iterations + 1):
        last = number == iterations and outcome == "fixed"
        it = Iteration(
            number=number,
            engine="llm",
            model="openai/gpt-4o-mini",
            usage=Usage(300 + number, 40, cost, 0.5, 1),
            decision=Decision.KEPT if last else Decision.REVERTED,
            reason="why " + str(number),
            diff=PATCH,
            tests_failed=0 if last else 2,
            seconds_model=0.5,
            seconds_tests=1.0,
            seconds_total=1.6,
        )
        journal.record(ModelRetryEvent("openai/gpt-4o-mini", "rate_limit", 1, 1.0))
        journal.record(
            IterationEvent(
                it,
                Shown(failing_tests=("t::a",), message="boom"),
                answer,
                tests=TestsSummary(1, ("t::a",), 0, 1.0),
            )
        )
    if outcome is not None:
        clock_value[0] = started.replace(":00+", ":30+")
        reason = {"fixed": "success", "nothing_to_fix": "nothing_to_fix"}.get(outcome, "stagnation")
        journal.record(StoppedEvent(Outcome(outcome), StopReason(reason), "done"))
    if patch:
        journal.write_text("fix.patch", patch)
    return journal.run_dir


def _parse(text: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(text)


def test_report_model_reads_a_journal(tmp_path) -> None:
    run_dir = write_run(tmp_path, "20240502-100000-aaaa", iterations=2)
    report = load_run(run_dir)
    assert report.outcome == "fixed" and report.stop_reason == "success" and report.seconds == 30.0
    assert [it.record.decision.value for it in report.iterations] == ["reverted", "kept"]
    assert report.iterations[0].detail.notes == (
        "openai/gpt-4o-mini: retried after rate_limit (attempt 1, waited 1.0 s)",
    )
    assert report.result.failure_kinds == {"logic": 2} and report.result.patch == PATCH
    assert report.totals["prompt_tokens"] == 603 and report.totals["cost_usd"] == pytest.approx(
        0.002
    )


def test_interrupted_and_torn_journals_still_report(tmp_path) -> None:
    run_dir = write_run(tmp_path, "20240502-100000-bbbb", outcome=None, patch=None)
    Journal(run_dir).record(InterruptedEvent(3.0))
    with open(run_dir / "journal.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"event": "iteration", "ts": "2024')  # killed while writing
    report = load_run(run_dir)
    assert report.outcome == "interrupted" and report.stop_reason == "interrupted"
    assert len(report.iterations) == 1 and report.result.patch is None
    assert any("torn last line" in w for w in report.warnings)
    text = render(report, "text")
    assert "outcome: interrupted" in text and "final patch: none" in text and "warning:" in text


def test_a_run_without_a_stopped_event_is_incomplete(tmp_path) -> None:
    report = load_run(write_run(tmp_path, "20240502-100000-cccc", outcome=None, patch=None))
    assert (
        report.outcome == "incomplete"
        and report.stop_reason == ""
        and report.status is RunStatus.INCOMPLETE
    )
    panel = render(report, "console")
    assert "outcome: incomplete" in panel and "iterations: 1," in panel and "plausible" not in panel


def test_untrusted_journal_text_is_escaped_in_html(tmp_path) -> None:
    evil = "<script>alert(1)</script>"
    run_dir = write_run(tmp_path, "20240502-100000-dddd", patch=PATCH + f"+{evil}\n")
    html = render(load_run(run_dir), "html")
    assert "<script" not in html and "&lt;script&gt;" in html


def test_unknown_format_and_missing_runs_are_usage_errors(tmp_path, capsys) -> None:
    write_run(tmp_path, "20240502-100000-eeee")
    with pytest.raises(ConfigError, match="unknown report format"):
        render(load_run(find_run(tmp_path, None)), "pdf")
    code, _, err = cli(["report", "-C", str(tmp_path), "-f", "pdf"], capsys)
    assert code == 2 and "text, md, json, html, console" in err
    code, _, err = cli(["report", "nosuchrun", "-C", str(tmp_path)], capsys)
    assert code == 2 and "no run 'nosuchrun'" in err
    with pytest.raises(ProjectError, match="no repairloop runs"):
        find_run(tmp_path / "elsewhere", None)


def test_report_help_lists_every_registered_format(capsys) -> None:
    code, out, _ = cli(["report", "--help"], capsys)
    flat = " ".join(out.replace("│", " ").split())
    assert code == 0
    for fmt in FORMATS:
        assert f"{fmt.name} ({fmt.help})" in flat


def test_a_run_directory_path_is_accepted(tmp_path) -> None:
    run_dir = write_run(tmp_path, "20240502-100000-ffff")
    assert find_run(tmp_path / "unrelated", str(run_dir)) == run_dir


def test_chart_has_one_point_per_iteration_per_series() -> None:
    points = [
        ChartPoint(1, 3, 500),
        ChartPoint(2, 2, 510),
        ChartPoint(3, None, 505),
        ChartPoint(4, 0, 498),
    ]
    svg = chart_svg(points, baseline_failing=3)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count('class="pt-tokens"') == 4
    assert svg.count('class="pt-failing"') == 3  # an unknown count is not drawn as zero
    assert chart_svg([]) == ""


def test_repaired_code_names_the_file_and_definition() -> None:
    assert repaired_code(PATCH) == ("calc/lists.py: def last_n(items, n):",)
    bare = PATCH.replace(" def last_n(items, n):", "")
    assert repaired_code(bare) == ("calc/lists.py",)  # no heading, nothing in the hunk: the file


# What `git diff` writes for a fix of is_adult in calc/ops.py: the heading names the function
# above (the last definition line before the hunk), is_adult's own def sits in the context.
IS_ADULT_PATCH = """\
diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -14,7 +14,7 @@ def total(items):
     return result


 def is_adult(person):
     \"\"\"Whether ``person`` is 18 or older.\"\"\"
-    return person.age > 18
+    return person.age >= 18
"""

# The fix of total in the same file, by git's rules: its heading is the definition above, clamp.
TOTAL_PATCH = IS_ADULT_PATCH.replace("def total(items):", "def clamp(value, low, high):").replace(
    "def is_adult(person):", "def total(items):"
)


def test_repaired_code_names_the_definition_inside_the_hunk_not_the_heading() -> None:
    assert repaired_code(IS_ADULT_PATCH) == ("calc/ops.py: def is_adult(person):",)
    assert repaired_code(TOTAL_PATCH) == ("calc/ops.py: def total(items):",)
    # The enclosing def above the hunk (nothing less indented in the context): the heading.
    above = """\
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -20,4 +20,4 @@ def is_adult(person):
     if person is None:
         return False
     age = person.age
-    return age > 18
+    return age >= 18
"""
    assert repaired_code(above) == ("calc/ops.py: def is_adult(person):",)
    # The innermost definition: a method, not its class; a block (if) between them is crossed.
    method = """\
--- a/calc/people.py
+++ b/calc/people.py
@@ -3,6 +3,6 @@ import math
 class People:
     def is_adult(self, person):
         if person is not None:
-            return person.age > 18
+            return person.age >= 18
         return False
"""
    assert repaired_code(method) == ("calc/people.py: def is_adult(self, person):",)
    # Module-level code under a function's heading belongs to the file, not to that function.
    module = IS_ADULT_PATCH.replace(
        "-    return person.age > 18\n+    return person.age >= 18\n", "-LIMIT = 18\n+LIMIT = 21\n"
    )
    assert repaired_code(module) == ("calc/ops.py",)
    # Two runs of changes in one hunk, in two functions: both are named.
    both = TOTAL_PATCH.replace(
        "     return result\n", "-    return result + 1\n+    return result\n"
    )
    assert repaired_code(both) == (
        "calc/ops.py: def clamp(value, low, high):",
        "calc/ops.py: def total(items):",
    )


def test_stats_say_a_recurring_fault_belongs_upstream(tmp_path) -> None:
    for n in range(8):  # eight runs repairing other code, two repairing last_n: 20% > 10%
        write_run(tmp_path, f"20240502-10000{n}-a000", patch=PATCH.replace("last_n", f"other_{n}"))
    write_run(tmp_path, "20240502-100010-b000")
    write_run(tmp_path, "20240502-100011-b001")
    stats = compute_stats(load_runs(tmp_path))
    assert stats.recurring == [
        {"code": "calc/lists.py: def last_n(items, n):", "runs": 2, "share": 0.2}
    ]
    assert "belongs upstream" in stats.upstream[0] and "2 of 10 runs (20%)" in stats.upstream[0]
    assert "upstream:" in render_stats_text(stats)


def test_stats_name_the_function_whose_def_is_in_the_hunk(tmp_path, capsys) -> None:
    for n in range(5):  # five runs repairing other code, two repairing is_adult: 2 of 7 runs
        write_run(tmp_path, f"20240502-10000{n}-a000", patch=PATCH.replace("last_n", f"other_{n}"))
    write_run(tmp_path, "20240502-100010-b000", patch=IS_ADULT_PATCH)
    write_run(tmp_path, "20240502-100011-b001", patch=IS_ADULT_PATCH)
    stats = compute_stats(load_runs(tmp_path))
    assert stats.recurring == [
        {"code": "calc/ops.py: def is_adult(person):", "runs": 2, "share": 0.286}
    ]
    code, out, _ = cli(["stats", "-C", str(tmp_path)], capsys)
    assert (
        code == 0
        and "2 of 7 runs (29%) repaired calc/ops.py: def is_adult(person). The fault" in out
    )
    assert "def total" not in out and "::" not in out
    _, out, _ = cli(["stats", "-C", str(tmp_path), "--json"], capsys)
    assert [r["code"] for r in json.loads(out)["recurring"]] == [
        "calc/ops.py: def is_adult(person):"
    ]


def render_stats_text(stats: Any) -> str:
    from repairloop.reports import render_stats

    return render_stats(stats)


def test_stats_stay_quiet_at_ten_percent_or_one_run(tmp_path) -> None:
    for n in range(18):
        write_run(
            tmp_path, f"20240502-1000{n:02d}-a000", patch=PATCH.replace("last_n", f"other_{n}")
        )
    write_run(tmp_path, "20240502-100030-b000")
    write_run(tmp_path, "20240502-100031-b001")  # 2 of 20 runs: exactly 10%, not more
    assert compute_stats(load_runs(tmp_path)).upstream == []


def test_stats_figures_and_since(tmp_path, capsys) -> None:
    write_run(tmp_path, "20240501-100000-a000", started="2024-05-01T10:00:00+00:00", iterations=3)
    write_run(tmp_path, "20240502-100000-a001", iterations=1, cost=None)
    write_run(
        tmp_path,
        "20240503-100000-a002",
        started="2024-05-03T10:00:00+00:00",
        outcome="not_fixed",
        patch=None,
        iterations=2,
    )
    write_run(
        tmp_path,
        "20240504-100000-a003",
        started="2024-05-04T10:00:00+00:00",
        outcome="nothing_to_fix",
        patch=None,
        iterations=0,
    )
    stats = compute_stats(load_runs(tmp_path))
    assert (
        stats.runs == 4
        and stats.needed_repair == 3
        and stats.fixed == 2
        and stats.fix_rate == 0.667
    )
    assert stats.iterations_per_fix == 3.0 and stats.median_iterations_fixed == 2
    assert stats.cost_usd == pytest.approx(0.005) and stats.unpriced_runs == 1
    assert stats.stop_reasons == {"success": 2, "nothing_to_fix": 1, "stagnation": 1}
    recent = compute_stats(load_runs(tmp_path, since=parse_since("2024-05-03")))
    assert recent.runs == 2 and recent.fixed == 0 and recent.fix_rate == 0.0
    code, out, _ = cli(["stats", "-C", str(tmp_path), "--since", "2024-05-02"], capsys)
    assert code == 0 and out.startswith("runs: 3 ") and "fix rate: 50%" in out
    code, _, err = cli(["stats", "-C", str(tmp_path), "--since", "last tuesday"], capsys)
    assert code == 2 and "YYYY-MM-DD" in err


def test_runs_lists_newest_first(tmp_path, capsys) -> None:
    write_run(tmp_path, "20240501-100000-a000")
    write_run(tmp_path, "20240502-100000-a001", outcome="not_fixed", patch=None, cost=None)
    code, out, _ = cli(["runs", "-C", str(tmp_path)], capsys)
    lines = out.splitlines()
    assert (
        code == 0
        and lines[1].startswith("20240502-100000-a001")
        and lines[2].startswith("20240501-100000-a000")
    )
    assert "unknown" in lines[1] and "$0.0010" in lines[2]
    _, out, _ = cli(["runs", "-C", str(tmp_path), "--json"], capsys)
    assert [r["outcome"] for r in json.loads(out)] == ["not_fixed", "fixed"]


def test_a_resumed_run_reports_the_resumed_iterations(tmp_path) -> None:
    run_dir = write_run(tmp_path, "20240502-100000-abcd", outcome=None, patch=None, iterations=1)
    journal = Journal(run_dir)
    journal.record(InterruptedEvent(3.0))
    journal.record(ResumedEvent(1, ("openai/gpt-4o-mini",)))
    journal.record(BaselineEvent(TestsSummary(1, ("t::a",), 3, 1.0)))
    for number in (1, 2):
        it = Iteration(
            number=number,
            engine="llm",
            model="openai/gpt-4o-mini",
            usage=Usage(300, 40, 0.001, 0.5, 1),
            decision=Decision.KEPT if number == 2 else Decision.REVERTED,
            reason=f"again {number}",
        )
        journal.record(ProposalEvent(number, 0, "openai/gpt-4o-mini", "llm", "diff", Usage(), {}))
        journal.record(IterationEvent(it))
    journal.record(StoppedEvent(Outcome.FIXED, StopReason.SUCCESS, "done"))
    report = load_run(run_dir)
    assert report.outcome == "fixed" and [it.record.reason for it in report.iterations] == [
        "again 1",
        "again 2",
    ]
    assert report.iterations[0].detail.notes == ()  # journalled answers are not notes
    assert any(n.startswith("interrupted") for n in report.notes) and any(
        "resumed" in n for n in report.notes
    )
