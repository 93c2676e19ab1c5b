"""Find where a hunk's old lines are in a file: strict first, then fuzzy, else say why.

Tiers (TECH-NOTES 3.3, STYLE.md habit 10): exact; the same after ``rstrip``,
after collapsing whitespace, after removing it; then a rapidfuzz window of the
same length ranked by (lines equal ignoring whitespace, mean ``fuzz.ratio``,
nearness to the header's line). The naive "best ratio of the joined window"
picked the wrong function in repetitive code, hence that ranking. Lines to be
removed must each score >= 0.90 (they really get deleted) and at least half of
the window's lines must match ignoring whitespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from rapidfuzz import fuzz

from repairloop.errors import PatchError
from repairloop.patch.changes import ADDED, REMOVED, Hunk

_WS = re.compile(r"\s+")
KEYS: Tuple[Callable[[str], str], ...] = (
    lambda s: s,
    str.rstrip,
    lambda s: _WS.sub(" ", s.strip()),
    lambda s: _WS.sub("", s),
)
REMOVED_MIN = 0.90  # TECH-NOTES 3.3: a line we delete must really be there
_HINT = (
    "copy the context and '-' lines exactly from the current file (or quote them exactly "
    "in SEARCH); do not invent or reformat lines"
)


@dataclass(frozen=True)
class Location:
    """Lines ``[start, end)`` of the file hold the hunk's old lines; score 0..1."""

    start: int
    end: int
    score: float
    match: str  # "exact" | "whitespace" | "fuzzy"


def locate(lines: Sequence[str], hunk: Hunk, hint: Optional[int], threshold: float) -> Location:
    """Where ``hunk`` applies in ``lines`` (file lines without newlines).

    ``hint`` is the 0-based line the diff header claims, shifted by earlier hunks;
    None means no header line (several exact matches are then an error).
    ``threshold`` is the least mean similarity (0..1) of a fuzzy window.
    Raises PatchError naming the hunk and the closest text found in the file.
    """
    before = hunk.before
    if not before:
        if hint is None:
            raise PatchError(
                f"{hunk.label} has no context or removed lines and no line number: "
                "nowhere to insert it",
                hint="include a few unchanged lines around the addition",
            )
        return Location(min(hint, len(lines)), min(hint, len(lines)), 1.0, "exact")
    for tier, key in enumerate(KEYS):
        hits = _hits([key(x) for x in lines], [key(x) for x in before])
        if not hits:
            continue
        if hint is None and len(hits) > 1:
            raise _ambiguous(hunk, hits)
        start = hits[0] if hint is None else min(hits, key=lambda i: (abs(i - hint), i))
        if tier == 0:
            return Location(start, start + len(before), 1.0, "exact")
        window = lines[start : start + len(before)]
        return Location(start, start + len(before), _mean_ratio(before, window), "whitespace")
    found = _fuzzy(lines, hunk, hint, threshold)
    if found is None:
        raise PatchError(_not_found(lines, hunk, threshold), hint=_HINT)
    return found


def _hits(keyed: List[str], target: List[str]) -> List[int]:
    n, first = len(target), target[0]
    return [
        i for i in range(len(keyed) - n + 1) if keyed[i] == first and keyed[i : i + n] == target
    ]


def _ambiguous(hunk: Hunk, hits: List[int]) -> PatchError:
    where = ", ".join(str(i + 1) for i in hits[:5])
    return PatchError(
        f"{hunk.label} matches {len(hits)} places in the file (lines {where}); it is ambiguous",
        hint="include more surrounding lines so that the text to replace is unique",
    )


def _mean_ratio(a: Sequence[str], b: Sequence[str]) -> float:
    return sum(fuzz.ratio(x, y) for x, y in zip(a, b)) / (100.0 * max(len(a), 1))


def _window_ratios(
    target: List[str], keyed: List[str], i: int, kinds: List[str]
) -> Optional[List[float]]:
    """Per-line similarity (0..1) of the window at ``i``; None when a removed line is missing."""
    ratios = []
    for j, want in enumerate(target):
        r = fuzz.ratio(want, keyed[i + j]) / 100.0
        if kinds[j] == REMOVED and r < REMOVED_MIN:
            return None
        ratios.append(r)
    return ratios


def _fuzzy(
    lines: Sequence[str], hunk: Hunk, hint: Optional[int], threshold: float
) -> Optional[Location]:
    squash = KEYS[3]
    target, keyed = [squash(x) for x in hunk.before], [squash(x) for x in lines]
    kinds = [tag for tag, _ in hunk.lines if tag != ADDED]
    n = len(target)
    best: Optional[Tuple[int, float, int]] = None
    tied: List[int] = []  # window starts sharing the best rank
    for i in range(len(keyed) - n + 1):
        ratios = _window_ratios(target, keyed, i, kinds)
        if ratios is None:
            continue
        exact, mean = sum(r == 1.0 for r in ratios), sum(ratios) / n
        if mean < threshold or exact * 2 < n:
            continue
        rank = (exact, round(mean, 6), 0 if hint is None else -abs(i - hint))
        if best is None or rank > best:
            best, tied = rank, [i]
        elif rank == best:
            tied.append(i)
    if best is None:
        return None
    if hint is None and len(tied) > 1:
        raise _ambiguous(hunk, tied)
    return Location(tied[0], tied[0] + n, best[1], "fuzzy")


def _not_found(lines: Sequence[str], hunk: Hunk, threshold: float) -> str:
    before = hunk.before
    shown = "\n".join(f"    {x}" for x in before[:3])
    msg = f"{hunk.label} does not match the file; it expects:\n{shown}"
    if not lines:
        return msg + "\nbut the file is empty"
    n = min(len(before), len(lines))
    squash = KEYS[3]
    target, keyed = [squash(x) for x in before[:n]], [squash(x) for x in lines]
    scored = [(_mean_ratio(target, keyed[i : i + n]), -i) for i in range(len(lines) - n + 1)]
    score, neg_start = max(scored)
    start = -neg_start
    window = "\n".join(
        f"    {start + k + 1:>4} | {x}" for k, x in enumerate(lines[start : start + min(n, 3)])
    )
    why = _why(target, keyed, start, hunk, score, threshold)
    return (
        f"{msg}\nclosest text in the file is at line {start + 1} (similarity {score:.2f}, "
        f"{why}):\n{window}"
    )


def _why(
    target: List[str], keyed: List[str], start: int, hunk: Hunk, score: float, threshold: float
) -> str:
    if score < threshold:
        return f"below the {threshold:.2f} needed"
    kinds = [tag for tag, _ in hunk.lines if tag != ADDED]
    for j, want in enumerate(target):
        if kinds[j] == REMOVED and fuzz.ratio(want, keyed[start + j]) < REMOVED_MIN * 100:
            return f"but its line {start + j + 1} to be removed differs"
    return "but fewer than half of its lines are identical"
