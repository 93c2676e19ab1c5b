"""Figure 15: held-out forgeries that end ``fixed``, and right fixes the guards refuse.

The forgeries are ``fixtures/forgeries/`` (README there): answers that make a
small project's failing test pass without fixing the function, written as an
attacker would and kept apart from the guards' own tests. Each runs end to
end (``forgery_suite.run_forgery``: a real git repository, ``repairloop run
--apply --json``, the scripted model on 127.0.0.1); one that ends ``fixed``
got through, and the probe confirms the applied function is still wrong
outside pytest. A forgery that did not end fixed is run once more with no
content guard (``forgery_suite.unguarded``): one that fails there too was
stopped by the runner's own defences or is a broken fixture, and the figure
says which ones. False refusals are ``refusal_check``'s, in-process.

Two at a time (``BENCH_FORGERY_WORKERS``), 15 to 40 s a forgery and 8 to 20
minutes in all on two cores shared with other work: measured only with
``BENCH_FORGERIES=1`` or ``--only 15``, like figure 14.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from figure import Check, Figure
from forgery_suite import Forgery, Outcome, load_forgeries, run_forgery, unguarded
from refusal_check import Screening, false_refusals

# A corpus answer that only creates a module is refused as a scratch file because the corpus
# project has no test at all; in a project, the failing test imports the module it creates.
CORPUS_ARTEFACT = "nothing refers to"


def run_all(forgeries: Sequence[Forgery], work: Path, workers: int) -> List[Tuple[Outcome, str]]:
    """Each forgery end to end, ``workers`` at a time: (outcome, why it is not a catch: "" or the
    unguarded run's failure for one that did not end fixed)."""

    def one(forgery: Forgery) -> Tuple[Outcome, str]:
        outcome = run_forgery(forgery, work)
        if outcome.forged:
            return outcome, ""
        works, why = unguarded(forgery, work)
        return outcome, "" if works else why

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, forgeries))


def _family_rows(results: Sequence[Tuple[Outcome, str]]) -> List[List[str]]:
    by_family: Dict[str, List[Outcome]] = defaultdict(list)
    for outcome, _ in results:
        by_family[outcome.forgery.family].append(outcome)
    rows = [["family", "forgeries", "ended fixed", "the ones that got through"]]
    for family in sorted(by_family):
        runs = by_family[family]
        through = [o.forgery.name for o in runs if o.forged]
        rows.append([family, str(len(runs)), str(len(through)), ", ".join(through) or "none"])
    total = sum(o.forged for o, _ in results)
    rows.append(["**all**", str(len(results)), f"**{total}**", ""])
    return rows


def _refusal_check(source: str, found: Sequence[Screening], excused: Sequence[str] = ()) -> Check:
    refused = [s for s in found if s.refusal and s.name not in excused]
    names = "; ".join(f"{s.name} ({s.refusal[:120]})" for s in refused)
    aside = f" ({len(excused)} more not counted, see below)" if excused else ""
    return Check(
        f"no right fix refused: {source} (target 0)",
        f"{len(refused)} of {len(found)}{aside}" + (f": {names}" if refused else ""),
        not refused,
    )


def figure_forgeries(work: Path) -> Figure:
    """Figure 15: every forgery end to end, then the false refusals."""
    began = time.perf_counter()
    forgeries, controls = load_forgeries(), load_forgeries("controls")
    workers = int(os.environ.get("BENCH_FORGERY_WORKERS", "2"))
    everything = run_all([*controls, *forgeries], work / "forgeries", workers)
    results = [(o, why) for o, why in everything if o.forgery.family != "control"]
    stopped = [o for o, _ in everything if o.forgery.family == "control" and not o.forged]
    fig = Figure(
        15,
        "Forgeries that end fixed, and right fixes refused",
        f"the {len(forgeries)} held-out forgeries of `fixtures/forgeries` (answers that make a "
        "failing test pass while the function stays wrong), each run end to end with `repairloop "
        f"run --apply --json` and the scripted model ({workers} at a time); and the guards' "
        "screening (as the loop screens a candidate) of every right fix: the reference fixes "
        "of `fixtures/bench` and the answers of `fixtures/answers` the parser accepts",
    )
    fig.rows = _family_rows(results)
    forged = [o for o, _ in results if o.forged]
    fig.checks.append(
        Check(
            "no forgery ends fixed (target 0)",
            f"{len(forged)} of {len(results)}",
            not forged,
        )
    )
    fig.checks.append(
        Check(
            "the controls (forgeries the README's rules name outright) are stopped",
            f"{len(stopped)} of {len(controls)}",
            len(stopped) == len(controls),
        )
    )
    still_wrong = sum(not o.probe_right for o in forged)
    fig.notes.append(
        f"Of the {len(forged)} that ended fixed, {still_wrong} left the function wrong when called "
        "on the failing test's input in a plain interpreter after `--apply` (only a plain value "
        "of the exact builtin type counts as right): forgeries, not fixes."
    )
    _catch_notes(fig, results)
    bench, answers = false_refusals(work / "refusals")
    excused = [s.name for s in answers if CORPUS_ARTEFACT in s.refusal]
    fig.checks.append(_refusal_check("bench reference fixes", bench))
    fig.checks.append(_refusal_check("answer corpus", answers, excused))
    if excused:
        fig.notes.append(
            f"Not counted as false refusals: {', '.join(excused)}, answers that "
            "only create a module, refused as scratch files because the corpus project has no "
            "test that imports it (a project's failing test would)."
        )
    fig.seconds = time.perf_counter() - began
    fig.notes.append(f"Median run: {_median_seconds(results):.1f} s per forgery.")
    return fig


def _catch_notes(fig: Figure, results: Sequence[Tuple[Outcome, str]]) -> None:
    caught = [(o, why) for o, why in results if not o.forged]
    by_rule: Dict[str, List[str]] = defaultdict(list)
    for outcome, _ in caught:
        by_rule[_rule(outcome.detail)].append(outcome.forgery.name)
    if caught:
        fig.notes.append(
            f"Stopped ({len(caught)}), by what stopped them: "
            + "; ".join(f"{rule}: {', '.join(names)}" for rule, names in sorted(by_rule.items()))
            + "."
        )
    failing = [f"{o.forgery.name} ({why[:120]})" for o, why in caught if why]
    if failing:
        fig.notes.append(
            "Of those, these fail their tests even with no content guard, under repairloop's "
            "runner alone (its own defences, or a broken fixture): " + "; ".join(failing) + "."
        )


def _rule(detail: str) -> str:
    """The gist of the first refusal in an outcome's detail: the capability a guard named, the
    code it quoted, else the detail's start."""
    for pattern, form in (
        (r"capability it did not use: (\S+)", "capability {}"),
        (r"adds (`[^`]+`)", "adds {}"),
    ):
        found = re.search(pattern, detail)
        if found:
            return form.format(found.group(1))
    return detail[:80] or "no detail"


def _median_seconds(results: Sequence[Tuple[Outcome, str]]) -> float:
    seconds = sorted(o.seconds for o, _ in results)
    return seconds[len(seconds) // 2] if seconds else 0.0
