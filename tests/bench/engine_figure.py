"""Figure 6: the offline engine on fixtures/bench within ``make bench``'s budget, with warm
validation and without.

The engine's share of the budget is split in two equal halves, one per way of
validating candidates: ``warm = false`` (every candidate's failing tests in a
fresh process, as before warm validation) and ``warm = true`` (the default).
Both ways take the cases in the same order, one that spreads over the whole
list, and the next case always goes to the way that has spent less of its half,
so both see the same machine at the same time. A way stops starting cases when
its half is spent; a case gets its own time limit (``case.toml``) or what is
left of its way's half, whichever is less. The faster way finishes more cases
in its half, so "fixed of all cases" is the repair rate within the budget.
``BENCH_FULL=1`` runs every case both ways with its own limit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import correct_figure
from figure import Check, Figure, median

BIN = Path(sys.executable).parent
WAYS = {"fresh": "false", "warm": "true"}  # label -> REPAIRLOOP_WARM
MIN_CASE_SECONDS = 15.0  # a way with less of its half left starts no case (none finishes in that)

Row = Dict[str, Any]


def spread_order(count: int) -> List[int]:
    """Indices 0..count-1 in van der Corput order (0, 1/2, 1/4, 3/4, ...): any prefix samples the
    whole list."""
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


def bench_case(
    case: Path, work: Path, timeout: float, warm: Optional[bool] = None
) -> Optional[Row]:
    """``repairloop bench run DIR --json --timeout T`` on a directory holding only ``case``; its one
    result.

    ``warm`` adds ``--warm`` or ``--no-warm`` (None: the default; the bench
    ignores settings from the environment). None when the run did not answer
    within ``timeout`` + 60 s or printed no result.
    """
    one = work / case.name
    one.mkdir(parents=True)
    (one / case.name).symlink_to(case, target_is_directory=True)
    args = [
        str(BIN / "repairloop"),
        "bench",
        "run",
        str(one),
        "--json",
        "--timeout",
        f"{timeout:.0f}",
    ]
    if warm is not None:
        args.append("--warm" if warm else "--no-warm")
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
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


def case_limit(case: Path) -> float:
    """The case's own time limit in seconds (``timeout`` in its case.toml; 120 when it has none)."""
    for line in (case / "case.toml").read_text(encoding="utf-8").splitlines():
        if line.replace(" ", "").startswith("timeout="):
            return float(line.split("=", 1)[1].split("#")[0])
    return 120.0


def figure_offline_engine(cases_dir: Path, work: Path, seconds: float, full: bool) -> Figure:
    """Figure 6: per way (fresh, warm), the cases fixed within half of ``seconds`` (all cases with
    their own limits when ``full``), the repair rate, the median seconds per case, and the correct
    share."""
    began = time.perf_counter()
    cases = sorted(p.parent for p in cases_dir.glob("*/case.toml"))
    order = spread_order(len(cases))
    half = seconds / 2
    spent = dict.fromkeys(WAYS, 0.0)
    taken = dict.fromkeys(WAYS, 0)
    rows: Dict[str, List[Row]] = {way: [] for way in WAYS}
    while True:
        open_ways = [
            w
            for w in WAYS
            if taken[w] < len(cases) and (full or half - spent[w] >= MIN_CASE_SECONDS)
        ]
        if not open_ways:
            break
        way = min(open_ways, key=lambda w: (spent[w], w))
        case = cases[order[taken[way]]]
        taken[way] += 1
        own = case_limit(case)
        limit = own if full else min(own, half - spent[way])
        started = time.perf_counter()
        row = bench_case(case, work / way, limit, warm=WAYS[way] == "true")
        spent[way] += time.perf_counter() - started
        if row is not None:
            row["limit"], row["own_limit"] = limit, own
            rows[way].append(row)
    return engine_figure(
        cases_dir, len(cases), rows, time.perf_counter() - began, None if full else half
    )


def _finished(rows: Sequence[Row]) -> List[Row]:
    """Rows the budget did not stop before the case's own limit (a cut case that was not fixed is
    not a fair measure of it)."""
    return [
        r
        for r in rows
        if not (
            r["limit"] < r["own_limit"]
            and r["outcome"] != "fixed"
            and r["seconds"] >= r["limit"] - 2
        )
    ]


def engine_figure(
    cases_dir: Path, total: int, rows: Dict[str, List[Row]], seconds: float, half: Optional[float]
) -> Figure:
    """Figure 6 from ``bench --json`` rows per way (``fresh``, ``warm``; each row with the ``limit``
    it ran with and the case's ``own_limit``); ``half`` is each way's share in seconds (None: every
    case ran)."""
    share = f"{half:.0f} s each" if half is not None else "every case, its own limit"
    fig = Figure(
        6,
        "The offline engine on fixtures/bench, with warm validation and without",
        f"bench cases the offline engine repairs with no model (`repairloop bench` on "
        f"{cases_dir.name}/ "
        f"cases) within the same share of `make bench`'s budget ({share}) validating its "
        f"candidates "
        "fresh (`warm = false`) against warm (the default), the repair rate of the cases each way "
        "finished, the median seconds per case, and how many plausible patches are correct",
    )
    fig.seconds = seconds
    fig.rows.append(
        [
            "validation",
            "cases finished",
            "fixed (of all cases)",
            "repair rate of finished",
            "single-mutation fixed",
            "median s per case",
            "median s per fixed case",
            "patches editing tests",
        ]
    )
    finished = {way: _finished(rows[way]) for way in WAYS}
    fixed = {way: [r for r in finished[way] if r["outcome"] == "fixed"] for way in WAYS}
    for way, label in (("fresh", "fresh (`warm = false`)"), ("warm", "warm (default)")):
        done, single = finished[way], [r for r in finished[way] if r["single_mutation"]]
        fig.rows.append(
            [
                label,
                f"{len(done)} of {total}",
                f"{len(fixed[way])} of {total}",
                f"{len(fixed[way]) / len(done):.0%}" if done else "-",
                f"{sum(r['outcome'] == 'fixed' for r in single)}/{len(single)}",
                f"{median([r['seconds'] for r in done]):.1f}" if done else "-",
                f"{median([r['seconds'] for r in fixed[way]]):.1f}" if fixed[way] else "-",
                str(sum(bool(r["edits_tests"]) for r in done)),
            ]
        )
        if done:
            fig.notes.append(
                f"Cases {way}: "
                + "; ".join(
                    f"{r['name']}: {r['outcome']} ({r['stop_reason']}, {r['seconds']:.0f} s)"
                    for r in done
                )
                + "."
            )
        cut = [r for r in rows[way] if r not in done]
        if cut:
            fig.notes.append(
                f"Stopped by the end of the {way} share before their own limit (not finished): "
                + ", ".join(f"{r['name']} ({r['seconds']:.0f} s)" for r in cut)
                + "."
            )
    _checks(fig, finished, fixed, total, half)
    correct_figure.add_to(fig, finished["warm"])
    return fig


def _checks(
    fig: Figure,
    finished: Dict[str, List[Row]],
    fixed: Dict[str, List[Row]],
    total: int,
    half: Optional[float],
) -> None:
    warm, fresh = len(fixed["warm"]), len(fixed["fresh"])
    if half is not None:
        fig.checks.append(
            Check(
                "within the same share of the budget, the offline engine fixes more bench cases "
                "validating warm than fresh",
                f"{warm} vs {fresh} of {total}",
                warm > fresh,
            )
        )
        fig.notes.append(
            "Each way's share is half of what `make bench`'s ten minutes leave after the other "
            "figures; the cases run in an order that spreads over the whole list, and the next "
            "case "
            "always goes to the way that has spent less, so both ways see the same machine load. "
            "`BENCH_FULL=1 make bench` runs every case both ways with its own time limit."
        )
    else:
        fig.checks.append(
            Check(
                "with every case run to its own limit, the offline engine fixes at least as many "
                "bench cases validating warm as fresh",
                f"{warm} vs {fresh} of {total}",
                warm >= fresh,
            )
        )
    single = [r for r in finished["warm"] if r["single_mutation"]]
    fig.checks.append(
        Check(
            "every single-mutation case finished warm is fixed",
            f"{sum(r['outcome'] == 'fixed' for r in single)}/{len(single)}",
            all(r["outcome"] == "fixed" for r in single),
        )
    )
    edits = sum(bool(r["edits_tests"]) for way in finished for r in finished[way])
    fig.checks.append(Check("no patch edits a test", str(edits), edits == 0))
