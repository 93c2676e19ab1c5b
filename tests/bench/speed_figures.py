"""Figures 4, 5 and 6: targeted test runs, start-up time, and the offline engine on fixtures/bench."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import correct_figure
import projects
import scripted
from figure import Check, Figure, median

from repairloop.runner import default_test_command, run_tests

BIN = Path(sys.executable).parent


def figure_targeted_tests(work: Path) -> Figure:
    """Figure 4: a rejected candidate runs only the failing test; compare with the full suite."""
    began = time.perf_counter()
    root = projects.many_tests(work)
    wrong = [scripted.search_replace("shop/price.py", "    return price * percent / 100", f"    return {e}")
             for e in ("price * percent / 10", "price - percent", "price * (100 + percent) / 100")]
    run = scripted.scripted_run(root, wrong, max_iterations=3, patience=3, similarity_threshold=1.0)
    candidate = [it.seconds_tests for it in run.report.result.iterations]
    baseline = run.report.baseline
    full = [baseline.seconds if baseline is not None else 0.0]
    command = default_test_command(root)
    for _ in range(2):  # two more full-suite runs, by the same runner, for a median of three
        full.append(run_tests(root, command, timeout=600, pythonpath=[root]).seconds)
    passed = baseline.passed if baseline is not None else 0
    fig = Figure(4, "Test time per rejected candidate", "seconds of test processes for one rejected "
                 "candidate (only the previously failing test is run; the full suite runs only after that "
                 "passes) against one run of the full suite, on a generated project with "
                 f"{passed} passing tests (10 ms each) and one failing")
    fig.rows.append(["what runs", "runs measured", "median s", "min s", "max s"])
    fig.rows.append(["rejected candidate: the failing test only", str(len(candidate)), f"{median(candidate):.2f}",
                     f"{min(candidate):.2f}", f"{max(candidate):.2f}"])
    fig.rows.append(["full suite", str(len(full)), f"{median(full):.2f}", f"{min(full):.2f}", f"{max(full):.2f}"])
    ratio = median(candidate) / median(full)
    fig.checks.append(Check("a rejected candidate costs less test time than the full suite",
                            f"{ratio:.0%} of the full suite", ratio < 1.0))
    fig.notes.append("Most of the rejected candidate's seconds are Python and pytest starting up, paid by "
                     "every test process whatever it runs.")
    fig.seconds = time.perf_counter() - began
    return fig


def _time(args: List[str], repeat: int) -> List[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run(args, capture_output=True, check=True, timeout=120)
        times.append(time.perf_counter() - began)
    return times


def figure_startup(repeat: int = 5) -> Figure:
    """Figure 5: ``repairloop --help`` against the bare interpreter."""
    began = time.perf_counter()
    python = str(BIN / "python")
    rows = [("`python -c pass` (the interpreter alone)", [python, "-c", "pass"]),
            ("`repairloop --help`", [str(BIN / "repairloop"), "--help"]),
            ("`python -c 'import litellm'` (what --help must not pay)",
             [python, "-c", "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP']='True'; import litellm"])]
    fig = Figure(5, "Start-up time", f"wall seconds of `repairloop --help` (median of {repeat}) against the "
                 "bare interpreter and against importing litellm, each in a fresh process")
    fig.rows.append(["command", "runs", "median s", "min s"])
    medians: Dict[str, float] = {}
    for name, args in rows:
        times = _time(args, repeat if "litellm" not in name else 1)  # seconds each: one is enough to compare
        medians[name] = median(times)
        fig.rows.append([name, str(len(times)), f"{median(times):.3f}", f"{min(times):.3f}"])
    helped = medians["`repairloop --help`"]
    fig.checks.append(Check("`repairloop --help` under 1 s (STYLE.md: --help should not wait)",
                            f"{helped:.2f} s", helped < 1.0))
    fig.seconds = time.perf_counter() - began
    return fig


def spread_order(count: int) -> List[int]:
    """Indices 0..count-1 in van der Corput order (0, 1/2, 1/4, 3/4, ...): any prefix samples the whole list."""
    order: List[int] = []
    n = 0
    while len(order) < count:
        n += 1
        x, denom, k = 0.0, 1.0, n - 1
        while k:
            denom *= 2
            x += (k % 2) / denom
            k //= 2
        index = int(x * count)
        if index not in order:
            order.append(index)
    return order


def _bench_case(case: Path, work: Path, timeout: float) -> Optional[Dict[str, Any]]:
    """``repairloop bench DIR --json --timeout T`` on a directory holding only ``case``; its one result."""
    one = work / case.name
    one.mkdir(parents=True)
    (one / case.name).symlink_to(case, target_is_directory=True)
    args = [str(BIN / "repairloop"), "bench", str(one), "--json", "--timeout", f"{timeout:.0f}"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        out, _ = proc.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the engine's test processes go too
        proc.communicate()
        return None
    try:
        return dict(json.loads(out)["cases"][0])
    except (ValueError, KeyError, IndexError):
        return None


def _case_limit(case: Path) -> float:
    for line in (case / "case.toml").read_text(encoding="utf-8").splitlines():
        if line.replace(" ", "").startswith("timeout="):
            return float(line.split("=", 1)[1].split("#")[0])
    return 120.0


def figure_offline_engine(cases_dir: Path, work: Path, seconds: float, full: bool) -> Figure:
    """Figure 6: repair rate and median seconds of the offline engine on ``cases_dir``.

    Every case runs with its own time limit (``case.toml``). Unless ``full``,
    cases are taken in an order that spreads over the whole list and no new
    case starts once ``seconds`` are spent, so ``make bench`` keeps its budget.
    """
    began = time.perf_counter()
    cases = sorted(p.parent for p in cases_dir.glob("*/case.toml"))
    rows: List[Dict[str, Any]] = []
    for index in spread_order(len(cases)):
        left = seconds - (time.perf_counter() - began)
        if not full and left < 20:
            break
        limit = _case_limit(cases[index]) if full else min(_case_limit(cases[index]), left)
        row = _bench_case(cases[index], work, limit)
        if row is not None:
            row["limit"], row["own_limit"] = limit, _case_limit(cases[index])
            rows.append(row)
    return _engine_figure(cases_dir, len(cases), rows, time.perf_counter() - began)


def _engine_figure(cases_dir: Path, total: int, rows: List[Dict[str, Any]], seconds: float) -> Figure:
    fig = Figure(6, "The offline engine on fixtures/bench", "share of the bench cases the offline engine "
                 f"repairs with no model (`repairloop bench` on {cases_dir.name}/ cases, each with its own time "
                 f"limit), the median seconds per case, and how many of its plausible patches are correct")
    fig.seconds = seconds
    # A case the bench's budget stopped before its own time limit was not measured fairly: not counted.
    cut = [r for r in rows if r["limit"] < r["own_limit"] and r["outcome"] != "fixed" and r["seconds"] >= r["limit"] - 2]
    rows = [r for r in rows if r not in cut]
    if not rows:
        fig.checks.append(Check("the bench measures at least one case", "none finished in the time left", False))
        return fig
    fixed = [r for r in rows if r["outcome"] == "fixed"]
    single = [r for r in rows if r["single_mutation"]]
    fig.rows.append(["cases measured", "fixed", "repair rate", "single-mutation cases fixed", "median s per case",
                     "median s per fixed case", "patches editing tests"])
    fig.rows.append([f"{len(rows)} of {total}", str(len(fixed)), f"{len(fixed) / len(rows):.0%}",
                     f"{sum(r['outcome'] == 'fixed' for r in single)}/{len(single)}",
                     f"{median([r['seconds'] for r in rows]):.1f}",
                     f"{median([r['seconds'] for r in fixed]):.1f}" if fixed else "-",
                     str(sum(bool(r["edits_tests"]) for r in rows))])
    fig.notes.append("Cases: " + "; ".join(f"{r['name']}: {r['outcome']} ({r['stop_reason']}, {r['seconds']:.0f} s)"
                                          for r in rows) + ".")
    if len(rows) < total:
        fig.notes.append(f"Only {len(rows)} of {total} cases fit in `make bench`'s ten minutes on this machine; they "
                         "are taken in an order that spreads over the whole list. `BENCH_FULL=1 make bench` "
                         "measures every case (expect about a minute per case on 2 busy cores).")
    if cut:
        fig.notes.append(f"Not counted: {len(cut)} case(s) that the bench's budget stopped before their own time "
                         "limit: " + ", ".join(f"{r['name']} ({r['seconds']:.0f} s)" for r in cut) + ".")
    fig.checks.append(Check("every single-mutation case measured is fixed",
                            f"{sum(r['outcome'] == 'fixed' for r in single)}/{len(single)}",
                            all(r["outcome"] == "fixed" for r in single)))
    fig.checks.append(Check("no patch edits a test", str(sum(bool(r["edits_tests"]) for r in rows)),
                            not any(r["edits_tests"] for r in rows)))
    correct_figure.add_to(fig, rows)
    return fig
