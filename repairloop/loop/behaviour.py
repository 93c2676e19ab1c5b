"""The behaviour check on a reported patch (part of the loop layer; issue 28, item 3).

The idea is PATCH-SIM's (Xiong et al., "Identifying Patch Correctness in Test-Based Program
Repair", ICSE 2018): a right fix changes what the failing tests do and leaves what the passing
tests do alone. Here, with the line data the runs already record:

* *before*: every test's lines at the start state, from the run's first fault localisation
  (``Localisation.spectra``; nothing is run for it);
* *after*: every test's lines in one more full-suite run once the proof held (``proof.prove``:
  on its fresh copy of the start state with only the patch, deciding nothing);
* compared, for each test that passed at the baseline and passes with the patch, and that never
  ran the suspicious code at the start (the function all failing tests share, else each failing
  test's most suspicious function): its lines in the files the patch changes, over the lines the
  patch leaves as they were (an edited line has no counterpart to compare). A test whose set of
  lines differs takes another path through the changed code: the patch changes behaviour no
  failing test asked to change.

Such a patch is flagged ``changes_passing_behaviour`` with the tests named, never refused: a fix
of shared code can change other paths on purpose, and only a reader can tell. What it cannot
see: a wrong patch that leaves every passing test's lines alone (a condition on the failing
test's inputs that is false for every other test, a hard-coded answer) changes no path; a test
whose path depends on time or randomness changes path by itself (such a test is named, a false
flag). Line sets are compared, not the order or count of executions (PATCH-SIM compares
paths). A run resumed after a candidate was kept has no line data for the start state: its
patch is not checked.
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from repairloop.loop.partials import shared_function
from repairloop.patch import AppliedPatch
from repairloop.patch.changes import unchanged_line_map
from repairloop.textutil import listed
from repairloop.types import Flag, FlagKind, LineKey, Localisation, TestFiles

Span = Tuple[str, int, int]  # (path, first line, last line)
Spectra = Mapping[LineKey, FrozenSet[str]]
MAX_NAMED = 5


def suspicious_spans(localisation: Localisation, failing: Sequence[str]) -> List[Span]:
    """The suspicious code: the function all ``failing`` tests share
    (``partials.shared_function``), else each failing test's most suspicious function."""
    shared = shared_function(localisation, failing)
    if shared is not None:
        return [(shared.path, shared.start, shared.end)]
    return [
        (f.path, f.start, f.end) for test in failing for f in localisation.top_functions(test, 1)
    ]


def _touching(spectra: Spectra, spans: Sequence[Span]) -> Set[str]:
    """The tests that ran a line inside ``spans``."""
    found: Set[str] = set()
    for (path, line), tests in spectra.items():
        if any(path == p and start <= line <= end for p, start, end in spans):
            found |= tests
    return found


def _by_test(spectra: Spectra, lines: Mapping[str, Mapping[int, int]]) -> Dict[str, Set[LineKey]]:
    """Per test, its lines of ``lines``' files that ``lines`` maps, mapped (code run outside any
    test, at import, is left out: it is no test's path)."""
    found: Dict[str, Set[LineKey]] = {}
    for (path, line), tests in spectra.items():
        mapped = lines.get(path, {}).get(line)
        if mapped is None:
            continue
        for test in tests:
            if not test.startswith("<"):
                found.setdefault(test, set()).add((path, mapped))
    return found


def changed_paths(
    start: Localisation,
    after: Spectra,
    patch: AppliedPatch,
    passing: Sequence[str],
    test_files: TestFiles = TestFiles(),
) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The tests of ``passing`` (passed at the baseline and with the patch) whose lines in the
    patch's changed files differ between ``start.spectra`` and ``after`` over the lines the patch
    leaves unchanged (module docstring): (those that never ran the suspicious code at ``start``,
    those that did), each sorted. ((), ()) without line data on either side."""
    if not start.spectra or not after or start.degraded:
        return (), ()
    changes = [
        c for c in patch.changes if c.path.endswith(".py") and not test_files.is_test(c.path)
    ]
    old_to_new = {c.path: unchanged_line_map(c) for c in changes}
    kept_new = {path: {n: n for n in mapping.values()} for path, mapping in old_to_new.items()}
    before = _by_test(start.spectra, old_to_new)
    later = _by_test(after, kept_new)
    moved = {t for t in passing if before.get(t, set()) != later.get(t, set())}
    touching = _touching(start.spectra, suspicious_spans(start, start.failing))
    return tuple(sorted(moved - touching)), tuple(sorted(moved & touching))


def behaviour_flag(tests: Sequence[str], spans: Sequence[Span]) -> Flag:
    """The ``changes_passing_behaviour`` flag naming ``tests`` (at most ``MAX_NAMED``)."""
    named = listed(tests, MAX_NAMED)
    where = ", ".join(f"{p}:{a}-{b}" for p, a, b in spans) or "none found"
    return Flag(
        FlagKind.CHANGES_PASSING_BEHAVIOUR,
        f"{len(tests)} passing test(s) that never run the suspicious code ({where}) take other "
        f"paths through the changed files with the patch: {named}; it changes behaviour no "
        "failing test asked to change: read it",
    )


def checker(
    start: Optional[Localisation],
    patch: AppliedPatch,
    test_files: TestFiles,
) -> Optional[Callable[[Spectra, Sequence[str]], Tuple[Tuple[Flag, ...], Tuple[str, ...]]]]:
    """The check ``proof.prove`` runs on its extra run's line data and passing tests, or None
    when the start state has no per-test line data (nothing to compare with). The check returns
    (the flag when passing tests that never ran the suspicious code changed paths, the passing
    tests that ran it and changed paths: recorded, not flagged, as a fix of the suspicious code
    may change them on purpose)."""
    if start is None or start.degraded or not start.spectra:
        return None

    def check(after: Spectra, passing: Sequence[str]) -> Tuple[Tuple[Flag, ...], Tuple[str, ...]]:
        both = [t for t in passing if t in set(start.passing)]
        outside, inside = changed_paths(start, after, patch, both, test_files)
        if not outside:
            return (), inside
        return (behaviour_flag(outside, suspicious_spans(start, start.failing)),), inside

    return check
