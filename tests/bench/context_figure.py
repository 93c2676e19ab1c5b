"""Figure 13: the code the model is shown, on real bugs (``fixtures/realbugs``).

For each case the buggy project is materialised (``realbugs.materialise``: the
sdist from PyPI, cached, patched, committed) and repaired by ``python -m
repairloop run --json`` in a fresh process against the scripted model
(``tests/scripted_server.py`` on 127.0.0.1), once with the localised context
(``REPAIRLOOP_LOCALISE=true``) and once with the traceback-only context of
before (``false``): the two ways of a case one after the other, in alternating
order, two cases at a time. The scripted model answers the reference fix:
whole functions from the fixed sdist (``context_check.whole_function_answer``),
or the reference diff where an entry is not a function. What is measured comes
from what the server received (the first request's messages) and the --json.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]  # tests/: scripted_server, run alone

import context_check  # noqa: E402
import realbugs  # noqa: E402
import scripted  # noqa: E402
from figure import Check, Figure, median, pct  # noqa: E402
from projects import REPO  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402

WAYS: Tuple[Tuple[str, bool], ...] = (("localised", True), ("traceback only", False))
WORKERS = 2
RUN_TIMEOUT = 150.0  # seconds: each run's --timeout (runs take 10-40 s; more on a busy machine)
# One test's limit: the default, not the fifteenth of RUN_TIMEOUT the CLI derives (10 s), under
# which a slow test on a busy machine (more-itertools' DFT round trip) times out, the right fix
# "breaks" it and is reverted.
PER_TEST_TIMEOUT = 60.0
# The CLI's warning while REPAIRLOOP_LOCALISE is not a setting yet: both ways are then alike.
IGNORED = "REPAIRLOOP_LOCALISE is not a repairloop setting"
# The default subset (BENCH_FULL=1: every case): one bug per library, all seven distances, both
# kinds of answer, and per library a quick test command (more-itertools' tests/test_recipes.py,
# not its 20-second tests/test_more.py). Fixed by name: every make bench measures the same bugs.
SUBSET = (
    "click-write-usage-no-args",
    "markdown-loose-list-heading-detab",
    "mistune-image-alt-double-encoding",
    "more-itertools-random-product-repeat",
    "parse-findall-case-sensitive",
    "pyflakes-print-augmented-assign",
    "semver-to-dict-ordereddict",
    "sqlparse-real-name-dotted",
    "tabulate-github-multiline",
    "tomlkit-key-single-element-list",
    "wcwidth-n-exceeds-length",
)


@dataclass(frozen=True)
class WayRun:
    """One way of one case: what the first prompt held and how the run ended."""

    in_prompt: bool
    why: str  # for a miss: the first entry and line the prompt lacks, and what it showed
    tokens: Optional[int]  # the first request's messages (offline counter); None: no request
    outcome: str
    detail: str  # why the run did not end fixed
    seconds: float
    ignored: bool = False  # the CLI warned that REPAIRLOOP_LOCALISE is no setting


@dataclass
class CaseResult:
    """Both ways of one case, and how the scripted model answered: "whole" or "diff"."""

    case: realbugs.RealBug
    answer_kind: str
    ways: Dict[str, WayRun] = field(default_factory=dict)


def loop_test_cmd(test_cmd: str, python: str = sys.executable) -> str:
    """The case's test command for the loop, as the case gives it (``-p no:cacheprovider`` and
    all), a leading ``python`` replaced by ``python`` (as ``realbugs.check`` does)."""
    argv = shlex.split(test_cmd)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = python
    return shlex.join(argv)


def select_cases(cases: Sequence[realbugs.RealBug], full: bool) -> List[realbugs.RealBug]:
    return list(cases) if full else [c for c in cases if c.name in SUBSET]


def _sources(case: realbugs.RealBug, root: Path) -> Dict[str, str]:
    paths = {entry.partition("::")[0] for entry in case.fixed_functions}
    return {p: (root / p).read_text(encoding="utf-8") for p in sorted(paths)}


def expected(
    case: realbugs.RealBug, buggy: Dict[str, str], fixed: Dict[str, str]
) -> Dict[str, List[str]]:
    """``path::qualname`` -> the lines the first prompt must show (``expected_lines``)."""
    needles: Dict[str, List[str]] = {}
    for path in buggy:
        listed = [e.partition("::")[2] for e in case.fixed_functions if e.startswith(path + "::")]
        found = context_check.expected_lines(buggy[path], fixed[path], listed)
        needles.update({f"{path}::{qualname}": lines for qualname, lines in found.items()})
    return needles


def child_env(localise: bool) -> Dict[str, str]:
    """The CLI's environment: no inherited REPAIRLOOP_* setting; this checkout's repairloop."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRLOOP_")}
    paths = [str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(paths),
            "NO_COLOR": "1",
            "REPAIRLOOP_LOCALISE": "true" if localise else "false",
            "REPAIRLOOP_CONFIRM_RUNS": "0",
            "REPAIRLOOP_WARM": "false",
        }
    )
    return env


def _cli(project: Path, test_cmd: str, url: str, env: Dict[str, str]) -> Tuple[Dict[str, Any], str]:
    """Run ``repairloop run --json`` on ``project``: its --json document (empty when it printed
    none) and its stderr. Its process group is killed if it outlives its own timeout."""
    argv = scripted.cli_argv(
        project,
        url,
        *("--max-iterations", "2", "--final-runs", "1", "--timeout", str(RUN_TIMEOUT)),
        *("--per-test-timeout", str(PER_TEST_TIMEOUT), "--test-cmd", test_cmd, "--json"),
    )
    return cli_json(argv, project, env, RUN_TIMEOUT)


def cli_json(
    argv: Sequence[str], project: Path, env: Dict[str, str], limit: float
) -> Tuple[Dict[str, Any], str]:
    """Run a ``repairloop ... --json`` command ``argv`` in ``project``: its --json document (empty
    when it printed none) and its stderr. Its process group is killed 120 s after ``limit``
    (seconds, its own --timeout)."""
    proc = subprocess.Popen(
        list(argv),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=limit + 120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\nkilled after {limit + 120:.0f} s"
    try:
        return json.loads(out), err
    except ValueError:
        return {}, err


def why_not_fixed(summary: Dict[str, Any], err: str) -> str:
    """The first iteration's reason (the scripted answer never changes, so later iterations
    repeat it as a duplicate), else the stop detail, else stderr's last line."""
    if summary.get("outcome") == "fixed":
        return ""
    reasons = [str(it["reason"]) for it in summary.get("iterations") or [] if it.get("reason")]
    text = reasons[0] if reasons else str(summary.get("stop_detail") or "")
    text = text or (err.strip().splitlines() or [""])[-1]
    return " ".join(text.split())[:240]


def _shown(prompt: str) -> str:
    heads = [line[4:] for line in prompt.splitlines() if line.startswith("### ")]
    more = f" and {len(heads) - 3} more" if len(heads) > 3 else ""
    return "; ".join(heads[:3]) + more if heads else "no code"


def judge_prompt(prompt: str, needles: Dict[str, List[str]]) -> Tuple[bool, str]:
    """(every fixed function in ``prompt``, and if not why: the first entry and line missing)."""
    for entry, lines in needles.items():
        missing = context_check.missing_from_prompt(prompt, lines)
        if missing is not None:
            return False, f"{entry}: `{missing[:80]}` not shown (shown: {_shown(prompt)})"
    return True, ""


def run_way(
    case: realbugs.RealBug,
    project: Path,
    answer: str,
    localise: bool,
    needles: Dict[str, List[str]],
) -> WayRun:
    """Repair ``project`` one way, the scripted model answering ``answer`` every time."""
    from repairloop.propose.litellm_env import load_litellm

    began = time.perf_counter()
    with ScriptedServer(scripted.answering([answer])) as srv:
        test_cmd = loop_test_cmd(case.test_cmd)
        summary, err = _cli(project, test_cmd, srv.base_url, child_env(localise))
        requests = list(srv.requests)
    seconds = time.perf_counter() - began
    outcome = str(summary.get("outcome") or "error")
    detail, ignored = why_not_fixed(summary, err), IGNORED in err
    if not requests:
        why = f"no model request (the run ended {outcome}: {detail[:120]})"
        return WayRun(False, why, None, outcome, detail, seconds, ignored)
    messages = requests[0].get("messages") or []
    prompt = "\n\n".join(str(m.get("content") or "") for m in messages)
    tokens = int(load_litellm().token_counter(model="gpt-4o-mini", messages=messages))
    shown, why = judge_prompt(prompt, needles)
    return WayRun(shown, why, tokens, outcome, detail, seconds, ignored)


def measure_case(case: realbugs.RealBug, work: Path, first_way: int) -> CaseResult:
    """Both ways of one case, starting with ``WAYS[first_way]``, each on its own copy."""
    fixed_root = realbugs.materialise(case, work / case.name / "fixed", fixed=True)
    copies = {way: realbugs.materialise(case, work / case.name / way.split()[0]) for way, _ in WAYS}
    buggy, fixed = _sources(case, copies[WAYS[0][0]]), _sources(case, fixed_root)
    whole = context_check.whole_function_answer(fixed, buggy, case.fixed_functions)
    answer = whole or context_check.reference_diff(fixed, buggy)
    result = CaseResult(case, "whole" if whole else "diff")
    needles = expected(case, buggy, fixed)
    for way, localise in WAYS[first_way:] + WAYS[:first_way]:
        result.ways[way] = run_way(case, copies[way], answer, localise, needles)
    return result


def measure(cases: Sequence[realbugs.RealBug], work: Path) -> List[CaseResult]:
    """Every case both ways, ``WORKERS`` cases at a time (the order of the ways alternating)."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(measure_case, case, work, n % 2) for n, case in enumerate(cases)]
        return [f.result() for f in futures]


# --- the figure -------------------------------------------------------------------------------


def p90(values: Sequence[float]) -> float:
    """The 90th percentile by nearest rank: the least value with 90% of the values at or under."""
    ordered = sorted(values)
    return float(ordered[max(0, -(-9 * len(ordered) // 10) - 1)]) if ordered else float("nan")


def _share(hits: int, total: int) -> str:
    return f"{hits} of {total} ({pct(hits / total) if total else 'none'})"


def _totals(results: Sequence[CaseResult], way: str) -> Tuple[int, int, List[int]]:
    runs = [r.ways[way] for r in results]
    tokens = [w.tokens for w in runs if w.tokens is not None]
    return sum(w.in_prompt for w in runs), sum(w.outcome == "fixed" for w in runs), tokens


def _tokens(tokens: Sequence[int]) -> str:
    return f"median {median(tokens):,.0f}, p90 {p90(tokens):,.0f}" if tokens else "-"


def _totals_row(label: str, results: Sequence[CaseResult]) -> List[str]:
    row = [f"**{label}**", f"{len(results)} cases", ""]
    for way, _ in WAYS:
        shown, fixed, tokens = _totals(results, way)
        row += [_share(shown, len(results)), _tokens(tokens), f"{fixed} fixed"]
    return row


def _case_row(r: CaseResult) -> List[str]:
    row = [r.case.name, r.case.distance, r.answer_kind]
    for way, _ in WAYS:
        run = r.ways[way]
        tokens = f"{run.tokens:,}" if run.tokens is not None else "-"
        row += ["yes" if run.in_prompt else "**no**", tokens, run.outcome]
    return row


COMPARES = (
    "for each real bug of fixtures/realbugs (public bug-fix commits re-introduced into released "
    "sdists), whether the first prompt of `repairloop run` shows the code the reference fix "
    "changes, that prompt's tokens (all its messages, litellm's offline cl100k counter) and "
    "whether the run ends fixed, the scripted model answering the reference fix: the localised "
    "context (`REPAIRLOOP_LOCALISE=true`) against the traceback-only context of before (`false`), "
    "in the same run. A fixed function is in the prompt when one fenced code block of the first "
    "request holds its `def`/`class` line and every line of the buggy version that the fix "
    "replaces or deletes (where the fix only inserts: the last non-blank line before the "
    "insertion), in file order, each compared with surrounding whitespace and any "
    "line-number prefix (`  12 | `) removed; a `<module>` entry needs only its changed lines, a "
    "definition the fix adds the `class` line of the class it goes into. A bug counts when every "
    "entry of its `fixed_functions` is in the prompt"
)


def context_figure(
    results: Sequence[CaseResult], corpus: int, full: bool, seconds: float
) -> Figure:
    """Figure 13 from the measured ``results`` (of the ``corpus`` cases of fixtures/realbugs)."""
    fig = Figure(13, "The code the model is shown, on real bugs", COMPARES)
    fig.rows.append(
        [
            "case",
            "distance",
            "answer",
            "localised: in prompt",
            "tokens",
            "outcome",
            "traceback only: in prompt",
            "tokens",
            "outcome",
        ]
    )
    fig.rows += [_case_row(r) for r in sorted(results, key=lambda r: r.case.name)]
    fig.rows.append(_totals_row("all", results))
    fig.rows.append(
        _totals_row("answered as whole functions", [r for r in results if r.answer_kind == "whole"])
    )
    fig.rows.append(
        _totals_row(
            "answered as the reference diff", [r for r in results if r.answer_kind == "diff"]
        )
    )
    n = len(results)
    (loc_in, loc_fixed, loc_tokens), (tb_in, tb_fixed, tb_tokens) = (
        _totals(results, way) for way, _ in WAYS
    )
    fig.checks.append(
        Check(
            "the fixed function is in the first prompt (localised) for >= 95% of the bugs",
            f"{_share(loc_in, n)}; traceback only: {_share(tb_in, n)}",
            bool(n) and loc_in >= 0.95 * n,
        )
    )
    fig.checks.append(
        Check(
            "the run ends fixed (localised) for >= 95% of the bugs",
            f"{_share(loc_fixed, n)}; traceback only: {_share(tb_fixed, n)}",
            bool(n) and loc_fixed >= 0.95 * n,
        )
    )
    fig.notes += _notes(results, corpus, full, seconds)
    fig.notes.append(
        f"First-prompt tokens: localised {_tokens(loc_tokens)}; traceback only "
        f"{_tokens(tb_tokens)} (p90 by nearest rank)."
    )
    fig.notes += _misses(results)
    return fig


def _notes(results: Sequence[CaseResult], corpus: int, full: bool, seconds: float) -> List[str]:
    libraries = sorted({r.case.library for r in results})
    measured = (
        f"All {corpus} cases (`BENCH_REALBUGS=all` or `BENCH_FULL=1`)"
        if full
        else f"A fixed subset of {len(results)} of the {corpus} cases (context_figure.SUBSET, "
        "every library once; `BENCH_REALBUGS=all make bench` runs all)"
    )
    runs = [w for r in results for w in r.ways.values()]
    diffs = ", ".join(r.case.name for r in results if r.answer_kind == "diff") or "none"
    notes = [
        f"{measured}: {len(libraries)} libraries ({', '.join(libraries)}). {len(runs)} runs, "
        f"{WORKERS} cases at a time, in {seconds:.0f} s (median "
        f"{median([w.seconds for w in runs]):.0f} s a run). Each run is `python -m repairloop run "
        f"--json` in a fresh process with `--max-iterations 2 --final-runs 1 --timeout "
        f"{RUN_TIMEOUT:.0f} --per-test-timeout {PER_TEST_TIMEOUT:.0f} --no-builtin`, "
        "`REPAIRLOOP_CONFIRM_RUNS=0`, `REPAIRLOOP_WARM=false` "
        "and the case's own `test_cmd` (`-p no:cacheprovider` included) run by this "
        "interpreter.",
        "The scripted model answers the reference fix every time: each fixed function whole, "
        "from the fixed sdist, in a ```python block under its file path (a method inside `class "
        "Name:`, a function nested in a function as the function that holds it). Where an entry "
        "is not a function in both versions (`<module>` code, a class's own body, a definition "
        "the fix adds) the case is answered with the reference unified diff instead and counted "
        f"apart (the last totals row): {diffs}.",
    ]
    if any(w.ignored for w in runs):
        notes.append(
            "**REPAIRLOOP_LOCALISE is not a setting of this repairloop yet** (the CLI "
            "warned and ignored it): both ways showed the same traceback-only context."
        )
    return notes


def _misses(results: Sequence[CaseResult]) -> List[str]:
    notes = []
    for way, _ in WAYS:
        missed = [
            f"{r.case.name} ({r.case.distance}): {r.ways[way].why}"
            for r in results
            if not r.ways[way].in_prompt
        ]
        if missed:
            notes.append(f"Code not in the first prompt, {way}: " + "; ".join(missed))
    for way, _ in WAYS:
        failed = [
            f"{r.case.name}: {r.ways[way].outcome}, {r.ways[way].detail}"
            for r in results
            if r.ways[way].outcome != "fixed"
        ]
        if failed:
            notes.append(f"Not fixed, {way}: " + "; ".join(failed))
    return notes


def figure_context(work: Path, full: bool = False) -> Figure:
    """Figure 13: measure the subset (every case with ``full``) both ways; build the figure."""
    began = time.perf_counter()
    corpus = realbugs.load_cases()
    results = measure(select_cases(corpus, full), work)
    seconds = time.perf_counter() - began
    fig = context_figure(results, len(corpus), full, seconds)
    fig.seconds = seconds
    return fig


def main(argv: Sequence[str]) -> int:
    """``python tests/bench/context_figure.py [CASE ...]``: figure 13 on every case of the corpus
    (``REPAIRLOOP_REALBUGS`` names another, such as ``fixtures/realbugs-heldout``), or on the
    cases named, printed as Markdown; BENCHMARKS.md is left alone."""
    import tempfile

    from run import machine

    corpus = realbugs.load_cases()
    chosen = [c for c in corpus if not argv or c.name in argv]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="repairloop-figure13-") as work:
        results = measure(chosen, Path(work))
    fig = context_figure(results, len(chosen), True, time.perf_counter() - began)
    print(fig.markdown(machine()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
