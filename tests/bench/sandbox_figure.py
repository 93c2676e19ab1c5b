"""Figure 8: what the sandbox (bubblewrap) adds to one test run, against the same run unconfined."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable, Dict, List

import projects
from figure import Check, Figure, median

from repairloop.runner import default_test_command, run_tests
from repairloop.workspace.confinement import open_sandbox
from repairloop.workspace.sandbox import SandboxPolicy


def _interleaved(runs: Dict[str, Callable[[], float]], repeat: int) -> Dict[str, List[float]]:
    """Seconds of each run, ``repeat`` times, alternating so that load drifts hit both alike."""
    times: Dict[str, List[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            times[name].append(run())
    return times


def _wall(args: List[str]) -> float:
    began = time.perf_counter()
    subprocess.run(args, capture_output=True, check=True, timeout=60)
    return time.perf_counter() - began


def figure_sandbox(work: Path, repeat: int = 15) -> Figure:
    """Figure 8: pytest on off_by_one and a bare `true`, each with and without the sandbox."""
    began = time.perf_counter()
    root = projects.fixture_copy("off_by_one", work)
    probe_began = time.perf_counter()
    box = open_sandbox(SandboxPolicy(mode="bwrap", hidden=(root,)))
    probe = time.perf_counter() - probe_began
    command = default_test_command(root)

    def suite(wrapped: bool) -> float:
        return run_tests(
            root, command, timeout=600, pythonpath=[root], wrap=box if wrapped else None
        ).seconds

    confined = box(["/bin/true"], tree=root, outputs=[], env={"PATH": "/usr/bin:/bin"})
    times = _interleaved(
        {
            "suite": lambda: suite(False),
            "suite boxed": lambda: suite(True),
            "true": lambda: _wall(["/bin/true"]),
            "true boxed": lambda: _wall(confined),
        },
        repeat,
    )
    fig = Figure(
        8,
        "Sandbox cost per test run",
        f"wall seconds of one test run (median of {repeat}, runs "
        "interleaved) without and with the sandbox (`bwrap` with every option repairloop uses: "
        "read-only "
        "root, private /tmp, the tree under test writable with its tests read-only, hidden project "
        "and credential stores, new user, PID, network, IPC and UTS "
        f"namespaces, memory and file-size limits), by `{box.status.detail}`",
    )
    fig.rows.append(["what runs", "unconfined s", "sandboxed s", "added s"])
    added: Dict[str, float] = {}
    for name, label in (
        ("suite", "pytest on off_by_one (the runner, plugin included)"),
        ("true", "`/bin/true` (the sandbox alone)"),
    ):
        plain, boxed = median(times[name]), median(times[name + " boxed"])
        added[name] = boxed - plain
        fig.rows.append([label, f"{plain:.3f}", f"{boxed:.3f}", f"{boxed - plain:+.3f}"])
    # The sandbox's own cost is the `true` row: a pytest run's difference also carries the noise of
    # a shared 2-core machine (seconds of Python start-up, varying by more than the sandbox costs).
    fig.checks.append(
        Check(
            "the sandbox adds under 50 ms to a test run",
            f"{added['true'] * 1000:+.0f} ms (`true`); pytest run: {added['suite'] * 1000:+.0f} ms",
            added["true"] < 0.05,
        )
    )
    spread = max(times["suite"]) - min(times["suite"])
    fig.notes.append(
        f"The check uses the `true` row, the sandbox alone: unconfined pytest runs alone spread "
        f"over {spread:.2f} s here, so their difference with the sandboxed ones is mostly noise."
    )
    fig.notes.append(
        f"Once per run repairloop probes the sandbox (runs `true` in it): {probe * 1000:.0f} ms "
        f"here. "
        "Figure 1's test seconds include the sandbox, as every test run of a loop goes through it."
    )
    fig.seconds = time.perf_counter() - began
    return fig
