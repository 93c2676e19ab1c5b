"""The proof run (part of the loop layer): the reported patch, alone, on a fresh copy of the start
state.

Before a run says "fixed" (or "partially fixed"), the patch it reports, the
union of the kept candidates' edits as the guards approved them and never the
workspace's diff, is applied to a fresh copy of the start state
(``workspace.fresh.start_copy``), checked by the guards again as a whole, and
the full suite must hold up ``final_runs`` times there: every test the run
claims fixed reported ``passed``, nothing that passed at the baseline failing,
and every run trustworthy (``validation.untrusted_run``). Files the tests
created in the workspace, or anything else that happened there, play no part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple

from repairloop.errors import PatchError
from repairloop.localise.spectra import read_spectra
from repairloop.loop.localising import remove_line_data
from repairloop.loop.test_ids import reconciled
from repairloop.loop.validation import ValidationSetup, untrusted_run
from repairloop.patch import AppliedPatch, FileChange, check_guards
from repairloop.textutil import listed
from repairloop.types import (
    Flag,
    LineKey,
    Proof,
    ResultSource,
    TestFiles,
    TestReport,
    judge_run,
)
from repairloop.workspace.fingerprint import Fingerprint, fingerprint
from repairloop.workspace.fresh import start_copy

# ``behaviour.checker``'s check: (the run's lines, its passing tests) -> (flags, other tests)
BehaviourCheck = Callable[
    [Mapping[LineKey, FrozenSet[str]], Sequence[str]], Tuple[Tuple[Flag, ...], Tuple[str, ...]]
]


def union(changes: Iterable[FileChange]) -> AppliedPatch:
    """The kept candidates' edits as one patch: each file from its first old text to its last new
    text.

    A file a later candidate put back as it was drops out.
    """
    merged: Dict[str, FileChange] = {}
    for change in changes:
        first = merged.get(change.path)
        old = first.old_text if first is not None else change.old_text
        merged[change.path] = FileChange(
            change.path, old, change.new_text, change.match, change.score
        )
    kept = tuple(c for c in merged.values() if c.old_text != c.new_text)
    return AppliedPatch(kept, "union")


def prove(
    setup: ValidationSetup,
    patch: AppliedPatch,
    claimed_fixed: Sequence[str],
    baseline_failing: Sequence[str],
    behaviour: Optional[BehaviourCheck] = None,
) -> Proof:
    """Apply ``patch`` to a fresh copy of the start state and run the full suite ``final_runs``
    times.

    ``claimed_fixed`` must be reported passed in every run; a failure outside
    ``baseline_failing`` means the patch broke something. With ``behaviour``
    (``behaviour.checker``) one more run, after those held and deciding nothing,
    records the lines each test runs, and the check's flags go into the Proof.
    Never raises for a failed proof (the Proof says why); raises WorkspaceError
    when the copy cannot be made.
    """
    required = setup.final_runs
    seconds = 0.0
    with start_copy(setup.workspace) as root:
        try:
            check_guards(patch, root, setup.policy)
        except PatchError as err:
            return Proof(
                False, 0, required, False, f"the patch as a whole breaks a guard: {err.message}"
            )
        for change in patch.changes:
            target = root / change.path
            if change.new_text is None:
                target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="") as fh:
                fh.write(change.new_text)
        oracle = fingerprint(root, setup.guarded)
        claim = (claimed_fixed, baseline_failing)
        for number in range(1, required + 1):
            report, why = _run_once(setup, root, oracle, claim, False)
            seconds += report.seconds
            if why:
                return Proof(
                    False,
                    number - 1,
                    required,
                    True,
                    f"full-suite run {number} of {required}: {why}",
                    seconds,
                )
        flags: Tuple[str, ...] = ()
        others: Tuple[str, ...] = ()
        if behaviour is not None:
            # One more run, recording lines, for the behaviour check alone: the verdict above
            # comes from runs as the user's own command makes them. When this one does not hold
            # (recording lines clashes with pytest-cov in addopts), the check is skipped.
            traced, why = _run_once(setup, root, oracle, claim, True)
            seconds += traced.seconds
            flags, others = _behaviour(behaviour, traced, root, setup.test_files, not why)
    return Proof(True, required, required, seconds=seconds, flags=flags, other_paths=others)


def _run_once(
    setup: ValidationSetup,
    root: Path,
    oracle: Fingerprint,
    claim: Tuple[Sequence[str], Sequence[str]],
    traced: bool,
) -> Tuple[TestReport, str]:
    """One full-suite run of the proof (recording per-test lines when ``traced``): its report
    and why it does not confirm ``claim`` (the tests claimed fixed, the baseline's failing
    tests), "" when it does."""
    claimed_fixed, baseline_failing = claim
    run = setup.suite.run(root, past_deadline=True, protect=tuple(oracle), coverage=traced)
    report, _ = reconciled(run, setup.baseline_ids, baseline_failing)
    why = untrusted_run(setup, report, root, oracle, full=True)
    return report, why or _shortfall(report, claimed_fixed, baseline_failing)


def _behaviour(
    behaviour: BehaviourCheck, report: TestReport, root: Path, test_files: TestFiles, held: bool
) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The behaviour check on ``report``'s per-test line data when the run ``held`` (the data is
    removed either way): (its flags as text, the other tests that changed paths); ((), ()) when
    the run recorded none. The data is written by the test process, which runs the patch's code:
    a hint it could forge, like the localisation's, never part of the verdict."""
    if not report.coverage_file:
        return (), ()
    try:
        if not held:
            return (), ()
        after, _ = read_spectra(report.coverage_file, root, test_files)
    except Exception:  # unreadable line data: nothing to compare, never a failed proof
        return (), ()
    finally:
        remove_line_data(report.coverage_file)
    flags, others = behaviour(after, report.passed_ids)
    return tuple(str(flag) for flag in flags), others


def _shortfall(
    report: TestReport, claimed_fixed: Sequence[str], baseline_failing: Sequence[str]
) -> str:
    """Why this run does not confirm the claim: a claimed fix not passed, or a new failure; "" when
    it does.

    A suite known only by its exit code is one unit: it confirms the claim when it is green.
    """
    if report.source is ResultSource.EXIT_CODE:
        return "" if report.green else f"the test command failed (exit {report.exit_code})"
    verdict = judge_run(report, baseline_failing)
    not_passed = [t for t in claimed_fixed if t not in verdict.fixed]
    if verdict.error or not_passed:
        return verdict.error or f"{listed(not_passed, 3)} did not pass"
    if verdict.broke:
        return f"{listed(verdict.broke, 3)} failed, which passed at the baseline"
    return ""
