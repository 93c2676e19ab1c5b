"""Helpers every command shares: the stderr console, error guarding, usage checks, settings.

``guarded`` is the one place where exceptions become exit codes (DESIGN.md's
contract: 0 fixed or nothing to fix, 1 not fixed, 2 usage or configuration
error, 3 unrecoverable failure kind, 130 interrupted); ``OUTCOME_EXIT`` maps a
run's outcome to its code. Heavy modules (the loop, settings with pydantic,
rich's syntax highlighting) are imported inside the functions so that
``repairloop --help`` answers fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

import typer

from repairloop.errors import RepairloopError
from repairloop.types import ExitCode, Outcome, RunResult, StopReason

if TYPE_CHECKING:  # the loop is imported inside the commands (``repairloop --help`` stays fast)
    from repairloop.loop.suite import RunnerFactory

# The PATH argument of the commands that take a project directory positionally.
PathArg = typer.Argument(Path("."), help="Project directory (default: the current directory).")

# A finished run's outcome -> the process exit code (DESIGN.md, "Exit codes").
OUTCOME_EXIT = {
    Outcome.FIXED: ExitCode.OK,
    Outcome.NOTHING_TO_FIX: ExitCode.OK,
    Outcome.PARTIALLY_FIXED: ExitCode.NOT_FIXED,
    Outcome.NOT_FIXED: ExitCode.NOT_FIXED,
    Outcome.UNRECOVERABLE: ExitCode.UNRECOVERABLE,
}


def exit_code_of(result: RunResult) -> ExitCode:
    """The exit code of a finished run: 130 when it stopped because it was interrupted, else by
    outcome."""
    if result.stop_reason is StopReason.INTERRUPTED:
        return ExitCode.INTERRUPTED
    return OUTCOME_EXIT[result.outcome]


def given_runner(ctx: typer.Context) -> Optional["RunnerFactory"]:
    """The TestRunner factory ``main(runner=...)`` was given (a library user's, a test's canned
    runner); None: the loop's own (``TestSuite``, the project's tests in the sandbox)."""
    return ctx.obj if callable(ctx.obj) else None


def err_console() -> Any:
    """A rich Console on stderr (``report.make_console``): progress, errors, panels."""
    from repairloop.reports.console import make_console

    return make_console()


def guarded(action: Callable[[], int], as_json: bool = False) -> None:
    """Run a command body; map our errors and Ctrl-C to exit codes with a clear message.

    ``action`` returns the exit code. Always raises ``typer.Exit``: with that code,
    with a RepairloopError's ``exit_code`` (2 or 3; message and hint on stderr),
    130 on KeyboardInterrupt (SIGTERM becomes one too, see ``main``) and 1 on any
    other exception (a bug of ours; REPAIRLOOP_DEBUG=1 prints the traceback).
    With ``as_json`` an error also becomes the one JSON document on stdout
    (``{"error": {"kind", "message", "hint", "exit_code"}}``; README, "Use").
    """
    try:
        code = action()
    except RepairloopError as err:
        console = err_console()
        console.print(f"repairloop: error: {err.message}")
        if err.hint:
            console.print(f"hint: {err.hint}")
        code = int(err.exit_code)
        if as_json:
            json_error(_error_kind(type(err).__name__), err.message, err.hint, code)
    except KeyboardInterrupt as exc:
        run_id = getattr(exc, "run_id", None)  # RunInterrupted: the run that was under way
        resume = f"repairloop resume {run_id}" if run_id else "repairloop resume"
        err_console().print(
            f"repairloop: interrupted; your files are as they were. `{resume}` goes on with the "
            f"run."
        )
        code = int(ExitCode.INTERRUPTED)
        if as_json:
            json_error(
                "interrupted", "interrupted", f"{resume} continues the run", code, run_id=run_id
            )
    except Exception as err:  # a bug of ours: say so plainly, never a bare traceback
        console = err_console()
        console.print(f"repairloop: internal error: {type(err).__name__}: {err}")
        console.print(
            "Your files are as they were. The run's journal is under .repairloop/runs/; "
            "please report this with it (REPAIRLOOP_DEBUG=1 shows the traceback)."
        )
        if os.environ.get("REPAIRLOOP_DEBUG"):
            console.print_exception()
        code = int(ExitCode.NOT_FIXED)
        if as_json:
            json_error(
                "internal",
                f"{type(err).__name__}: {err}",
                "please report this with the run's journal",
                code,
            )
    raise typer.Exit(code)


def _error_kind(class_name: str) -> str:
    """``ConfigError`` -> ``config``, ``UnrecoverableModelError`` -> ``unrecoverable_model``."""
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name.removesuffix("Error") or class_name).lower()


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C while a run was under way outside its loop (creating or removing its workspace):
    ``run_id`` is that run's, for the message and the ``--json`` error (``repairloop resume
    RUN_ID``)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def json_error(
    kind: str, message: str, hint: str, code: int, *, run_id: Optional[str] = None
) -> None:
    """Write ``{"error": {"kind", "message", "hint", "exit_code"}}`` (indented JSON) to stdout.

    ``kind`` is snake_case (``config``, ``usage``, ``interrupted``, ``internal``...);
    ``code`` is the exit code the process is about to return; ``run_id`` is added when a run had
    started.
    """
    error: Dict[str, Any] = {"kind": kind, "message": message, "hint": hint, "exit_code": code}
    document = {"error": {**error, "run_id": run_id} if run_id else error}
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def check_usage(
    *, model: Optional[List[str]] = None, yes: bool = False, apply: bool = False
) -> None:
    """Flag combinations that would otherwise be silently ignored.

    Raises ConfigError (exit 2) for ``--yes`` without ``--apply`` and for an empty
    ``--model`` name; ``model`` is the list of ``--model`` values (None when absent).
    """
    from repairloop.errors import ConfigError

    if yes and not apply:
        raise ConfigError(
            "--yes was given without --apply; --yes only answers the question --apply asks",
            hint="add --apply to write the patch to your files without asking, or drop --yes",
        )
    if model and any(not m.strip() for m in model):
        raise ConfigError(
            "--model was given an empty name",
            hint="pass a model name (--model openai/gpt-4o-mini, --model builtin), "
            "or leave --model out for the default chain",
        )


def project_settings(path: Path, flags: Dict[str, Any], command: str = "run") -> Any:
    """The run's Settings (``settings.load_layers``) with ``flags`` (None values: not given) on top.

    Warns about unknown REPAIRLOOP_* variables first, and prints one notice per key of the
    project's file that it may not set (``settings.trust``). Raises ProjectError (exit 2)
    when ``path`` is no directory, ConfigError (exit 2) for an invalid setting, its hint naming
    ``repairloop COMMAND --help`` for a flag (``command``: the subcommand whose flags they are).
    """
    from repairloop.errors import ConfigError
    from repairloop.settings import load_layers
    from repairloop.settings.layers import COMMAND_HELP

    if not path.is_dir():
        raise not_a_directory(path)
    warn_unknown_env()
    try:
        layers = load_layers(path.resolve(), flags)
    except ConfigError as err:  # name this command's help (classify's flags are not run's)
        hint = err.hint.replace(COMMAND_HELP, f"`repairloop {command} --help`")
        raise ConfigError(err.message, hint) from None
    print_notices(layers.notices)
    return layers.settings


def print_notices(notices: Any) -> None:
    """One stderr line per notice (settings a project file may not set, and were ignored)."""
    for notice in notices:
        err_console().print(notice, markup=False, highlight=False)


def warn_unknown_env() -> None:
    """One stderr line per REPAIRLOOP_* variable that is no setting (a typo would otherwise do
    nothing)."""
    from repairloop.settings import unknown_env_warnings

    for warning in unknown_env_warnings(os.environ):
        err_console().print(warning)


def not_a_directory(path: Path) -> Exception:
    """The ProjectError (exit 2) a command raises when its project ``path`` is no directory."""
    from repairloop.errors import ProjectError

    return ProjectError(f"{path} is not a directory", hint="pass the project's directory")
