"""Does repairloop's world agree with the user's? (DESIGN.md: "the baseline verdict equals the
user's own command's").

Part of the loop layer, run on the baseline before anything is spent.
``fidelity_failures``: when the suite redirects the project's imports to the
workspace (an editable install), the tests that fail there are re-run without
the redirection, importing the user's own tree as the user's command does.
``ignored_files_failures`` does the same for the git-ignored files the
workspace left out (``workspace.ignored``): the failing tests are re-run in a
copy that has them. A test that passes there means the workspace is not the
world the user sees, and the run must stop with an ``environment`` failure,
not repair it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from repairloop.classify import SESSION_ID, classify_report
from repairloop.runner import is_pytest_command
from repairloop.textutil import listed
from repairloop.types import Failure, FailureKind, TestReport, TestRunner, copy_ignore
from repairloop.workspace import Workspace
from repairloop.workspace.ignored import MAX_FILE_BYTES, MAX_TOTAL_BYTES

# Ignored files that never decide a test's outcome, so none makes the baseline check run.
NOT_INPUTS = frozenset({".coverage", ".DS_Store", "Thumbs.db", ".python-version"})
NOT_INPUT_SUFFIXES = (".log", ".pyc", ".pyo", ".swp", ".swo", ".orig", ".rej", "~", ".bak")


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
        f"repairloop's copy of the project does not behave like your tree: {listed(passing)} "
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
    _add_missing(ws.user_top, top, missing)
    try:
        passing = _passing_in(suite, top / ws.root.relative_to(ws.top), baseline)
    finally:
        shutil.rmtree(world, ignore_errors=True)
    if not passing:
        return ()
    message = (
        f"repairloop's copy of the project does not behave like your tree: {listed(passing)} "
        f"fail(s) in the copy but pass when your git-ignored files are added to it "
        f"({listed(list(missing), 8)})"
    )
    hint = (
        "the tests need a git-ignored file repairloop did not bring into its copy (it brings "
        "generated version, protobuf and extension modules and modules your code imports, up "
        f"to {MAX_FILE_BYTES // 2**20} MB each): commit the file, or make the tests build it; "
        "repairloop stops rather than repair a different world"
    )
    return (Failure(SESSION_ID, FailureKind.ENVIRONMENT, False, message, hint=hint),)


def _add_missing(user_top: Path, top: Path, missing: Sequence[str]) -> None:
    """Copy ``missing`` (files, and ``/``-ended directories) from the user's tree to the copy at
    ``top``: no symbolic links, at most ``2 * MAX_TOTAL_BYTES`` in all."""
    total = 0
    for rel in missing:
        src = user_top / rel.rstrip("/")
        files = [src] if not rel.endswith("/") else [p for p in src.rglob("*") if p.is_file()]
        for path in files:
            try:
                size = path.lstat().st_size
            except OSError:
                continue
            if path.is_symlink() or not path.is_file() or total + size > 2 * MAX_TOTAL_BYTES:
                continue
            total += size
            target = top / path.relative_to(user_top)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def _missing_ignored(ws: Workspace) -> Tuple[str, ...]:
    """The ignored files of the project's root that ``ws`` lacks: those over its size limits,
    those left out of at most ``MAX_FILE_BYTES``, and the ignored directories left out
    (``/``-ended); repository-relative paths."""
    if ws.user_top is None:
        return ()
    prefix = ws.root.relative_to(ws.top).as_posix()
    inside = "" if prefix == "." else prefix + "/"
    out = [rel for rel in ws.ignored.too_large if rel.startswith(inside)]
    for rel in ws.ignored.left_out:
        name = rel.rsplit("/", 1)[-1]
        if name in NOT_INPUTS or name.endswith(NOT_INPUT_SUFFIXES):
            continue  # what tools leave behind, never what a test reads (a word list)
        if rel.startswith(inside):
            try:
                if (ws.user_top / rel).lstat().st_size <= MAX_FILE_BYTES:
                    out.append(rel)
            except OSError:
                continue
    out += [rel + "/" for rel in ws.ignored.left_out_dirs if rel.startswith(inside)]
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
