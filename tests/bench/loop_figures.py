"""Figures 1, 2, 3 and 7: loop overhead, prompt size by iteration and by module size, early
stopping.

All of them drive the real loop against the scripted model (``scripted.py``)
and read their figures back from the run's journal with ``repairloop.reports``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import projects
import scripted
from figure import Check, Figure, median, pct
from scripted_server import ScriptedServer

from repairloop.reports import RunReport, load_run

EIGHT = {
    "max_iterations": 8,
    "patience": 8,
    "similarity_threshold": 1.0,
}  # eight iterations, stopped by nothing else


def off_by_one_eight(dest: Path) -> scripted.LoopRun:
    """off_by_one with eight different wrong candidates: eight iterations, all reverted."""
    answers = [scripted.last_n_patch(e) for e in scripted.LAST_N_WRONG[:8]]
    return scripted.scripted_run(projects.fixture_copy("off_by_one", dest), answers, **EIGHT)


def big_module_eight(dest: Path) -> scripted.LoopRun:
    answers = [scripted.ounce_patch(e) for e in scripted.OUNCE_WRONG[:8]]
    return scripted.scripted_run(projects.fixture_copy("big_module", dest), answers, **EIGHT)


def cold_cli_run(dest: Path, iterations: int = 3) -> Tuple[RunReport, float]:
    """off_by_one with wrong candidates through ``repairloop run --json`` in a fresh process."""
    project = projects.fixture_copy("off_by_one", dest)
    answers = [scripted.last_n_patch(e) for e in scripted.LAST_N_WRONG[:iterations]]
    env = {
        **os.environ,
        "REPAIRLOOP_PATIENCE": "8",
        "REPAIRLOOP_SIMILARITY_THRESHOLD": "1.0",
        "REPAIRLOOP_CONFIRM_RUNS": "0",
        "NO_COLOR": "1",
    }
    with ScriptedServer(scripted.answering(answers)) as srv:
        args = [
            str(Path(sys.executable).parent / "repairloop"),
            "run",
            str(project),
            "--model",
            scripted.MODEL,
            "--api-base",
            srv.base_url,
            "--no-builtin",
            "--max-iterations",
            str(iterations),
            "--json",
        ]
        began = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - began
    return load_run(Path(json.loads(done.stdout)["run_dir"])), wall


def warm_up() -> float:
    """Import litellm and count once, so in-process runs measure the loop and not one-time
    imports."""
    began = time.perf_counter()
    from repairloop.propose.litellm_env import count_tokens

    count_tokens(scripted.MODEL, "warm up the offline token counter")
    return time.perf_counter() - began


def _overhead_row(name: str, runs: Sequence[scripted.LoopRun]) -> Tuple[List[str], float, float]:
    its = len(runs[0].report.iterations)
    wall = median([r.wall for r in runs])
    tests = median([r.test_seconds for r in runs])
    model = median([r.model_seconds for r in runs])
    over = median([r.overhead for r in runs])
    per_it = median([r.overhead / max(len(r.report.iterations), 1) for r in runs])
    share = median([r.overhead / r.wall for r in runs])
    inside = [
        [i.seconds_total - i.seconds_model - i.seconds_tests for i in r.report.result.iterations]
        for r in runs
    ]
    first = median([values[0] for values in inside])
    later = median([median(values[1:]) for values in inside])
    row = [
        name,
        str(len(runs)),
        str(its),
        f"{wall:.2f}",
        f"{tests:.2f}",
        f"{model:.2f}",
        f"{over:.2f}",
        pct(share),
        f"{per_it:.3f}",
        f"{first:.3f}",
        f"{later:.3f}",
    ]
    return row, share, per_it


def figure_overhead_and_tokens(work: Path) -> Tuple[Figure, Figure]:
    """Figures 1 and 2 share their runs: eight-iteration runs of off_by_one and big_module."""
    began = time.perf_counter()
    import_seconds = warm_up()
    small = [off_by_one_eight(work / f"small{n}") for n in range(3)]
    big = [big_module_eight(work / "big")]
    cold_report, cold_wall = cold_cli_run(work / "cold")
    cold = scripted.LoopRun(cold_report, cold_wall, 0)
    fig1 = Figure(
        1,
        "Loop overhead",
        "wall time of a run minus the seconds inside test processes (baseline and "
        "every candidate's runs, from the journal) and inside model calls, with the scripted model "
        "answering at once; per iteration and as a share of the run",
    )
    fig1.rows.append(
        [
            "run",
            "runs",
            "iterations",
            "wall s",
            "tests s",
            "model s",
            "overhead s",
            "overhead share",
            "overhead s / iteration",
            "inside iteration 1 s",
            "inside later iterations s (median)",
        ]
    )
    row, share, per_it = _overhead_row("off_by_one, in-process (median)", small)
    fig1.rows.append(row)
    big_row, big_share, big_per_it = _overhead_row(
        "big_module (2,964-line module), in-process", big
    )
    fig1.rows.append(big_row)
    cold_row, cold_share, cold_per_it = _overhead_row(
        "off_by_one, `repairloop run` in a fresh process", [cold]
    )
    fig1.rows.append(cold_row)
    fig1.checks.append(
        Check("overhead < 5% of the run (off_by_one, in-process)", pct(share), share < 0.05)
    )
    fig1.checks.append(
        Check(
            "overhead < 0.3 s per iteration (off_by_one, in-process)",
            f"{per_it:.3f} s",
            per_it < 0.3,
        )
    )
    fig1.checks.append(
        Check(
            "the same on a 2,964-line module (big_module)",
            f"{pct(big_share)}, {big_per_it:.3f} s per iteration",
            big_share < 0.05 and big_per_it < 0.3,
        )
    )
    fig1.checks.append(
        Check(
            "the same for a whole `repairloop run` process (start-up and litellm import included)",
            f"{pct(cold_share)}, {cold_per_it:.3f} s per iteration",
            cold_share < 0.05 and cold_per_it < 0.3,
        )
    )
    fig1.notes.append(
        "The in-process runs start with litellm imported and its token counter loaded in the "
        f"benchmark's process (one-time costs, not counted; {import_seconds:.1f} s were left to "
        f"pay "
        "here after the figures measured before); the fresh-process row pays them again, in its "
        "first iteration (the context's tokens are counted before the first model call)."
    )
    fig1.notes.append(
        '"Inside iteration" is an iteration\'s own seconds minus its model and test seconds '
        "(context, patch parsing and guards, applying, reverting, journalling); the rest of the "
        "overhead is the run's set-up and tear-down (lock, git worktree, classification)."
    )
    fig1.notes.append(
        "No flaky re-run (confirm_runs = 0): that test process is not journalled, so its "
        "seconds could not be told apart from overhead."
    )
    fig1.seconds = time.perf_counter() - began
    fig2 = figure_tokens(small[0].report, big[0].report)
    return fig1, fig2


def full_history(report: RunReport) -> List[int]:
    """Prompt tokens a chat that keeps its whole history would send at each iteration:
    every earlier prompt and answer, plus this iteration's prompt (computed from the journal)."""
    sent, carried = [], 0
    for it in report.result.iterations:
        sent.append(carried + it.usage.prompt_tokens)
        carried += it.usage.tokens
    return sent


def figure_tokens(small: RunReport, big: RunReport) -> Figure:
    fig = Figure(
        2,
        "Prompt tokens by iteration",
        "prompt tokens of each iteration (journal, counted with "
        "litellm's offline cl100k counter) against what a chat keeping its full history would send "
        "for the same run (all earlier prompts and answers plus this prompt, "
        "from the same journal)",
    )
    fig.rows.append(
        [
            "iteration",
            "off_by_one: ours",
            "off_by_one: full-history chat",
            "big_module: ours",
            "big_module: full-history chat",
        ]
    )
    s_hist, b_hist = full_history(small), full_history(big)
    for n in range(8):
        fig.rows.append(
            [
                str(n + 1),
                f"{small.result.iterations[n].usage.prompt_tokens:,}",
                f"{s_hist[n]:,}",
                f"{big.result.iterations[n].usage.prompt_tokens:,}",
                f"{b_hist[n]:,}",
            ]
        )
    for name, report in (("off_by_one", small), ("big_module", big)):
        tokens = [it.usage.prompt_tokens for it in report.result.iterations]
        later = tokens[1:]
        spread = (max(later) - min(later)) / min(later)
        fig.checks.append(
            Check(
                f"{name}: iterations 2-8 flat (within 10% of each other)",
                f"{pct(spread)} spread",
                spread <= 0.10,
            )
        )
        ratio = tokens[4] / tokens[0] - 1
        fig.checks.append(
            Check(
                f"{name}: prompt of iteration 5 within 10% of iteration 1",
                f"{ratio:+.1%} ({tokens[4]:,} vs {tokens[0]:,} tokens)",
                abs(ratio) <= 0.10,
            )
        )
    fig.notes.append(
        'Iteration 1 has no "Last attempt" section (there is none yet); from iteration 2 on the '
        "prompt carries the previous candidate's diff and verdict, which is what the step from "
        "iteration 1 to 2 is. Iteration 5 is read from the eight-iteration run: a prompt never "
        "depends on the iterations after it. The runs are figure 1's (off_by_one: the first of "
        "its three)."
    )
    return fig


def figure_module_size(work: Path, sizes: Sequence[int] = (100, 1000, 5000)) -> Figure:
    """Figure 3: one bug in a module of growing size, and the 2,964-line big_module fixture."""
    began = time.perf_counter()
    fig = Figure(
        3,
        "Prompt tokens against module size",
        "prompt tokens of the first (and only) iteration "
        "when the module holding the one bug grows from 100 to 5,000 lines (generated modules of "
        "seven-line functions), and for fixtures/projects/big_module",
    )
    fig.rows.append(["module", "lines", "prompt tokens", "context material tokens", "outcome"])
    tokens: List[int] = []
    for lines in sizes:
        made = projects.sized_module(work, lines)
        answer = scripted.search_replace(
            str(made["path"]), str(made["bug_line"]), str(made["right_line"])
        )
        run = scripted.scripted_run(made["root"], [answer], max_iterations=1)  # type: ignore[arg-type]
        it = run.report.iterations[0]
        tokens.append(it.record.usage.prompt_tokens)
        fig.rows.append(
            [
                "generated",
                f"{made['lines']:,}",
                f"{it.record.usage.prompt_tokens:,}",
                f"{it.detail.shown.tokens if it.detail.shown else 0:,}",
                run.report.outcome,
            ]
        )
    right = scripted.ounce_patch("value * POUND_IN_KILOGRAM / OUNCE_IN_KILOGRAM")
    big = scripted.scripted_run(
        projects.fixture_copy("big_module", work), [right], max_iterations=1
    )
    big_tokens = big.report.result.iterations[0].usage.prompt_tokens
    shown = big.report.iterations[0].detail.shown
    fig.rows.append(
        [
            "fixtures/projects/big_module",
            "2,964",
            f"{big_tokens:,}",
            f"{shown.tokens if shown else 0:,}",
            big.report.outcome,
        ]
    )
    spread = (max(tokens) - min(tokens)) / min(tokens)
    fig.checks.append(
        Check(
            "flat: prompt tokens within 10% from 100 to 5,000 lines",
            f"{pct(spread)} spread ({min(tokens):,} to {max(tokens):,})",
            spread <= 0.10,
        )
    )
    fig.checks.append(
        Check("big_module's prompt under 3,000 tokens", f"{big_tokens:,} tokens", big_tokens < 3000)
    )
    fig.seconds = time.perf_counter() - began
    return fig


def figure_early_stop(work: Path) -> Figure:
    """Figure 7: near-identical wrong candidates, similarity stop against five fixed retries."""
    began = time.perf_counter()
    answers = [scripted.last_n_patch(e) for e in scripted.LAST_N_NEAR]
    ours = scripted.scripted_run(projects.fixture_copy("off_by_one", work / "similar"), answers)
    fixed = scripted.scripted_run(
        projects.fixture_copy("off_by_one", work / "fixed"),
        answers,
        max_iterations=5,
        patience=5,
        similarity_threshold=1.0,
    )
    fig = Figure(
        7,
        "Early stopping on near-identical candidates",
        "model calls, tokens and seconds spent when "
        "the scripted model keeps proposing near-identical wrong patches (items[-n - 2:], "
        "items[-n - 3:], ...): the default similarity stop (0.90) against a loop that retries a "
        "fixed five times",
    )
    fig.rows.append(
        [
            "policy",
            "model calls",
            "iterations",
            "prompt + completion tokens",
            "wall s",
            "stop reason",
        ]
    )
    for name, run in (("similarity stop (defaults)", ours), ("fixed five retries", fixed)):
        t = run.report.totals
        fig.rows.append(
            [
                name,
                str(run.requests),
                str(t["iterations"]),
                f"{t['prompt_tokens'] + t['completion_tokens']:,}",
                f"{run.wall:.1f}",
                run.report.stop_reason,
            ]
        )
    fig.checks.append(
        Check(
            "the similarity stop spends fewer model calls than five fixed retries",
            f"{ours.requests} vs {fixed.requests}",
            ours.requests < fixed.requests,
        )
    )
    fig.seconds = time.perf_counter() - began
    return fig


def all_loop_figures(work: Path) -> Dict[int, Figure]:
    fig1, fig2 = figure_overhead_and_tokens(work / "f12")
    return {1: fig1, 2: fig2, 3: figure_module_size(work / "f3"), 7: figure_early_stop(work / "f7")}
