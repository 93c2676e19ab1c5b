"""``repairloop hook``: the pre-commit (pre-push) entry point.

Runs the tests; a green suite exits 0 at once. Failing tests get the loop with
a tight budget (:data:`HOOK_DEFAULTS`, below the user's own configuration).
By default the hook only proposes: it prints the patch and where it was saved
and exits 1. With ``--apply`` it writes the fix to the working tree and still
exits 1, pre-commit's convention for a hook that modified files, so the user
reviews it. It never stages or commits, and writes only the files the patch
touches, refusing any that changed since the run started (the loop's own apply
path, journalled as an intent). With no model and no key the offline engine runs.

Exit codes: 0 the tests pass; 1 they fail (patch proposed, applied, or none
found); 2 usage or configuration error; 3 an unrecoverable failure kind.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

from repairloop.loop.apply_fix import apply_command
from repairloop.loop.driver import iterate
from repairloop.loop.suite import RunnerFactory
from repairloop.settings import Layers, Settings, load_layers
from repairloop.textutil import listed
from repairloop.types import ExitCode, LoopEvent, Outcome, RunResult, RunStopped

# A hook runs while someone waits for `git push`: two minutes, ten cents, three iterations,
# unless the project's configuration, REPAIRLOOP_* variables or the hook's args say otherwise.
HOOK_DEFAULTS: Dict[str, Any] = {"timeout": 120.0, "max_cost": 0.10, "max_iterations": 3}


def hook_settings(project: Path, flags: Mapping[str, Any], environ: Mapping[str, str]) -> Layers:
    """Settings for a hook run: defaults < HOOK_DEFAULTS < user file < project file < environment <
    flags.

    A hook default applies only to keys no layer set. Raises ConfigError.
    """
    given = {k: v for k, v in flags.items() if v is not None}
    layers = load_layers(project, given, environ)
    defaults = {k: v for k, v in HOOK_DEFAULTS.items() if k not in layers.given}
    settings = layers.settings.model_copy(update=defaults)
    # A hook default is no choice of the user's (its cost limit does not refuse an unpriced model).
    settings = Settings.model_construct(
        _fields_set=layers.settings.model_fields_set, **settings.model_dump()
    )
    return Layers(settings, layers.given, layers.notices)


@dataclass
class HookReport:
    """The hook's verdict: exit code, the lines to print, and the run's result."""

    exit_code: int
    lines: List[str] = field(default_factory=list)
    result: Optional[RunResult] = None


def run_hook(
    settings: Settings,
    project: Path,
    *,
    apply: bool = False,
    environ: Optional[Mapping[str, str]] = None,
    on_event: Callable[[LoopEvent], None] = lambda e: None,
    runner: Optional[RunnerFactory] = None,
) -> HookReport:
    """Run the loop for a hook and say what the user should do next (see the module docstring);
    ``runner`` runs the tests (None: ``TestSuite``, as ``loop.iterate``).

    Raises ProjectError, ConfigError, LockedError, WorkspaceError like ``loop.iterate``.
    """
    result: Optional[RunResult] = None
    for event in iterate(
        settings, project, environ=environ, apply=apply, confirm=None, runner=runner
    ):
        on_event(event)
        if isinstance(event, RunStopped):
            result = event.result
    assert result is not None  # iterate() always ends with a "stopped" event
    return HookReport(_exit_code(result), _advice(result, Path(project)), result)


def _exit_code(result: RunResult) -> int:
    if result.outcome is Outcome.NOTHING_TO_FIX:
        return int(ExitCode.OK)
    return int(
        ExitCode.UNRECOVERABLE if result.outcome is Outcome.UNRECOVERABLE else ExitCode.NOT_FIXED
    )


def _shown(path: Path) -> str:
    """A path relative to the current directory when it is below it (what the user types)."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except ValueError:
        return str(path)


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 200 else first[:199] + "…"


def _advice(result: RunResult, project: Path) -> List[str]:
    failing = len(result.failures)
    if result.outcome is Outcome.NOTHING_TO_FIX:
        return ["repairloop: the tests pass"]
    if result.outcome is Outcome.UNRECOVERABLE:
        lines = [f"repairloop: {result.stop_detail}"]
        lines += [
            f"  {f.location or f.test_id}: {f.kind.value}: {_one_line(f.hint or f.message)}"
            for f in result.failures[:10]
        ]
        return lines + [
            "no code change from the loop can fix this: fix it by hand, then push again"
        ]
    patch_file = _shown(Path(result.run_dir) / "fix.patch")
    if not result.patch:
        return [
            f"repairloop: {failing} failing test(s); no fix found "
            f"({result.stop_reason.value}: {_one_line(result.stop_detail)})",
            "run `repairloop run` for a longer search, or fix it by hand",
        ]
    what = "a fix" if result.outcome is Outcome.FIXED else "a partial fix"
    left = _left_failing(result)
    if result.applied:
        return [
            f"repairloop: {failing} failing test(s); applied {what} to your working tree (not "
            f"staged):",
            "",
            result.patch.rstrip("\n"),
            "",
            *left,
            f"also saved as {patch_file}",
            "review it (git diff), then stage and commit it (git add -p; git commit) "
            "and push again",
        ]
    why = (
        "it passes the tests: plausible, not proven correct"
        if result.outcome is Outcome.FIXED
        else f"{len(result.still_failing)} test(s) still fail with it: review it, the rest needs "
        f"another fix"
    )
    return [
        f"repairloop: {failing} failing test(s); found {what} ({why}):",
        "",
        result.patch.rstrip("\n"),
        "",
        *left,
        f"saved as {patch_file}",
        f"apply it with: {apply_command(project, patch_file)}   "
        "(or add --apply to the hook's args)",
    ]


def _left_failing(result: RunResult) -> List[str]:
    """For a partial fix: the tests it leaves failing and the function they all run."""
    if result.outcome is not Outcome.PARTIALLY_FIXED or not result.still_failing:
        return []
    return [
        "still failing with it: " + listed(result.still_failing),
        *([result.shared_fault] if result.shared_fault else []),
    ]
