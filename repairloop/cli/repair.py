"""The repair commands: ``run``, ``resume``, ``clean`` and ``classify``.

Plain functions; ``repairloop.cli`` registers them on the typer app. Heavy
modules (the loop, GitPython, pydantic, litellm) are imported inside the
command bodies so that ``repairloop --help`` answers fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import typer

from repairloop.cli.common import (
    PathArg,
    RunInterrupted,
    check_usage,
    err_console,
    exit_code_of,
    given_runner,
    guarded,
    not_a_directory,
    project_settings,
)
from repairloop.types import ExitCode, RunStopped, StopReason

if TYPE_CHECKING:
    from repairloop.loop.suite import RunnerFactory


def run(
    ctx: typer.Context,
    path: Path = PathArg,
    test_cmd: Optional[str] = typer.Option(
        None, "--test-cmd", help="Test command (default: python -m pytest)."
    ),
    junit_xml: Optional[str] = typer.Option(
        None, "--junit-xml", help="JUnit XML file written by a non-pytest test command."
    ),
    model: Optional[List[str]] = typer.Option(
        None, "--model", "-m", help="Model (litellm name or 'builtin'); repeat for a chain."
    ),
    api_base: Optional[str] = typer.Option(
        None, "--api-base", help="OpenAI-compatible server URL (Ollama, vLLM, LM Studio)."
    ),
    edit_format: Optional[List[str]] = typer.Option(
        None,
        "--edit-format",
        help="auto, diff, search_replace, whole or tools; or MODEL=FORMAT (repeatable).",
    ),
    max_iterations: Optional[int] = typer.Option(
        None, "--max-iterations", help="Iteration budget."
    ),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", help="Token budget (prompt + completion)."
    ),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Cost budget in USD."),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", help="Wall-clock budget of the whole run, seconds."
    ),
    test_timeout: Optional[float] = typer.Option(
        None, "--test-timeout", help="Seconds for one run of the test command."
    ),
    per_test_timeout: Optional[float] = typer.Option(
        None,
        "--per-test-timeout",
        help="Seconds for one test (pytest; default a fifteenth of --timeout, 5-60 s; 0: off).",
    ),
    final_runs: Optional[int] = typer.Option(
        None, "--final-runs", help="Full-suite runs a fix must pass (flaky check)."
    ),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="Offline engine: candidates validated in parallel."
    ),
    no_builtin: bool = typer.Option(
        False, "--no-builtin", help="Do not fall back to the offline engine."
    ),
    allow_test_edits: bool = typer.Option(
        False, "--allow-test-edits", help="Let candidates edit test files."
    ),
    allow_capability: Optional[List[str]] = typer.Option(
        None,
        "--allow-capability",
        help="Let candidates add this capability to a module (import:os, dunder:__eq__, files; "
        "repeatable); each use is flagged.",
    ),
    apply: bool = typer.Option(
        False, "--apply", help="Write the final patch to your files (asks first on a terminal)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --apply: do not ask."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON document on stdout; progress goes to stderr."
    ),
) -> None:
    """Repair the failing tests of PATH in an isolated workspace.

    Your files change only with --apply.
    """
    flags = {
        "test_cmd": test_cmd,
        "junit_xml": junit_xml,
        "models": model or None,
        "api_base": api_base,
        "max_iterations": max_iterations,
        "max_tokens": max_tokens,
        "max_cost": max_cost,
        "timeout": timeout,
        "test_timeout": test_timeout,
        "per_test_timeout": per_test_timeout,
        "final_runs": final_runs,
        "workers": workers,
        "fallback_to_builtin": False if no_builtin else None,
        "allow_test_edits": True if allow_test_edits else None,
        "allow_capabilities": allow_capability or None,
        **_edit_format_flags(edit_format or []),
    }
    guarded(
        lambda: _run(
            path,
            flags,
            apply=apply,
            yes=yes,
            as_json=as_json,
            model=model,
            runner=given_runner(ctx),
        ),
        as_json,
    )


def _edit_format_flags(values: List[str]) -> Dict[str, Any]:
    """``--edit-format whole`` sets edit_format; ``--edit-format MODEL=whole`` sets that model's
    format."""
    plain = [v for v in values if "=" not in v]
    per_model = dict(v.rsplit("=", 1) for v in values if "=" in v)
    return {"edit_format": plain[-1] if plain else None, "model_edit_formats": per_model or None}


def _run(
    path: Path,
    flags: Dict[str, Any],
    *,
    apply: bool,
    yes: bool,
    as_json: bool,
    model: Optional[List[str]],
    runner: Optional["RunnerFactory"] = None,
) -> int:
    from repairloop.loop.driver import iterate, new_run_id, run_dir_for

    check_usage(model=model, yes=yes, apply=apply)
    settings = project_settings(path, flags)
    console = err_console()
    confirm = None if (yes or not sys.stdin.isatty()) else _Ask(console)
    run_id = new_run_id()
    try:
        events = iterate(settings, path, apply=apply, confirm=confirm, run_id=run_id, runner=runner)
        return _show(console, events, as_json, confirm)
    except (
        KeyboardInterrupt
    ) as exc:  # outside the loop (its own Ctrl-C ends in a result): say which run
        if not run_dir_for(path.resolve(), run_id).is_dir():
            raise  # it had not started: nothing to resume
        raise RunInterrupted(run_id) from exc


def _show(console: Any, events: Any, as_json: bool, asked: Optional["_Ask"] = None) -> int:
    """Render loop events; print the final panel (and JSON); return the exit code.

    The panel leaves the diff out when the --apply question has shown it already.
    """
    from repairloop.reports.console import ConsoleRenderer, render_result

    renderer = ConsoleRenderer(console)
    result = None
    try:
        for event in events:
            if isinstance(event, RunStopped):
                result = event.result
            renderer(event)
    finally:
        renderer.close()
    if result is None:  # a resume that only settled a finished run's side effects
        return int(ExitCode.OK)
    render_result(console, result, show_patch=asked is None or not asked.shown)
    if result.stop_reason is StopReason.INTERRUPTED:
        console.print(
            f"repairloop: interrupted; your files are as they were. `repairloop resume "
            f"{result.run_id}` "
            "goes on with this run."
        )
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    return int(exit_code_of(result))


def resume(
    ctx: typer.Context,
    run_id: Optional[str] = typer.Argument(
        None, help="Run id or unique prefix (default: the latest run)."
    ),
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    apply: bool = typer.Option(
        False, "--apply", help="Write the final patch to your files (asks first on a terminal)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --apply: do not ask."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Continue a killed or interrupted run from its journal.

    Recorded answers are replayed, not paid for again.
    """

    def body() -> int:
        from repairloop.loop.driver import resume as resume_run

        if not path.is_dir():
            raise not_a_directory(path)
        check_usage(yes=yes, apply=apply)
        console = err_console()
        confirm = None if (yes or not sys.stdin.isatty()) else _Ask(console)
        events = resume_run(path, run_id, apply=apply, confirm=confirm, runner=given_runner(ctx))
        return _show(console, events, as_json, confirm)

    guarded(body, as_json)


def clean(path: Path = PathArg) -> None:
    """Remove workspaces left behind by killed runs (never touches your files)."""

    def body() -> int:
        from repairloop.loop.driver import clean_workspaces

        if not path.is_dir():
            raise not_a_directory(path)
        removed = clean_workspaces(path.resolve())
        console = err_console()
        for item in removed:
            console.print(f"removed {item}")
        console.print(f"{len(removed)} stale workspace(s) removed")
        return int(ExitCode.OK)

    guarded(body)


class _Ask:
    """The --apply question on a terminal: shows the diff, then asks; ``shown`` once it has shown
    it."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.shown = False

    def __call__(self, diff: str) -> bool:
        from rich.syntax import Syntax

        self.console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
        self.shown = True
        return typer.confirm("Apply this patch to your files?", default=False, err=True)


def classify(
    ctx: typer.Context,
    path: Path = PathArg,
    test_cmd: Optional[str] = typer.Option(
        None, "--test-cmd", help="Test command (default: python -m pytest)."
    ),
    junit_xml: Optional[str] = typer.Option(
        None, "--junit-xml", help="JUnit XML file written by a non-pytest test command."
    ),
    test_timeout: Optional[float] = typer.Option(
        None, "--test-timeout", help="Seconds for one run of the test command."
    ),
    per_test_timeout: Optional[float] = typer.Option(
        None,
        "--per-test-timeout",
        help="Seconds for one test (pytest; default a fifteenth of --timeout, 5-60 s; 0: off).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Run the tests once and sort every failure into a kind, with a hint for each.

    Exit codes: 0 nothing fails, 1 only logic failures (repairable), 2 usage error, 3 a blocking
    kind.
    """
    flags = {
        "test_cmd": test_cmd,
        "junit_xml": junit_xml,
        "test_timeout": test_timeout,
        "per_test_timeout": per_test_timeout,
    }
    guarded(lambda: _classify(path, flags, as_json, given_runner(ctx)), as_json)


def _classify(
    path: Path, flags: Dict[str, Any], as_json: bool, runner: Optional["RunnerFactory"] = None
) -> int:
    from repairloop.loop.driver import classify_project
    from repairloop.reports.console import render_classification, summary_counts

    settings = project_settings(path, flags, "classify")
    report, failures, kind = classify_project(settings, path, runner=runner)
    if as_json:
        document = {
            "summary": summary_counts(report),
            "kind": kind,
            "exit_code": report.exit_code,
            "failures": [f.to_json() for f in failures],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        from repairloop.reports.console import make_console

        render_classification(make_console(sys.stdout), report, failures, kind)
    if kind == "none":
        return int(ExitCode.OK)
    return int(ExitCode.NOT_FIXED if kind == "logic" else ExitCode.UNRECOVERABLE)
