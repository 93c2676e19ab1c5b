"""What the offline engine tells the journal about a search: the ``notes`` of its Proposal.

Built from the search's records (``search.Search``, ``search.Result``) and the run's
localisation; nothing here decides anything. The journal keeps these notes; the console
and the reports read ``plausible_note`` and ``chosen``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from repairloop.propose.builtin.search import Result, Search
from repairloop.types import Localisation

EXHAUSTED_HINT = (
    "the bug may need more than one or two small edits; try a model (--model) or a larger --timeout"
)

__all__ = ["MAX_TRIED_IN_NOTES", "exhausted_message", "localisation_notes", "result_notes"]

PLAUSIBLE_NOTE = (
    "A patch that passes the tests is plausible, not proven correct: the tests are the only "
    "oracle, so review it (and its alternatives) before relying on it."
)
PARTIAL_NOTE = (
    "A partial fix: some failing tests pass with it and none that passed breaks, but "
    "others still fail."
)
MAX_TRIED_IN_NOTES = 300  # the journal keeps the first ones; counts cover them all


def localisation_notes(loc: Localisation, search: Optional[Search]) -> Dict[str, Any]:
    """How the engine localised (method, tool, top 10 lines, why it was weak) and, once it
    searched, the candidates' counts by verdict and the first MAX_TRIED_IN_NOTES tried."""
    notes: Dict[str, Any] = {"localisation_method": loc.method}
    if loc.tool:  # coverage.py, or the plugin's sys.monitoring/settrace tracer
        notes["localisation_tool"] = loc.tool
    notes["localisation"] = loc.top(10)
    if loc.note:
        notes["localisation_note"] = loc.note
    if search is not None:
        notes["counts"] = search.counts()
        notes["tried"] = [r.to_json() for r in search.results[:MAX_TRIED_IN_NOTES]]
    return notes


def result_notes(chosen: Optional[Result], others: List[Result]) -> Dict[str, Any]:
    """The answer's notes: what a plausible (or partial) patch is worth, the other plausible
    patches' diffs, and the chosen edit with its size, the tests it fixes and its verdict."""
    partial = chosen is not None and not chosen.verdict.complete
    notes: Dict[str, Any] = {
        "plausible_note": PARTIAL_NOTE if partial else PLAUSIBLE_NOTE,
        "alternatives": [r.diff for r in others],
    }
    if chosen is not None:
        notes["chosen"] = {
            **chosen.candidate.to_json(),
            "edit_size": list(chosen.size),
            "fixes": chosen.verdict.fixed,
            "verdict": chosen.verdict.reason,
            "unshared": chosen.unshared,
            "unrelated": chosen.unrelated,
        }
    return notes


def exhausted_message(
    search: Search, failing: int, returned: bool, stopped_because: str, suspect_lines: int = -1
) -> str:
    """The engine's message when it has no (further, once it ``returned`` one) patch for the
    ``failing`` tests: how many candidates it tried and why each kind failed; when it tried none,
    why (``suspect_lines``: the project lines localisation named, -1 when unknown)."""
    counts = search.counts()
    found = "found no further patch" if returned else "found no patch"
    if search.tried == 0:
        why = (
            "the failing tests point at no line of the project's code (a test command that is "
            "not pytest names no failing test or frame)"
            if suspect_lines == 0
            else "none of its edits applies to the lines the failing tests point at"
        )
        return f"the offline engine {found}: it had no candidate edit to try, as {why}"
    return (
        f"the offline engine {found}: none of the {search.tried} candidate edits it tried made "
        f"any of the {failing} failing test(s) pass without breaking a passing one "
        f"({counts.get('failing', 0)} fixed no failing test, {counts.get('timeout', 0)} timed "
        f"out, {counts.get('broke_passing', 0)} broke passing tests, "
        f"{counts.get('compile_error', 0)} did not compile; "
        f"{stopped_because or 'no candidates'})"
    )
