"""Partial fixes that do not reach the fault (part of the loop layer; issue 28).

A partial fix makes some failing tests pass and breaks none. When several failing tests share a
faulty function, a candidate can also make one of them pass by changing a *second* function that
only that test runs, so that its wrong input is absorbed there (a slice shifted by one): the
tests pass, the shared fault stays, and the second function is now wrong for every other input.
Seen with the offline engine on a real project; reported as "partially fixed, plausible,
proven, no flags".

The rule, on the fault localisation of the code as it was before the candidate (per-test line
data; nothing is decided without it): a partial candidate is **not kept** when

* some test it leaves failing runs none of the lines it edits (the edits cannot be the fix of
  that test's fault), and
* every failing test runs one function (``shared_function``) that is more suspicious than every
  line the candidate edits, and none of those lines is in it.

Such a candidate is reverted and journalled with the reason; the next proposal is asked for
with that reason as the last attempt's. A partial fix that is kept names, in the run's
evidence, the most suspicious function the tests it leaves failing all share.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set

from repairloop.patch import AppliedPatch
from repairloop.patch.changes import edited_old_lines
from repairloop.textutil import listed
from repairloop.types import LineKey, Localisation, SuspectFunction, TestFiles


def shared_function(
    localisation: Optional[Localisation], tests: Sequence[str]
) -> Optional[SuspectFunction]:
    """The most suspicious function (not a class body or module-level code) every test of
    ``tests`` ran a suspicious line of; None without per-test line data, tests, or such a
    function."""
    wanted = set(tests)
    if localisation is None or localisation.degraded or not wanted:
        return None
    for function in localisation.functions:
        if function.kind == "function" and wanted <= function.tests:
            return function
    return None


def _edited(applied: AppliedPatch, test_files: TestFiles) -> List[LineKey]:
    """(path, old line) of every line the candidate edits in the project's non-test files."""
    return [
        (change.path, line)
        for change in applied.changes
        if not test_files.is_test(change.path)
        for line in sorted(edited_old_lines(change))
    ]


def _score(localisation: Localisation, key: LineKey) -> float:
    return max((s.score for s in localisation.suspects if (s.path, s.line) == key), default=0.0)


_PLURAL = "still fail and never run"


def misses_shared_fault(
    localisation: Optional[Localisation],
    applied: AppliedPatch,
    failing: Sequence[str],
    still_failing: Sequence[str],
    test_files: TestFiles = TestFiles(),
) -> Optional[str]:
    """Why a partial candidate is not kept (module docstring), or None when it may be.

    ``localisation`` is the code's before ``applied``; ``failing`` are the tests failing before
    it, ``still_failing`` those of them still failing with it. None when nothing still fails,
    without per-test line data, or when the rule does not hold.
    """
    still = [t for t in still_failing if t in set(failing)]
    if localisation is None or localisation.degraded or not still:
        return None
    edited = _edited(applied, test_files)
    if not edited:
        return None
    ran: Set[str] = set()
    for key in edited:
        ran |= localisation.ran_by.get(key, frozenset())
    left = [t for t in still if t not in ran]
    shared = shared_function(localisation, failing)
    if not left or shared is None:
        return None
    inside = any(p == shared.path and shared.start <= n <= shared.end for p, n in edited)
    highest = max(_score(localisation, key) for key in edited)
    if inside or shared.score <= highest:
        return None
    return (
        f"a partial fix that does not reach the fault the failing tests share: "
        f"{listed(left, 3)} {'still fails and never runs' if len(left) == 1 else _PLURAL}"
        f" the lines it edits ({_where(edited)}), while all {len(set(failing))} failing tests run "
        f"{shared.path}::{shared.name} (suspiciousness {shared.score:.2f}, the edited lines' "
        f"{highest:.2f}); not kept: fix the shared function"
    )


def _where(edited: Sequence[LineKey]) -> str:
    paths: Dict[str, List[int]] = {}
    for path, line in edited:
        paths.setdefault(path, []).append(line)
    return "; ".join(f"{path}:{_ranges(lines)}" for path, lines in sorted(paths.items()))


def _ranges(lines: Sequence[int]) -> str:
    out: List[str] = []
    for line in sorted(set(lines)):
        if out and out[-1].split("-")[-1] == str(line - 1):
            out[-1] = out[-1].split("-")[0] + f"-{line}"
        else:
            out.append(str(line))
    return ",".join(out)


def shared_by_left(localisation: Optional[Localisation], left: Sequence[str]) -> str:
    """``path::function`` the tests a kept partial fix leaves failing all share (most suspicious
    first), "" when they share none or nothing is known."""
    found = shared_function(localisation, left)
    return f"{found.path}::{found.name}" if found else ""
