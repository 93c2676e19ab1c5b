"""Figures 4 and 5: targeted test runs and start-up time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import projects
import scripted
from figure import Check, Figure, median

from repairloop.runner import default_test_command, run_tests

BIN = Path(sys.executable).parent


def figure_targeted_tests(work: Path) -> Figure:
    """Figure 4: a rejected candidate runs only the failing test; compare with the full suite."""
    began = time.perf_counter()
    root = projects.many_tests(work)
    wrong = [
        scripted.search_replace(
            "shop/price.py", "    return price * percent / 100", f"    return {e}"
        )
        for e in ("price * percent / 10", "price - percent", "price * (100 + percent) / 100")
    ]
    run = scripted.scripted_run(root, wrong, max_iterations=3, patience=3, similarity_threshold=1.0)
    candidate = [it.seconds_tests for it in run.report.result.iterations]
    baseline = run.report.baseline
    full = [baseline.seconds if baseline is not None else 0.0]
    command = default_test_command(root)
    for _ in range(2):  # two more full-suite runs, by the same runner, for a median of three
        full.append(run_tests(root, command, timeout=600, pythonpath=[root]).seconds)
    passed = baseline.passed if baseline is not None else 0
    fig = Figure(
        4,
        "Test time per rejected candidate",
        "seconds of test processes for one rejected "
        "candidate (only the previously failing test is run; the full suite runs only after that "
        "passes) against one run of the full suite, on a generated project with "
        f"{passed} passing tests (10 ms each) and one failing",
    )
    fig.rows.append(["what runs", "runs measured", "median s", "min s", "max s"])
    fig.rows.append(
        [
            "rejected candidate: the failing test only",
            str(len(candidate)),
            f"{median(candidate):.2f}",
            f"{min(candidate):.2f}",
            f"{max(candidate):.2f}",
        ]
    )
    fig.rows.append(
        [
            "full suite",
            str(len(full)),
            f"{median(full):.2f}",
            f"{min(full):.2f}",
            f"{max(full):.2f}",
        ]
    )
    ratio = median(candidate) / median(full)
    fig.checks.append(
        Check(
            "a rejected candidate costs less test time than the full suite",
            f"{ratio:.0%} of the full suite",
            ratio < 1.0,
        )
    )
    fig.notes.append(
        "Most of the rejected candidate's seconds are Python and pytest starting up, paid by "
        "every test process whatever it runs."
    )
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
    rows = [
        ("`python -c pass` (the interpreter alone)", [python, "-c", "pass"]),
        ("`repairloop --help`", [str(BIN / "repairloop"), "--help"]),
        (
            "`python -c 'import litellm'` (what --help must not pay)",
            [
                python,
                "-c",
                "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP']='True'; import litellm",
            ],
        ),
    ]
    fig = Figure(
        5,
        "Start-up time",
        f"wall seconds of `repairloop --help` (median of {repeat}) against the "
        "bare interpreter and against importing litellm, each in a fresh process",
    )
    fig.rows.append(["command", "runs", "median s", "min s"])
    medians: Dict[str, float] = {}
    for name, args in rows:
        # seconds each: one is enough to compare
        times = _time(args, repeat if "litellm" not in name else 1)
        medians[name] = median(times)
        fig.rows.append([name, str(len(times)), f"{median(times):.3f}", f"{min(times):.3f}"])
    helped = medians["`repairloop --help`"]
    fig.checks.append(
        Check(
            "`repairloop --help` under 1 s (STYLE.md: --help should not wait)",
            f"{helped:.2f} s",
            helped < 1.0,
        )
    )
    fig.seconds = time.perf_counter() - began
    return fig
