"""Before the first model call: do the baseline's failures reproduce, and in the user's world?

Part of the loop layer. ``confirm_failures`` re-runs the failing tests in the
suite's order (the whole suite, as the user's command runs it) and each one
alone, ``confirm_runs`` times (DESIGN.md, "The loop"): a test whose outcome
changes between identical runs is flaky; one that passes alone but fails in
the suite's order is flaky (order-dependent), and the earlier test that makes
it fail is looked for by bisection so the report can show a short command.
Flaky tests are reported and left alone; nothing is spent on them.

``fidelity_failures`` checks that repairloop's world agrees with the user's
(DESIGN.md: "the baseline verdict equals the user's own command's"): when the
suite redirects the project's imports to the workspace (an editable install),
the tests that fail there are re-run without the redirection, importing the
user's own tree as the user's command does; a test that passes there means the
workspace is not the world the user sees, and the run must stop, not repair it.
``ignored_files_failures`` does the same for the git-ignored files the workspace
left out (``workspace.ignored``): the failing tests are re-run in a copy that
has them.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from repairloop.classify import SESSION_ID, classify_report
from repairloop.runner import is_pytest_command
from repairloop.runner.command import with_arguments
from repairloop.types import Failure, FailureKind, TestReport, TestRunner, copy_ignore
from repairloop.workspace import Workspace
from repairloop.workspace.ignored import MAX_FILE_BYTES, MAX_TOTAL_BYTES

ALONE_LIMIT = 20  # failing tests re-run one by one; the rest are re-run together
BISECT_LIMIT = 3  # order-dependent tests whose polluter is looked for
BISECT_STEPS = 8  # test runs spent looking for one polluter (halves 2**7 candidates)


@dataclass(frozen=True)
class FlakyTest:
    """A failing test left alone: why (``reason``) and a command that shows it."""

    test_id: str
    reason: str
    command: str


@dataclass(frozen=True)
class Confirmation:
    """What the re-runs showed.

    ``flaky`` are baseline failures whose outcome changed or that pass alone;
    ``confirmed`` failed in every run. ``unstable`` are tests that passed at
    the baseline and failed in a re-run of the same suite (flaky too, though
    nothing was going to repair them). ``needs_earlier`` are confirmed tests
    that fail alone with another exception than in the suite's order: they
    depend on tests before them, which a targeted run must then include.
    ``runs`` counts test-command runs.
    """

    flaky: Tuple[FlakyTest, ...] = ()
    confirmed: Tuple[str, ...] = ()
    unstable: Tuple[str, ...] = ()
    runs: int = 0
    notes: Tuple[str, ...] = ()
    needs_earlier: Tuple[str, ...] = ()


def show(suite: TestRunner, test_ids: Sequence[str] = ()) -> str:
    """The suite's command (with ``test_ids``) as a user would type it."""
    command = with_arguments(suite.command, tuple(test_ids)) if test_ids else suite.command
    return command if isinstance(command, str) else shlex.join(command)


@dataclass
class _Tally:
    in_order: List[bool] = field(default_factory=lambda: [True])  # failed? The baseline failed it.
    alone: List[bool] = field(default_factory=list)
    alone_errors: List[Optional[str]] = field(default_factory=list)  # exception types, alone


def confirm_failures(
    suite: TestRunner, root: Path, failing: Sequence[str], baseline: TestReport, confirm_runs: int
) -> Confirmation:
    """Re-run ``failing`` (test ids of ``baseline``) in order and alone, ``confirm_runs`` times.

    ``baseline.results`` gives the suite's order. Test ids are passed only to
    a pytest command; any other command is re-run whole, which shows changing
    outcomes but not order dependence. A re-run that times out or gives no
    per-test results ends the confirmation (nothing can be told from it).
    """
    ids = [t for t in failing if t != SESSION_ID]
    if confirm_runs <= 0 or not ids:
        return Confirmation(confirmed=tuple(failing))
    pytest_like = is_pytest_command(suite.command)
    tally: Dict[str, _Tally] = {t: _Tally() for t in ids}
    unstable: List[str] = []
    runs, notes = 0, []
    for _ in range(confirm_runs):
        full = suite.run(root)
        runs += 1
        if full.timed_out or full.source == "exit_code":
            notes.append(
                "a re-run of the suite timed out or gave no per-test results: flaky tests not "
                "checked"
            )
            break
        failed_now = set(full.failing_ids)
        for t in ids:
            tally[t].in_order.append(t in failed_now)
        unstable += [
            t
            for t in full.failing_ids
            if t not in tally and t in baseline.passed_ids and t not in unstable
        ]
        if pytest_like:
            runs += _run_alone(suite, root, ids, tally)
    flaky, confirmed = [], []
    order = [r.test_id for r in baseline.results]
    bisected = 0
    for t in ids:
        record = _judge(suite, t, tally[t])
        if (
            record is not None
            and record.reason.startswith("order-dependent")
            and bisected < BISECT_LIMIT
        ):
            bisected += 1
            polluter, spent = _find_polluter(suite, root, t, order)
            runs += spent
            if polluter:
                record = FlakyTest(
                    t, f"{record.reason}; it fails after {polluter}", show(suite, [polluter, t])
                )
        if record is None:
            confirmed.append(t)
        else:
            flaky.append(record)
    errors = {r.test_id: r.exc_type for r in baseline.failing}
    earlier = tuple(t for t in confirmed if any(e != errors.get(t) for e in tally[t].alone_errors))
    confirmed += [t for t in failing if t == SESSION_ID]
    return Confirmation(
        tuple(flaky), tuple(confirmed), tuple(unstable), runs, tuple(notes), earlier
    )


def _run_alone(suite: TestRunner, root: Path, ids: Sequence[str], tally: Dict[str, _Tally]) -> int:
    """One run per test (each in its own process), the ones past ALONE_LIMIT together; returns
    runs."""
    runs = 0
    for t in ids[:ALONE_LIMIT]:
        report = suite.run(root, [t])
        runs += 1
        if not report.timed_out and report.source != "exit_code":
            tally[t].alone.append(t in report.failing_ids)
            tally[t].alone_errors += [r.exc_type for r in report.failing if r.test_id == t]
    rest = list(ids[ALONE_LIMIT:])
    if rest:
        report = suite.run(root, rest)
        runs += 1
        for t in rest:
            if not report.timed_out and report.source != "exit_code":
                tally[t].alone.append(t in report.failing_ids)
    return runs


def _judge(suite: TestRunner, test_id: str, tally: _Tally) -> Optional[FlakyTest]:
    """Flaky (with reason and command) or None for a test that failed every time."""
    in_order, alone = tally.in_order, tally.alone
    if not all(in_order):
        failed = sum(in_order)
        return FlakyTest(
            test_id,
            f"outcome changes between identical runs: the suite failed it in {failed} of "
            f"{len(in_order)} runs",
            show(suite),
        )
    if alone and not any(alone):
        return FlakyTest(
            test_id,
            f"order-dependent: it passes alone ({len(alone)} of {len(alone)} runs) and fails "
            "in the suite's order",
            show(suite),
        )
    if alone and not all(alone):
        return FlakyTest(
            test_id,
            f"outcome changes between identical runs: alone it failed in {sum(alone)} of "
            f"{len(alone)} runs",
            show(suite, [test_id]),
        )
    return None


def _find_polluter(
    suite: TestRunner, root: Path, test_id: str, order: Sequence[str]
) -> Tuple[Optional[str], int]:
    """The earlier test after which ``test_id`` fails, by bisecting the tests before it; (test or
    None, runs).

    Each step runs a half of the candidates and then ``test_id``; the half
    that still makes it fail is kept. When neither half does alone (it takes
    more than one test), or the budget of steps is spent, no single test is named.
    """
    if test_id not in order:
        return None, 0
    candidates = [t for t in order[: order.index(test_id)] if "::" in t and t != test_id]
    runs = 0
    while len(candidates) > 1 and runs < BISECT_STEPS:
        half = len(candidates) // 2
        for part in (candidates[:half], candidates[half:]):
            report = suite.run(root, [*part, test_id])
            runs += 1
            if test_id in report.failing_ids:
                candidates = part
                break
        else:
            return None, runs
    if len(candidates) == 1 and runs < BISECT_STEPS:
        report = suite.run(root, [candidates[0], test_id])
        runs += 1
        if test_id in report.failing_ids:
            return candidates[0], runs
    return None, runs


def classify_baseline(
    suite: TestRunner, root: Path, baseline: TestReport, ws: Optional[Workspace] = None
) -> Tuple[Failure, ...]:
    """The baseline's failures, classified (``classify.classify_report``), and one ``environment``
    failure when the user's world passes what the copy fails (``fidelity_failures``; with ``ws``
    also ``ignored_files_failures``): the step ``run`` and ``classify`` share."""
    if baseline.green:
        return ()
    found = classify_report(baseline, root, interpreter=suite.interpreter)
    differs = fidelity_failures(suite, root, baseline)
    if not differs and ws is not None:
        differs = ignored_files_failures(suite, ws, baseline)
    return found + differs


def _passing_in(suite: TestRunner, root: Path, baseline: TestReport) -> List[str]:
    """The baseline's failing tests (or, with no per-test results, the whole suite) that pass when
    ``suite`` runs them in ``root``; [] when that run timed out."""
    ids = [t for t in baseline.failing_ids if t != SESSION_ID]
    per_test = bool(ids) and is_pytest_command(suite.command)
    again = suite.run(root, ids if per_test else ())
    if again.timed_out:
        return []
    if per_test:
        return [t for t in ids if _passed(t, again)]
    return (ids or ["the test suite"]) if again.green else []


def _listed(items: Sequence[str], limit: int = 5) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def fidelity_failures(suite: TestRunner, root: Path, baseline: TestReport) -> Tuple[Failure, ...]:
    """One ``environment`` failure when the user's world passes what repairloop's world fails, else
    ().

    Only a suite that redirects imports can differ from the user's command in
    what it imports (``TestRunner.redirected``); its failing tests (or, with no
    per-test results, the whole suite) are re-run without the redirection,
    importing the user's tree exactly as the user's own command does.
    """
    if not suite.redirected or baseline.green:
        return ()
    passing = _passing_in(suite.plain(), root, baseline)
    if not passing:
        return ()
    names = ", ".join(suite.redirected)
    message = (
        f"repairloop's copy of the project does not behave like your tree: {_listed(passing)} "
        f"fail(s) in the copy but pass when {names} is imported from your tree, as your "
        f"environment (an editable install) does"
    )
    hint = (
        "a file the copy lacks is probably git-ignored (a built extension, a generated "
        "_version.py, data files): "
        "commit it, or make the tests build it; repairloop stops rather than repair a different "
        "world"
    )
    return (Failure(SESSION_ID, FailureKind.ENVIRONMENT, False, message, hint=hint),)


def ignored_files_failures(
    suite: TestRunner, ws: Workspace, baseline: TestReport
) -> Tuple[Failure, ...]:
    """One ``environment`` failure when the baseline's failing tests pass in a copy that also
    holds the git-ignored files the workspace left out (``workspace.ignored``), else ().

    The copy (the work tree plus those files from the user's tree, each at most
    ``MAX_FILE_BYTES``) is made in the workspace's scratch directory and run by the same
    suite, before any candidate exists; the failure names the files left out.
    """
    missing = _missing_ignored(ws)
    if baseline.green or not missing or ws.user_top is None or ws.scratch is None:
        return ()
    world = ws.scratch / "with-ignored-files"
    shutil.rmtree(world, ignore_errors=True)
    top = world / ws.top.name
    shutil.copytree(ws.top, top, symlinks=True, ignore=copy_ignore)
    total = 0
    for rel in missing:
        src = ws.user_top / rel
        try:
            size = src.lstat().st_size
        except OSError:
            continue
        if src.is_symlink() or not src.is_file() or total + size > 2 * MAX_TOTAL_BYTES:
            continue
        total += size
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, top / rel)
    try:
        passing = _passing_in(suite, top / ws.root.relative_to(ws.top), baseline)
    finally:
        shutil.rmtree(world, ignore_errors=True)
    if not passing:
        return ()
    message = (
        f"repairloop's copy of the project does not behave like your tree: {_listed(passing)} "
        f"fail(s) in the copy but pass when your git-ignored files are added to it "
        f"({_listed(list(missing), 8)})"
    )
    hint = (
        "the tests need a git-ignored file repairloop did not bring into its copy (it brings "
        "generated version, protobuf and extension modules and modules your code imports, up "
        f"to {MAX_FILE_BYTES // 2**20} MB each): commit the file, or make the tests build it; "
        "repairloop stops rather than repair a different world"
    )
    return (Failure(SESSION_ID, FailureKind.ENVIRONMENT, False, message, hint=hint),)


def _missing_ignored(ws: Workspace) -> Tuple[str, ...]:
    """The ignored files of the project's root that ``ws`` lacks: those over its size limits, and
    those left out of at most ``MAX_FILE_BYTES`` (repository-relative paths)."""
    if ws.user_top is None:
        return ()
    prefix = ws.root.relative_to(ws.top).as_posix()
    inside = "" if prefix == "." else prefix + "/"
    out = [rel for rel in ws.ignored.too_large if rel.startswith(inside)]
    for rel in ws.ignored.left_out:
        if rel.startswith(inside):
            try:
                if (ws.user_top / rel).lstat().st_size <= MAX_FILE_BYTES:
                    out.append(rel)
            except OSError:
                continue
    return tuple(out)


def _passed(test_id: str, report: TestReport) -> bool:
    """``test_id`` passed in ``report``; a module's id (a collection error) when its tests all
    passed."""
    if "::" in test_id:
        return test_id in report.passed_ids
    inside = test_id + "::"
    return (
        test_id not in report.failing_ids
        and not any(t.startswith(inside) for t in report.failing_ids)
        and any(t.startswith(inside) for t in report.passed_ids)
    )


def with_flaky(failures: Sequence[Failure], found: Confirmation) -> Tuple[Failure, ...]:
    """``failures`` with each flaky test's kind set to ``flaky`` and its reason and command as the
    hint."""
    flaky = {f.test_id: f for f in found.flaky}
    out = []
    for failure in failures:
        record = flaky.get(failure.test_id)
        if record is None:
            out.append(failure)
        else:
            out.append(
                replace(
                    failure,
                    kind=FailureKind.FLAKY,
                    retryable=False,
                    hint=f"flaky, {record.reason}: {record.command}",
                )
            )
    return tuple(out)
