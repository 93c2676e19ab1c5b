"""The orchestrator: a bounded generator of events, and ``repair()`` that drains it.

``iterate()`` follows DESIGN.md's loop: baseline run, classification, flaky
confirmation, then iterations of context -> proposer -> guards -> apply ->
targeted tests -> full suite -> keep or revert -> stop policy. This module
holds the run's frame (lock, journal, workspace, resume); the steps inside it
are ``session.Session``, one iteration is ``attempt.run_attempt`` (its
candidate judged by ``validation.validate``), every ending is ``stop.check``'s,
and a ``types.TestRunner`` runs the tests: ``suite.TestSuite`` unless the caller
brings a ``runner`` factory (``suite.RunnerFactory``). Workers never call each other; the loop
layer passes what one needs from another as data.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterator, List, Mapping, Optional, Sequence, Tuple

from repairloop.errors import RepairloopError
from repairloop.journal import (
    CrashedEvent,
    ErrorEvent,
    InterruptedEvent,
    Journal,
    ProjectLock,
    ResumedEvent,
    StartEvent,
    WorkspaceEvent,
    new_run_id,
    pid_alive,
    run_dir_for,
)
from repairloop.loop.chain import check_cost_limit, warm_up
from repairloop.loop.resume import Recorded
from repairloop.loop.session import ConfirmApply, Session
from repairloop.loop.suite import RunnerFactory, TestSuite
from repairloop.redact import Redactor, project_secrets, redact_record, secret_values
from repairloop.runner import default_test_command
from repairloop.settings import Settings, model_chain
from repairloop.types import (
    Failure,
    LoopEvent,
    Proposer,
    RunNote,
    RunResult,
    RunStopped,
    TestReport,
    matches_globs,
)
from repairloop.workspace import (
    Workspace,
    check_repository,
    clean_stale_workspaces,
    ensure_excluded,
    open_workspace,
)

__all__ = [
    "classify_project",
    "clean_workspaces",
    "default_test_command",
    "drive",
    "iterate",
    "new_run_id",
    "repair",
    "resume",
    "run_dir_for",
]


def repair(
    settings: Settings,
    project: Path,
    *,
    environ: Optional[Mapping[str, str]] = None,
    apply: bool = False,
    confirm: Optional[ConfirmApply] = None,
    clock: Callable[[], float] = time.monotonic,
    proposers: Optional[Mapping[str, Proposer]] = None,
    run_id: Optional[str] = None,
    runner: Optional[RunnerFactory] = None,
) -> RunResult:
    """Run the whole loop without a terminal and return its RunResult (the arguments are
    ``iterate``'s).

    Raises RepairloopError subclasses for usage and project errors (see errors.py).
    """
    result: Optional[RunResult] = None
    for event in iterate(
        settings,
        project,
        environ=environ,
        apply=apply,
        confirm=confirm,
        clock=clock,
        proposers=proposers,
        run_id=run_id,
        runner=runner,
    ):
        if isinstance(event, RunStopped):
            result = event.result
    assert result is not None  # iterate() always ends with a RunStopped
    return result


def iterate(
    settings: Settings,
    project: Path,
    *,
    environ: Optional[Mapping[str, str]] = None,
    apply: bool = False,
    confirm: Optional[ConfirmApply] = None,
    clock: Callable[[], float] = time.monotonic,
    proposers: Optional[Mapping[str, Proposer]] = None,
    run_id: Optional[str] = None,
    runner: Optional[RunnerFactory] = None,
) -> Iterator[LoopEvent]:
    """Repair ``project`` and yield LoopEvents; the last one is ``stopped`` with the RunResult.

    ``apply`` writes the final patch to the user's tree (after ``confirm(diff)``
    returns True when given). ``proposers`` maps chain names to Proposer objects
    a library user brings (``settings.models`` names them); ``run_id`` is the new
    run's id (``new_run_id()`` when None); ``runner`` builds the run's TestRunner
    (None: ``TestSuite.for_project``, the project's tests in the sandbox). Raises
    ProjectError, ConfigError, LockedError, WorkspaceError before the loop
    starts; KeyboardInterrupt and other exceptions propagate after the
    workspace is removed, the lock released and the journal says so.
    """
    project = project.resolve()
    check_repository(project)
    # A cost limit no unpriced model can keep: exit 2 before any call (a resume keeps its run's
    # settings).
    check_cost_limit(settings, model_chain(settings, os.environ if environ is None else environ))
    run_id = run_id or new_run_id()
    yield from drive(
        settings,
        project,
        run_id,
        environ=environ,
        apply=apply,
        confirm=confirm,
        clock=clock,
        proposers=proposers,
        runner=runner,
    )


def _record_start(journal: Journal, ws: Workspace) -> None:
    """Journal the workspace a new run starts from, and keep its start state's hashes."""
    journal.record(
        WorkspaceEvent(
            base=ws.base,
            head=ws.start.head,
            brought_ignored=ws.ignored.brought,
            ignored_too_large=ws.ignored.too_large,
        )
    )
    journal.write_json("start.json", asdict(ws.start))


def drive(
    settings: Settings,
    project: Path,
    run_id: str,
    *,
    environ: Optional[Mapping[str, str]] = None,
    apply: bool = False,
    confirm: Optional[ConfirmApply] = None,
    clock: Callable[[], float] = time.monotonic,
    proposers: Optional[Mapping[str, Proposer]] = None,
    recorded: Optional[Recorded] = None,
    runner: Optional[RunnerFactory] = None,
) -> Iterator[LoopEvent]:
    """The run itself, new (``recorded`` None) or resumed from a journal (``resume``); ``runner`` as
    ``iterate``'s."""
    environ = dict(os.environ if environ is None else environ)
    chain = model_chain(settings, environ)
    if not settings.test_cmd:
        default_test_command(project)  # raises ProjectError now, before a run directory exists
    started = clock()
    with ProjectLock(project, run_id):
        warm_up(chain)
        registry = project / ".repairloop" / "worktrees"
        ensure_excluded(project)
        for removed in clean_stale_workspaces(project, registry, is_alive=pid_alive):
            yield RunNote(f"removed a workspace left by an earlier run: {removed}")
        journal = _open_journal(settings, project, run_id, environ, chain, recorded)
        try:
            with open_workspace(
                project,
                run_id=run_id,
                registry_dir=registry,
                base=recorded.base if recorded else None,
                start=recorded.start if recorded else None,
                bundle=journal.run_dir / "start.bundle",
            ) as ws:
                if recorded is None:  # a resume has them from its run
                    _record_start(journal, ws)
                session = Session(
                    settings,
                    project,
                    ws,
                    journal,
                    environ,
                    chain,
                    clock,
                    started,
                    run_id,
                    replay=recorded.answers if recorded else None,
                    given=proposers,
                    runner=runner or TestSuite.for_project,
                )
                for event in session.run(apply=apply, confirm=confirm):
                    # the screen sees what the journal sees
                    yield redact_record(event, journal.redact)
        except KeyboardInterrupt:  # outside the session's loop (creating or removing the workspace)
            journal.record(InterruptedEvent(seconds=clock() - started))
            raise
        except RepairloopError as err:
            journal.record(ErrorEvent(message=err.message, hint=err.hint))
            raise
        except Exception as err:
            journal.record(CrashedEvent(error=f"{type(err).__name__}: {err}"))
            raise


def _open_journal(
    settings: Settings,
    project: Path,
    run_id: str,
    environ: Mapping[str, str],
    chain: Sequence[str],
    recorded: Optional[Recorded],
) -> Journal:
    """The run's journal, its first event written: the start of a new run or a resume."""
    journal = Journal(run_dir_for(project, run_id), redact=run_redactor(settings, project, environ))
    if recorded is None:
        journal.record(
            StartEvent(
                run_id=run_id,
                project=str(project),
                chain=tuple(chain),
                settings=settings.model_dump(),
            )
        )
    else:
        journal.record(ResumedEvent(answers=len(recorded.answers), chain=tuple(chain)))
    return journal


def run_redactor(settings: Settings, project: Path, environ: Mapping[str, str]) -> Redactor:
    """Secrets stay home: the redactor every journal line, run file and prompt goes through
    (``redact``): the secret-looking variables' values and the passwords of URLs in any variable,
    the key under ``api_key_env`` whatever its name, and the secrets of the project's own files
    (its ``.env`` files, the literals its code gives to secret-looking names; test files aside),
    read from ``project``, the user's tree, now."""
    secrets = secret_values(environ)
    if settings.api_key_env and environ.get(
        settings.api_key_env
    ):  # a key under a name that looks harmless
        secrets.append(environ[settings.api_key_env])
    secrets += project_secrets(project, lambda rel: matches_globs(rel, settings.test_globs))
    return Redactor(secrets)


def clean_workspaces(project: Path) -> List[str]:
    """Remove workspaces left by runs whose process is gone; returns their directories.

    Never touches the user's files (``workspace.clean_stale_workspaces``).
    """
    return clean_stale_workspaces(
        project, project / ".repairloop" / "worktrees", is_alive=pid_alive
    )


def resume(
    project: Path,
    ref: Optional[str] = None,
    *,
    environ: Optional[Mapping[str, str]] = None,
    apply: bool = False,
    confirm: Optional[ConfirmApply] = None,
    clock: Callable[[], float] = time.monotonic,
    runner: Optional[RunnerFactory] = None,
) -> Iterator[LoopEvent]:
    """Continue a killed or interrupted run from its journal; yields like ``iterate`` (``runner``
    too).

    The workspace is re-created at the recorded start state and the run is
    replayed with every recorded answer, then goes on live. Raises
    ProjectError when the run finished (and has no side effect left to check)
    or cannot be resumed.
    """
    from repairloop.loop.intents import settle_pending
    from repairloop.loop.resume import load_recorded

    project = project.resolve()
    check_repository(project)
    recorded = load_recorded(project, ref, os.environ if environ is None else environ)
    for warning in recorded.warnings:
        yield RunNote(warning)
    if recorded.finished:
        yield from settle_pending(project, recorded)
        return
    if recorded.base is None:
        yield RunNote("not a git project: the workspace is copied from the files as they are now")
    yield from drive(
        recorded.settings,
        project,
        recorded.run_id,
        environ=environ,
        apply=apply,
        confirm=confirm,
        clock=clock,
        recorded=recorded,
        runner=runner,
    )


def classify_project(
    settings: Settings,
    project: Path,
    *,
    environ: Optional[Mapping[str, str]] = None,
    runner: Optional[RunnerFactory] = None,
) -> Tuple[TestReport, Tuple[Failure, ...], str]:
    """Run the suite once in a workspace and classify it: (report, failures, overall kind).

    The overall kind is the blocking kind's value, ``logic``, or ``none``; ``runner`` as
    ``iterate``'s. Raises ProjectError / WorkspaceError like ``iterate``.
    """
    from repairloop.classify import blocking_kind, overall_kind
    from repairloop.loop.fidelity import classify_baseline
    from repairloop.loop.flaky import confirm_failures, with_flaky

    project = project.resolve()
    check_repository(project)
    environ = dict(os.environ if environ is None else environ)
    run_id = new_run_id()
    registry = project / ".repairloop" / "worktrees"
    ensure_excluded(project)
    with open_workspace(project, run_id=run_id, registry_dir=registry) as ws:
        suite = (runner or TestSuite.for_project)(
            settings, project, environ, lambda: settings.test_timeout, ws.scratch
        )
        report = suite.run(ws.root)
        failures = classify_baseline(suite, ws.root, report, ws)
        if (
            failures and blocking_kind(failures, settings.retry_kinds) is None
        ):  # as `run` does before spending
            found = confirm_failures(
                suite, ws.root, report.failing_ids, report, settings.confirm_runs
            )
            failures = with_flaky(failures, found)
    # What classify prints (--json too) is redacted like everything else that leaves a run.
    failures = redact_record(failures, run_redactor(settings, project, environ))
    return report, failures, overall_kind(failures)
