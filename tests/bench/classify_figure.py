"""Figure 11: the share of failures classified right, over ``fixtures/classify`` (one case per
public bug report).

Each case runs as its user ran it, through the product's classify path
(``tests/classify_cases.run_case``: baseline, classification, fidelity check,
flaky re-runs); the kind it gets is compared with the kind its report implies,
and the hints it must name (the address a service was tried at, the build
command, the test that was running) are checked too.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]  # tests/: classify_cases

from classify_cases import Outcome, load_cases, run_case  # noqa: E402
from figure import Check, Figure, median, pct  # noqa: E402

TARGET = 0.95  # issue 13: at least 95% classified right


def figure_classification(work: Path) -> Figure:
    """Run every case once (in ``work``) and tabulate the share right, by kind and overall."""
    started = time.monotonic()
    outcomes: List[Outcome] = []
    for case in load_cases():
        target = work / case.name
        target.mkdir(parents=True, exist_ok=True)
        outcomes.append(run_case(case, target))
    fig = Figure(
        11,
        "Failures classified right",
        "the overall kind `repairloop classify` gives each project of fixtures/classify (modelled "
        "on a public "
        "bug report, run as its user ran it) against the kind the report implies; a case counts as "
        "right only "
        "when its hint also names what the report needs (address, build command, running test, "
        "polluter)",
    )
    by_kind: Dict[str, List[Outcome]] = {}
    for outcome in outcomes:
        by_kind.setdefault(outcome.case.expected_kind, []).append(outcome)
    fig.rows.append(
        [
            "expected kind",
            "cases",
            "right",
            "share right",
            "classified as (when wrong)",
            "seconds per case (median)",
        ]
    )
    for kind in sorted(by_kind):
        group = by_kind[kind]
        right = sum(o.right for o in group)
        wrong = Counter(o.kind if o.kind != kind else "hint missing" for o in group if not o.right)
        fig.rows.append(
            [
                kind,
                str(len(group)),
                str(right),
                pct(right / len(group)),
                ", ".join(f"{k} ×{n}" for k, n in wrong.items()) or "-",
                f"{median([o.seconds for o in group]):.1f}",
            ]
        )
    total = sum(o.right for o in outcomes)
    share = total / len(outcomes) if outcomes else 0.0
    fig.rows.append(
        [
            "all",
            str(len(outcomes)),
            str(total),
            pct(share),
            "-",
            f"{median([o.seconds for o in outcomes]):.1f}",
        ]
    )
    fig.checks.append(
        Check(
            f"at least {pct(TARGET)} of {len(outcomes)} cases classified right",
            pct(share),
            share >= TARGET,
        )
    )
    for outcome in outcomes:
        if not outcome.right:
            fig.notes.append(
                f"wrong: {outcome.case.name} (expected {outcome.case.expected_kind}, got "
                f"{outcome.kind}"
                + (
                    f"; hint lacks {', '.join(outcome.missing_hints)}"
                    if outcome.missing_hints
                    else ""
                )
                + ")"
            )
    fig.notes.append(
        "The same cases are a test of `make test` (tests/test_classify_fixtures.py); each case's "
        "fixture.toml links the report it is modelled on. They were written alongside the rules, "
        "so the "
        "share here is an upper bound; a separate set of reports, kept from the rules' authors, "
        "measures how they generalise."
    )
    fig.seconds = time.monotonic() - started
    return fig
