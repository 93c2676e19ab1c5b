"""What the failing tests' exceptions say about the kind of fix.

The same one-line bug shows the same symptom: a ``None`` used as a list is an
in-place method used for its value (``xs.sort()``); a ``str`` in arithmetic is
a missing ``int()``; an ``IndexError`` is an off-by-one bound; a test that
never ends is a loop whose condition never changes. Operator families that
match the symptom of most failing tests get their prior raised by the factor
below (at most one factor per family: the largest), so they are tried earlier;
nothing is ever removed, since a symptom can mislead. Messages are CPython's.
"""

from __future__ import annotations

import re
from typing import Dict, Sequence, Tuple

from repairloop.types import TestReport

# (exception type, message pattern or "", {family: factor}), first match per test wins.
SYMPTOMS: Tuple[Tuple[str, str, Dict[str, float]], ...] = (
    ("TypeError", r"NoneType", {"wrong_function": 1.3, "literal": 1.2, "insert_update": 1.2}),
    (
        "TypeError",
        r"can't multiply sequence|unsupported operand|can only concatenate|"
        r"cannot be interpreted as an integer|has no len|not supported between",
        {"wrap_call": 1.6, "swap_operands": 1.2, "wrong_variable": 1.2},
    ),
    ("IndexError", r"", {"off_by_one": 1.2, "literal_off_by_one": 1.2, "comparison": 1.2}),
    (
        "RecursionError",
        r"",
        {"comparison": 1.2, "negate_condition": 1.2, "off_by_one": 1.2, "swap_arguments": 1.2},
    ),
    # A loop that never ends: a missing update or `break`, a wrong bound or a step that stays put.
    (
        "Timeout",
        r"",
        {
            "insert_update": 1.3,
            "insert_break": 1.3,
            "comparison": 1.2,
            "boolean_operator": 1.2,
            "off_by_one": 1.2,
        },
    ),
)


def family_boosts(report: TestReport, targets: Sequence[str]) -> Dict[str, float]:
    """``{family: factor}`` for the symptom shared by at least half of the failing ``targets``.

    ``report`` is a run in which the targets failed (their ``exc_type`` and ``message``);
    a type is matched by its last dotted part (``repairloop_pytest_plugin.Timeout``).
    """
    wanted = set(targets)
    failing = [r for r in report.results if r.test_id in wanted and r.failed]
    votes: Dict[int, int] = {}
    for result in failing:
        kind = (result.exc_type or "").rsplit(".", 1)[-1]
        for index, (name, pattern, _) in enumerate(SYMPTOMS):
            if kind == name and (not pattern or re.search(pattern, result.message or "")):
                votes[index] = votes.get(index, 0) + 1
                break
    boosts: Dict[str, float] = {}
    for index, count in sorted(votes.items()):
        if 2 * count >= len(failing):
            for family, factor in SYMPTOMS[index][2].items():
                boosts[family] = max(boosts.get(family, 1.0), factor)
    return boosts
