"""The command line: flags to settings, events to the console, errors to exit codes.

This package is the one place where exceptions become exit codes (DESIGN.md's
contract: 0 fixed or nothing to fix, 1 not fixed, 2 usage or configuration
error, 3 unrecoverable failure kind, 130 interrupted). Here: the typer ``app``,
``--version`` and ``main`` (the console script); the commands live in
``repair`` (run, resume, clean, classify), ``history`` (report, runs, stats)
``integrations`` (hook, ci) and ``bench`` (bench, bench merge); ``common`` holds what they share.
Heavy modules (the loop, GitPython, pydantic, litellm) are imported inside the
commands so that ``repairloop --help`` answers fast.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from repairloop.cli import history, integrations, repair
from repairloop.cli.bench import bench_app
from repairloop.cli.common import json_error
from repairloop.types import ExitCode

if TYPE_CHECKING:
    from repairloop.loop.suite import RunnerFactory

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Repair failing tests: classify every failure, then loop candidate patches through your "
    "test suite.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    """``--version``: the installed distribution's version (the source tree's when not
    installed)."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("repairloop")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        import repairloop

        text = repairloop.__version__
    typer.echo(f"repairloop {text}")
    raise typer.Exit(int(ExitCode.OK))


@app.callback()
def _options(
    show_version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print repairloop's version and exit.",
    ),
) -> None:
    # Options before the command (only --version); eager, so nothing else is parsed or imported.
    return None


# Registration order is the order `repairloop --help` lists the commands in.
_COMMANDS = (
    repair.run,
    repair.resume,
    repair.clean,
    repair.classify,
    history.report,
    history.runs,
    history.stats,
    integrations.hook,
    integrations.ci,
)
for _command in _COMMANDS:
    app.command()(_command)
# a group: `bench CASES_DIR` (its default command, run) and `bench merge`
app.add_typer(bench_app, name="bench")


def _terminated(signum: int, frame: Any) -> None:
    # CI systems stop jobs with SIGTERM: unwind like Ctrl-C so the workspace is removed.
    raise KeyboardInterrupt


def main(argv: Optional[List[str]] = None, *, runner: Optional["RunnerFactory"] = None) -> int:
    """Console-script entry point; returns the exit code.

    ``runner`` builds the TestRunner of the commands that run tests (run, resume, classify, hook,
    ci; ``loop.iterate``'s): None for the real one, the project's tests in the sandbox.
    """
    import signal
    import threading

    args = list(sys.argv[1:] if argv is None else argv)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        if "--json" in args:
            return _main_json(args, runner)
        app(args=args, prog_name="repairloop", standalone_mode=True, obj=runner)
    except SystemExit as done:
        return int(done.code or 0)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _main_json(args: List[str], runner: Optional["RunnerFactory"]) -> int:
    """Like standalone mode, but a usage error click finds (bad option or value) also prints the
    JSON error."""
    # click's base exception, whether typer uses click or (typer >= 0.29) its own copy of it.
    click_exception = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        return int(app(args=args, prog_name="repairloop", standalone_mode=False, obj=runner) or 0)
    except click_exception as err:  # type: ignore[misc]
        err.show()
        exit_code: int = err.exit_code
        ctx = getattr(err, "ctx", None)
        words = [
            "repairloop",
            *(ctx.command_path.split(" ")[1:] if ctx is not None else []),
            "--help",
        ]
        hint = f"see '{' '.join(words)}'"
        json_error("usage", err.format_message(), hint, exit_code)
        return exit_code
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        return int(ExitCode.NOT_FIXED)
