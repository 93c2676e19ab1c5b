"""Figure 6's second question: of the offline engine's plausible patches, how many are correct.

Every case of fixtures/bench ships a reference fix and hidden tests; ``repairloop
bench`` judges each plausible patch by them after the loop stops (README,
"Benchmarks of your own"). This adds the shares to figure 6 from the rows it
measured, so no case runs twice.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from figure import Check, Figure


def correctness(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Counts over bench rows (``bench --json``'s): plausible, judged, correct, same as the
    reference."""
    plausible = [r for r in rows if r.get("plausible")]
    judged = [r for r in plausible if r.get("correct") is not None]
    return {
        "cases": len(rows),
        "plausible": len(plausible),
        "judged": len(judged),
        "correct": sum(bool(r["correct"]) for r in judged),
        "same_as_reference": sum(r.get("matches_reference") is True for r in judged),
        "wrong": sorted(r["name"] for r in judged if not r["correct"]),
    }


def add_to(fig: Figure, rows: Sequence[Dict[str, Any]]) -> None:
    """The plausible and correct shares as figure 6's notes and a check (every plausible patch
    correct)."""
    c = correctness(rows)
    if not c["cases"]:
        return
    share = f"{c['correct'] / c['judged']:.0%}" if c["judged"] else "none judged"
    fig.notes.append(
        f"Plausible patches: {c['plausible']} of {c['cases']} cases "
        f"({c['plausible'] / c['cases']:.0%}); "
        f"correct (passing the case's hidden tests after the run): {c['correct']} of the "
        f"{c['judged']} "
        f"judged ({share}); the same change as the reference fix after normalising whitespace: "
        f"{c['same_as_reference']}."
    )
    wrong: List[str] = c["wrong"]
    if wrong:
        details = {r["name"]: r.get("judge_detail", "") for r in rows}
        fig.notes.append(
            "Plausible but not correct (overfitting): "
            + "; ".join(f"{n} ({details[n]})" for n in wrong)
            + "."
        )
    fig.checks.append(
        Check(
            "every plausible patch is correct (passes the hidden tests)",
            f"{c['correct']} of {c['judged']} ({share})",
            not wrong if c["judged"] else None,
        )
    )
