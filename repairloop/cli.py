"""The command line: flags to settings, events to the console, errors to exit codes.

This is the one place where exceptions become exit codes (DESIGN.md's
contract: 0 fixed or nothing to fix, 1 not fixed, 2 usage or configuration
error, 3 unrecoverable failure kind, 130 interrupted). Heavy modules (the loop,
GitPython, pydantic, litellm) are imported inside the commands so that
``repairloop --help`` answers fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import typer

from repairloop.errors import RepairloopError
from repairloop.types import ExitCode, Outcome

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Repair failing tests: classify every failure, then loop candidate patches through your test suite.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

PathArg = typer.Argument(Path("."), help="Project directory (default: the current directory).")
OUTCOME_EXIT = {
    Outcome.FIXED: ExitCode.OK,
    Outcome.NOTHING_TO_FIX: ExitCode.OK,
    Outcome.PARTIALLY_FIXED: ExitCode.NOT_FIXED,
    Outcome.NOT_FIXED: ExitCode.NOT_FIXED,
    Outcome.UNRECOVERABLE: ExitCode.UNRECOVERABLE,
}


def _console() -> Any:
    from repairloop.report import make_console

    return make_console()


def _guarded(action: Callable[[], int]) -> None:
    """Run a command body; map our errors and Ctrl-C to exit codes with a clear message."""
    try:
        code = action()
    except RepairloopError as err:
        console = _console()
        console.print(f"repairloop: error: {err.message}")
        if err.hint:
            console.print(f"hint: {err.hint}")
        code = int(err.exit_code)
    except KeyboardInterrupt:
        _console().print("repairloop: interrupted; your files are as they were.")
        code = int(ExitCode.INTERRUPTED)
    except Exception as err:  # a bug of ours: say so plainly, never a bare traceback
        console = _console()
        console.print(f"repairloop: internal error: {type(err).__name__}: {err}")
        console.print("Your files are as they were. The run's journal is under .repairloop/runs/; "
                      "please report this with it (REPAIRLOOP_DEBUG=1 shows the traceback).")
        if os.environ.get("REPAIRLOOP_DEBUG"):
            console.print_exception()
        code = int(ExitCode.NOT_FIXED)
    raise typer.Exit(code)


def _settings(path: Path, flags: Dict[str, Any]) -> Any:
    from repairloop.errors import ProjectError
    from repairloop.settings import load_settings

    if not path.is_dir():
        raise ProjectError(f"{path} is not a directory", hint="pass the project's directory")
    return load_settings(path.resolve(), flags)


@app.command()
def run(
    path: Path = PathArg,
    test_cmd: Optional[str] = typer.Option(None, "--test-cmd", help="Test command (default: python -m pytest)."),
    junit_xml: Optional[str] = typer.Option(None, "--junit-xml", help="JUnit XML file written by a non-pytest test command."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Model (litellm name or 'builtin'); repeat for a chain."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server URL (Ollama, vLLM, LM Studio)."),
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", help="Iteration budget."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token budget (prompt + completion)."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Cost budget in USD."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Wall-clock budget of the whole run, seconds."),
    test_timeout: Optional[float] = typer.Option(None, "--test-timeout", help="Seconds for one run of the test command."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Offline engine: candidates validated in parallel."),
    no_builtin: bool = typer.Option(False, "--no-builtin", help="Do not fall back to the offline engine."),
    allow_test_edits: bool = typer.Option(False, "--allow-test-edits", help="Let candidates edit test files."),
    apply: bool = typer.Option(False, "--apply", help="Write the final patch to your files (asks first on a terminal)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --apply: do not ask."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout; progress goes to stderr."),
) -> None:
    """Repair the failing tests of PATH in an isolated workspace; your files change only with --apply."""
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
        "workers": workers,
        "fallback_to_builtin": False if no_builtin else None,
        "allow_test_edits": True if allow_test_edits else None,
    }
    _guarded(lambda: _run(path, flags, apply=apply, yes=yes, as_json=as_json))


def _run(path: Path, flags: Dict[str, Any], *, apply: bool, yes: bool, as_json: bool) -> int:
    from repairloop.loop import iterate
    from repairloop.report import ConsoleRenderer, render_result

    settings = _settings(path, flags)
    console = _console()
    renderer = ConsoleRenderer(console)
    confirm = None if (yes or not sys.stdin.isatty()) else _ask(console)
    result = None
    try:
        for event in iterate(settings, path, apply=apply, confirm=confirm):
            if event.result is not None:
                result = event.result
            renderer(event)
    finally:
        renderer.close()
    assert result is not None
    render_result(console, result)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    return int(OUTCOME_EXIT[result.outcome])


def _ask(console: Any) -> Callable[[str], bool]:
    def confirm(diff: str) -> bool:
        from rich.syntax import Syntax

        console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
        return typer.confirm("Apply this patch to your files?", default=False, err=True)

    return confirm


@app.command()
def classify(
    path: Path = PathArg,
    test_cmd: Optional[str] = typer.Option(None, "--test-cmd", help="Test command (default: python -m pytest)."),
    junit_xml: Optional[str] = typer.Option(None, "--junit-xml", help="JUnit XML file written by a non-pytest test command."),
    test_timeout: Optional[float] = typer.Option(None, "--test-timeout", help="Seconds for one run of the test command."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Run the tests once and sort every failure into a kind, with a hint for each."""
    flags = {"test_cmd": test_cmd, "junit_xml": junit_xml, "test_timeout": test_timeout}
    _guarded(lambda: _classify(path, flags, as_json))


def _classify(path: Path, flags: Dict[str, Any], as_json: bool) -> int:
    from repairloop.loop import classify_project
    from repairloop.report import render_classification, summary_counts

    settings = _settings(path, flags)
    report, failures, kind = classify_project(settings, path)
    if as_json:
        document = {
            "summary": summary_counts(report),
            "kind": kind,
            "exit_code": report.exit_code,
            "failures": [f.to_json() for f in failures],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        from repairloop.report import make_console

        render_classification(make_console(sys.stdout), report, failures, kind)
    if kind == "none":
        return int(ExitCode.OK)
    return int(ExitCode.NOT_FIXED if kind == "logic" else ExitCode.UNRECOVERABLE)


@app.command()
def bench(
    cases_dir: Path = typer.Argument(..., help="Directory of cases (each a project with a case.toml)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Offline engine: candidates validated in parallel."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Model chain (default: the offline engine)."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server URL."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds per case (a case.toml timeout may lower it)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document instead of a Markdown table."),
) -> None:
    """Run the loop on every case of CASES_DIR, each in a temporary copy; report the repair rate."""
    flags = {"workers": workers, "models": model or None, "api_base": api_base}
    _guarded(lambda: _bench(cases_dir, flags, timeout, as_json))


def _bench(cases_dir: Path, flags: Dict[str, Any], timeout: Optional[float], as_json: bool) -> int:
    from repairloop.integrations.bench import markdown_table, run_bench, settings_for_bench, totals

    settings_for_bench(flags)
    console = _console()

    def progress(case: Any) -> None:
        console.print(f"- {case.name}: {case.outcome} ({case.stop_reason}, {case.seconds:.1f}s)")

    results = run_bench(cases_dir, {k: v for k, v in flags.items() if v is not None}, timeout=timeout, on_case=progress)
    if as_json:
        document = {"cases": [r.to_json() for r in results], "totals": totals(results)}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(markdown_table(results) + "\n")
    return int(ExitCode.OK)


def main(argv: Optional[List[str]] = None) -> int:
    """Console-script entry point; returns the exit code."""
    try:
        app(args=argv, standalone_mode=True)
    except SystemExit as done:
        return int(done.code or 0)
    return 0
