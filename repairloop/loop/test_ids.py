"""Test ids that move between runs, matched to the baseline's (the fidelity issue, item 3).

pytest makes up an id for a parameter value it cannot show (``expected6``: the
argument's name and the value's position). When the values come from a set
whose order is not fixed (tuples holding ``None`` or plain objects hash by
address; isodate 0.7.2's ``test_format``), the same test gets another id in
the next run even with ``PYTHONHASHSEED`` fixed, and a candidate's run would
seem to drop tests, or not to run a failing one. These rules match such ids by
what stays (``stable_key``); they are heuristics over test names.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Dict, FrozenSet, List, Sequence, Tuple

from repairloop.types import ResultSource, TestReport

_MADE_UP_ID = re.compile(r"(?<=[\[-])([A-Za-z_]+)\d+(?=[-\]])")


def stable_key(test_id: str) -> str:
    """``test_id`` with the positions of made-up parameter ids left out (``test_f[4-19-expected6]``
    is ``test_f[4-19-expected#]``): what stays when a parametrized list changes order."""
    head, bracket, params = test_id.partition("[")
    return head + _MADE_UP_ID.sub(r"\1#", bracket + params)


def unmatched(missing: Sequence[str], new: Sequence[str]) -> List[str]:
    """The ``missing`` test ids (run before, not now) that no ``new`` id (run now, not before)
    stands for: ids of one ``stable_key`` match when as many are missing as are new (the same
    parametrized tests under ids that moved); a heuristic over test names."""
    gone: Dict[str, List[str]] = {}
    for test_id in missing:
        gone.setdefault(stable_key(test_id), []).append(test_id)
    came = Counter(stable_key(test_id) for test_id in new)
    return sorted(t for key, ids in gone.items() if came[key] != len(ids) for t in ids)


def reconciled(
    report: TestReport, baseline_ids: FrozenSet[str], failing: Sequence[str]
) -> Tuple[TestReport, int]:
    """``report`` with the ids that moved since the baseline renamed to the baseline's, and how
    many were renamed (0: ``report`` itself).

    Ids of one ``stable_key`` are renamed only when as many are missing as are new
    (``unmatched``'s rule). Which new id stands for which missing one cannot be known, so
    outcomes are paired to claim no more than the counts show: new ids that passed stand first
    for missing ids that passed at the baseline (not in ``failing``), so a moved failing test
    counts as fixed only when more of its group pass than passed before, and a group with more
    failures than before counts as broken. A heuristic over test names.
    """
    if not baseline_ids or report.source is ResultSource.EXIT_CODE:
        return report, 0
    seen = {r.test_id for r in report.results}
    gone: Dict[str, List[str]] = {}
    for test_id in sorted(baseline_ids - seen):
        if "::" in test_id:
            gone.setdefault(stable_key(test_id), []).append(test_id)
    came: Dict[str, List[str]] = {}
    for test_id in sorted(seen - baseline_ids):
        came.setdefault(stable_key(test_id), []).append(test_id)
    was_failing, failed_now = set(failing), set(report.failing_ids)
    rename: Dict[str, str] = {}
    for key, missing in gone.items():
        new = came.get(key, [])
        if len(new) == len(missing):
            missing.sort(key=lambda t: t in was_failing)  # passed at the baseline first
            new.sort(key=lambda t: t in failed_now)  # passed now first
            rename.update(zip(new, missing))
    if not rename:
        return report, 0
    results = tuple(replace(r, test_id=rename.get(r.test_id, r.test_id)) for r in report.results)
    return replace(report, results=results), len(rename)


def moved_note(moved: int) -> str:
    """What the verdict's reason adds when ``moved`` test ids were matched (``reconciled``)."""
    if not moved:
        return ""
    return (
        f"; {moved} test id(s) that moved since the baseline (parameter ids made from unordered "
        "values) were matched to the baseline's by name and parameters, a heuristic"
    )
