"""``make bench``: measure repairloop on this machine and write BENCHMARKS.md from scratch.

Not part of ``make test``. Every figure is measured here and now (medians of
several runs where time varies; token counts are deterministic and measured
once); nothing in BENCHMARKS.md is written by hand. The whole run keeps to a
time budget (default 570 s, under ``make bench``'s ten minutes): the offline
engine's figure, measured last, gets what is left (at least ``ENGINE_FLOOR``
of the budget, so a busy machine can overrun it), half for each way of
validating candidates (fresh, warm), unless ``BENCH_FULL=1``
(``engine_figure.py``). ``BENCH_FULL=1`` also has figure 13 run every real bug
of ``fixtures/realbugs`` instead of its fixed subset, one per library
(``context_figure.py``; the sdists come from PyPI once, then from the cache);
``BENCH_REALBUGS=all`` does that alone, leaving figure 6 in its budget.
Figure 14 (``fidelity_figure.py``: 32 real bugs three ways, about 40 minutes on
two cores) is measured only with ``BENCH_FIDELITY=1`` or ``--only 14``; figure 15
(``forgery_figure.py``: the held-out forgeries end to end, 8 to 20 minutes on two
shared cores) only with ``BENCH_FORGERIES=1`` or ``--only 15``; figure 16
(``engine_realbugs_figure.py``: the offline engine alone on figure 14's real bugs, about 30
minutes a revision; ``BENCH_ENGINE_BEFORE=REV`` adds an older revision side by side) only with
``BENCH_ENGINE=1`` or ``--only 16``; figure 17 (``behaviour_figure.py``: the behaviour check on
right fixes and on the offline engine's plausible-but-wrong patches of fixtures/bench harvested
by ``harvest_wrong_patches.py``, about 40 minutes on two shared cores) only with
``BENCH_BEHAVIOUR=1`` or ``--only 17``. A figure
a run does not measure (figures 14 to 17 by default, the others with ``--only``) keeps
its section and targets from the BENCHMARKS.md it replaces, marked with when
they were measured (``carried_over``).

Usage: ``python tests/bench/run.py [--out FILE] [--budget SECONDS] [--only 1,5]``
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the bench helpers, then tests/ (scripted_server)

from figure import Figure, verdict  # noqa: E402
from projects import REPO  # noqa: E402

ENGINE_FLOOR = (
    0.4  # the least share of the budget figure 6 gets, even when the other figures overran
)


def machine() -> str:
    """CPU model, cores, memory, OS and Python: the machine every figure was measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kib / 1024 / 1024:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def _revision() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (
        " with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    )


def measure(
    work: Path, only: Optional[Sequence[int]], budget: float, started: float
) -> Dict[int, Figure]:
    import answer_figures
    import behaviour_figure
    import classify_figure
    import context_figure
    import engine_figure
    import engine_realbugs_figure
    import fidelity_figure
    import forgery_figure
    import loop_figures
    import sandbox_figure
    import speed_figures
    import warm_figure

    want = set(only or range(1, 15 if os.environ.get("BENCH_FIDELITY") == "1" else 14))
    if not only and os.environ.get("BENCH_FORGERIES") == "1":
        want.add(15)
    if not only and os.environ.get("BENCH_ENGINE") == "1":
        want.add(16)
    if not only and os.environ.get("BENCH_BEHAVIOUR") == "1":
        want.add(17)
    full = os.environ.get("BENCH_FULL") == "1"
    every_bug = os.environ.get("BENCH_REALBUGS") == "all"  # figure 13's whole corpus, alone
    figures: Dict[int, Figure] = {}
    steps = [
        (5, lambda: speed_figures.figure_startup()),
        (4, lambda: speed_figures.figure_targeted_tests(work / "f4")),
        (1, None),
        (3, lambda: loop_figures.figure_module_size(work / "f3")),
        (7, lambda: loop_figures.figure_early_stop(work / "f7")),
        (8, lambda: sandbox_figure.figure_sandbox(work / "f8")),
        (9, lambda: answer_figures.figure_corpus(work / "f9")),
        (10, lambda: answer_figures.figure_calls_per_fix(work / "f10")),
        (11, lambda: classify_figure.figure_classification(work / "f11")),
        (12, lambda: warm_figure.figure_warm(work / "f12w")),
        (13, lambda: context_figure.figure_context(work / "f13", full or every_bug)),
        (14, lambda: fidelity_figure.figure_fidelity(work / "f14")),
        (15, lambda: forgery_figure.figure_forgeries(work / "f15")),
        (16, lambda: engine_realbugs_figure.figure_engine_realbugs(work / "f16")),
        (17, lambda: behaviour_figure.figure_behaviour(work / "f17")),
    ]
    for number, step in steps:
        if number == 1 and want & {1, 2}:
            figures[1], figures[2] = loop_figures.figure_overhead_and_tokens(work / "f12")
        elif number in want and step is not None:
            figures[number] = step()
        else:
            continue
        _progress(figures, started)
    if 6 in want:
        # What is left (leaving time to write the file), but never under ENGINE_FLOOR: on a busy
        # machine the other figures take longer, and a figure 6 squeezed to nothing would compare
        # nothing.
        left = max(budget - (time.monotonic() - started) - 30, ENGINE_FLOOR * budget)
        figures[6] = engine_figure.figure_offline_engine(
            REPO / "fixtures" / "bench", work / "f6", left, full
        )
        _progress(figures, started)
    return {n: figures[n] for n in sorted(figures) if n in want}


def _progress(figures: Dict[int, Figure], started: float) -> None:
    done = ", ".join(str(n) for n in sorted(figures))
    print(
        f"[{time.monotonic() - started:5.0f} s] figures done: {done}", file=sys.stderr, flush=True
    )


FIGURES = range(1, 18)  # a figure this run does not measure is carried over from the last file


def carried_over(previous: str, number: int) -> Tuple[List[str], str]:
    """Figure ``number``'s rows of the Targets table and its section in ``previous`` (the
    BENCHMARKS.md text being replaced), the section marked as carried over with the date of the
    run that measured it; ([], "") when ``previous`` has none."""
    rows = [line for line in previous.splitlines() if line.startswith(f"| {number}. ")]
    start = previous.find(f"\n## {number}. ")
    if start < 0:
        return [], ""
    end = previous.find("\n## ", start + 1)
    section = previous[start + 1 : end if end >= 0 else len(previous)].rstrip() + "\n"
    when = previous.split("Generated by `make bench` (`tests/bench/run.py`) on ", 1)[-1][:20]
    note = "Carried over: not measured by this run"
    if note not in section and "\nMeasured by `" not in section:  # else it says when already
        first, _, rest = section.partition("\n")
        section = f"{first}\n\n{note} (measured by the run of {when.strip(' i')}).\n{rest}"
    return rows, section


def render(
    figures: Dict[int, Figure], host: str, seconds: float, load: str, previous: str = ""
) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Benchmarks",
        "",
        f"Generated by `make bench` (`tests/bench/run.py`) on {now} in {seconds:.0f} s, from "
        f"repairloop "
        f"{_revision()}. Every figure below is measured by that script; re-run it to regenerate "
        f"this file.",
        "",
        f"Machine: {host}; {load} when the run started.",
        "",
        "The scripted model is `tests/scripted_server.py` on 127.0.0.1, answering at once; litellm "
        "treats it "
        "as `openai/gpt-4o-mini`, and tokens are counted with litellm's offline cl100k counter.",
        "",
        "## Targets",
        "",
        "| figure | target | measured | verdict |",
        "| --- | --- | --- | --- |",
    ]
    entries: Dict[int, Tuple[List[str], str]] = {
        n: carried_over(previous, n) for n in FIGURES if n not in figures
    }
    for fig in figures.values():
        rows = [
            f"| {fig.number}. {fig.title} | {check.target} | {check.measured} | "
            f"{verdict(check.met)} |"
            for check in fig.checks
        ]
        entries[fig.number] = (rows, fig.markdown(host))
    ordered = [entries[n] for n in sorted(entries)]
    out += [row for rows, _ in ordered for row in rows]
    out.append("")
    out += [section for _, section in ordered if section]
    return "\n".join(out).rstrip() + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md", help="file to write")
    parser.add_argument("--budget", type=float, default=570.0, help="seconds for the whole run")
    parser.add_argument("--only", default="", help="comma-separated figure numbers (default: all)")
    args = parser.parse_args(argv)
    only = [int(n) for n in args.only.split(",") if n.strip()] or None
    started, load, host = time.monotonic(), _load(), machine()
    os.environ.setdefault("NO_COLOR", "1")
    with tempfile.TemporaryDirectory(prefix="repairloop-bench-") as tmp:
        figures = measure(Path(tmp), only, args.budget, started)
    previous = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    text = render(figures, host, time.monotonic() - started, load, previous)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
