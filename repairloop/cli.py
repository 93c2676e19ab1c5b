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


def _print_version(value: bool) -> None:
    """``--version``: the installed distribution's version (the source tree's when not installed)."""
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
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                      help="Print repairloop's version and exit."),
) -> None:
    # Options before the command (only --version); eager, so nothing else is parsed or imported.
    return None


def _console() -> Any:
    from repairloop.report import make_console

    return make_console()


def _guarded(action: Callable[[], int], as_json: bool = False) -> None:
    """Run a command body; map our errors and Ctrl-C to exit codes with a clear message.

    With ``as_json`` an error also becomes the one JSON document on stdout
    (``{"error": {"kind", "message", "hint", "exit_code"}}``; README, "Use").
    """
    try:
        code = action()
    except RepairloopError as err:
        console = _console()
        console.print(f"repairloop: error: {err.message}")
        if err.hint:
            console.print(f"hint: {err.hint}")
        code = int(err.exit_code)
        if as_json:
            _json_error(_error_kind(type(err).__name__), err.message, err.hint, code)
    except KeyboardInterrupt:
        _console().print("repairloop: interrupted; your files are as they were.")
        code = int(ExitCode.INTERRUPTED)
        if as_json:
            _json_error("interrupted", "interrupted", "repairloop resume continues a run", code)
    except Exception as err:  # a bug of ours: say so plainly, never a bare traceback
        console = _console()
        console.print(f"repairloop: internal error: {type(err).__name__}: {err}")
        console.print("Your files are as they were. The run's journal is under .repairloop/runs/; "
                      "please report this with it (REPAIRLOOP_DEBUG=1 shows the traceback).")
        if os.environ.get("REPAIRLOOP_DEBUG"):
            console.print_exception()
        code = int(ExitCode.NOT_FIXED)
        if as_json:
            _json_error("internal", f"{type(err).__name__}: {err}", "please report this with the run's journal", code)
    raise typer.Exit(code)


def _error_kind(class_name: str) -> str:
    """``ConfigError`` -> ``config``, ``UnrecoverableModelError`` -> ``unrecoverable_model``."""
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name.removesuffix("Error") or class_name).lower()


def _json_error(kind: str, message: str, hint: str, code: int) -> None:
    document = {"error": {"kind": kind, "message": message, "hint": hint, "exit_code": code}}
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def _check_usage(*, model: Optional[List[str]] = None, yes: bool = False, apply: bool = False) -> None:
    """Flag combinations that would otherwise be silently ignored (ConfigError, exit 2)."""
    from repairloop.errors import ConfigError

    if yes and not apply:
        raise ConfigError("--yes was given without --apply; --yes only answers the question --apply asks",
                          hint="add --apply to write the patch to your files without asking, or drop --yes")
    if model and any(not m.strip() for m in model):
        raise ConfigError("--model was given an empty name",
                          hint="pass a model name (--model openai/gpt-4o-mini, --model builtin), "
                               "or leave --model out for the default chain")


def _settings(path: Path, flags: Dict[str, Any]) -> Any:
    from repairloop.settings import load_settings

    if not path.is_dir():
        raise _not_a_directory(path)
    _warn_unknown_env()
    return load_settings(path.resolve(), flags)


def _warn_unknown_env() -> None:
    """One stderr line per REPAIRLOOP_* variable that is no setting (a typo would otherwise do nothing)."""
    from repairloop.settings import unknown_env_warnings

    for warning in unknown_env_warnings(os.environ):
        _console().print(warning)


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
    per_test_timeout: Optional[float] = typer.Option(None, "--per-test-timeout", help="Seconds for one test (pytest)."),
    final_runs: Optional[int] = typer.Option(None, "--final-runs", help="Full-suite runs a fix must pass (flaky check)."),
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
        "per_test_timeout": per_test_timeout,
        "final_runs": final_runs,
        "workers": workers,
        "fallback_to_builtin": False if no_builtin else None,
        "allow_test_edits": True if allow_test_edits else None,
    }
    _guarded(lambda: _run(path, flags, apply=apply, yes=yes, as_json=as_json, model=model), as_json)


def _run(path: Path, flags: Dict[str, Any], *, apply: bool, yes: bool, as_json: bool, model: Optional[List[str]]) -> int:
    from repairloop.loop import iterate

    _check_usage(model=model, yes=yes, apply=apply)
    settings = _settings(path, flags)
    console = _console()
    confirm = None if (yes or not sys.stdin.isatty()) else _Ask(console)
    return _show(console, iterate(settings, path, apply=apply, confirm=confirm), as_json, confirm)


def _show(console: Any, events: Any, as_json: bool, asked: Optional["_Ask"] = None) -> int:
    """Render loop events; print the final panel (and JSON); return the exit code.

    The panel leaves the diff out when the --apply question has shown it already.
    """
    from repairloop.report import ConsoleRenderer, render_result

    renderer = ConsoleRenderer(console)
    result = None
    try:
        for event in events:
            if event.result is not None:
                result = event.result
            renderer(event)
    finally:
        renderer.close()
    if result is None:  # a resume that only settled a finished run's side effects
        return int(ExitCode.OK)
    render_result(console, result, show_patch=asked is None or not asked.shown)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    return int(OUTCOME_EXIT[result.outcome])


@app.command()
def resume(
    run_id: Optional[str] = typer.Argument(None, help="Run id or unique prefix (default: the latest run)."),
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    apply: bool = typer.Option(False, "--apply", help="Write the final patch to your files (asks first on a terminal)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --apply: do not ask."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Continue a killed or interrupted run from its journal, without paying again for recorded answers."""

    def body() -> int:
        from repairloop.loop import resume as resume_run

        if not path.is_dir():
            raise _not_a_directory(path)
        _check_usage(yes=yes, apply=apply)
        console = _console()
        confirm = None if (yes or not sys.stdin.isatty()) else _Ask(console)
        return _show(console, resume_run(path, run_id, apply=apply, confirm=confirm), as_json, confirm)

    _guarded(body, as_json)


@app.command()
def clean(path: Path = PathArg) -> None:
    """Remove workspaces left behind by killed runs (never touches your files)."""

    def body() -> int:
        from repairloop.loop import clean_workspaces

        if not path.is_dir():
            raise _not_a_directory(path)
        removed = clean_workspaces(path.resolve())
        console = _console()
        for item in removed:
            console.print(f"removed {item}")
        console.print(f"{len(removed)} stale workspace(s) removed")
        return int(ExitCode.OK)

    _guarded(body)


def _not_a_directory(path: Path) -> Exception:
    from repairloop.errors import ProjectError

    return ProjectError(f"{path} is not a directory", hint="pass the project's directory")


class _Ask:
    """The --apply question on a terminal: shows the diff, then asks; ``shown`` once it has shown it."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.shown = False

    def __call__(self, diff: str) -> bool:
        from rich.syntax import Syntax

        self.console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
        self.shown = True
        return typer.confirm("Apply this patch to your files?", default=False, err=True)


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
    _guarded(lambda: _classify(path, flags, as_json), as_json)


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
    _guarded(lambda: _bench(cases_dir, flags, timeout, as_json, model), as_json)


def _bench(cases_dir: Path, flags: Dict[str, Any], timeout: Optional[float], as_json: bool,
           model: Optional[List[str]]) -> int:
    from repairloop.integrations.bench import markdown_table, run_bench, settings_for_bench, totals
    from repairloop.settings import check_flags

    _check_usage(model=model)
    _warn_unknown_env()
    check_flags(flags)  # a ConfigError naming the flag, not pydantic's ValidationError
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


@app.command()
def report(
    run_id: Optional[str] = typer.Argument(None, metavar="[RUN_ID|latest]", help="Run id, unique prefix or run directory (default: latest)."),
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, md, json or html (one self-contained file)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file instead of stdout."),
) -> None:
    """Explain a run from its journal: per iteration the failure shown, model, tokens, cost, diff, tests, decision."""

    def body() -> int:
        from repairloop.reports import find_run, load_run, render

        if not path.is_dir():
            raise _not_a_directory(path)
        _emit(render(load_run(find_run(path, run_id)), fmt), output)
        return int(ExitCode.OK)

    _guarded(body)


@app.command()
def runs(
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """List the project's runs: id, date, outcome, stop reason, iterations, cost."""

    def body() -> int:
        from repairloop.reports import load_runs, render_runs, run_row

        if not path.is_dir():
            raise _not_a_directory(path)
        rows = [run_row(r) for r in load_runs(path)]
        _emit(json.dumps(rows, indent=2) + "\n" if as_json else render_runs(rows), None)
        return int(ExitCode.OK)

    _guarded(body, as_json)


@app.command()
def stats(
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    since: Optional[str] = typer.Option(None, "--since", help="Only runs started on or after this date (YYYY-MM-DD)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Fix rate, iterations and cost per fix, stop reasons, failure kinds; flags faults that keep coming back."""

    def body() -> int:
        from repairloop.reports import compute_stats, load_runs, parse_since, render_stats

        if not path.is_dir():
            raise _not_a_directory(path)
        figures = compute_stats(load_runs(path, parse_since(since) if since else None))
        _emit(json.dumps(figures.to_json(), indent=2) + "\n" if as_json else render_stats(figures), None)
        return int(ExitCode.OK)

    _guarded(body, as_json)


def _emit(text: str, output: Optional[Path]) -> None:
    """Write a command's document to stdout, or to ``output`` (ProjectError if it cannot be written)."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        from repairloop.errors import ProjectError

        raise ProjectError(f"cannot write {output}: {err.strerror}", hint="pick a writable path for --output") from None


@app.command()
def hook(
    path: Path = PathArg,
    apply: bool = typer.Option(False, "--apply", help="Write the fix to the working tree (never staged); still exits 1."),
    test_cmd: Optional[str] = typer.Option(None, "--test-cmd", help="Test command (default: python -m pytest)."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Model (litellm name or 'builtin'); repeat for a chain."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server URL."),
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", help="Iteration budget (hook default 3)."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Cost budget in USD (hook default 0.10)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Wall-clock budget, seconds (hook default 120)."),
    test_timeout: Optional[float] = typer.Option(None, "--test-timeout", help="Seconds for one run of the test command."),
) -> None:
    """pre-commit entry point: passing tests exit 0; failing ones get a short repair and exit 1 with the patch."""
    flags = {"test_cmd": test_cmd, "models": model or None, "api_base": api_base, "max_iterations": max_iterations,
             "max_cost": max_cost, "timeout": timeout, "test_timeout": test_timeout}
    _guarded(lambda: _hook(path, flags, apply, model))


def _hook(path: Path, flags: Dict[str, Any], apply: bool, model: Optional[List[str]]) -> int:
    from repairloop.integrations.hook import hook_settings, run_hook
    from repairloop.report import ConsoleRenderer

    _check_usage(model=model)
    if not path.is_dir():
        raise _not_a_directory(path)
    _warn_unknown_env()
    settings = hook_settings(path.resolve(), flags, os.environ)
    renderer = ConsoleRenderer(_console())
    try:
        report = run_hook(settings, path, apply=apply, on_event=renderer)
    finally:
        renderer.close()
    sys.stdout.write("\n".join(report.lines) + "\n")
    return report.exit_code


@app.command()
def ci(
    path: Path = PathArg,
    test_cmd: Optional[str] = typer.Option(None, "--test-cmd", help="Test command (default: python -m pytest)."),
    model: Optional[List[str]] = typer.Option(None, "--model", "-m", help="Model (litellm name or 'builtin'); repeat for a chain."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server URL."),
    max_iterations: Optional[int] = typer.Option(None, "--max-iterations", help="Iteration budget."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token budget (prompt + completion)."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Cost budget in USD."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Wall-clock budget of the whole run, seconds."),
    test_timeout: Optional[float] = typer.Option(None, "--test-timeout", help="Seconds for one run of the test command."),
    push_branch: bool = typer.Option(False, "--push-branch", help="Push a fix as one commit on repairloop/<fingerprint>."),
    open_pr: bool = typer.Option(False, "--open-pr", help="Also open (or update) a pull request; implies --push-branch."),
    remote: str = typer.Option("origin", "--remote", help="Remote to push to."),
    base: Optional[str] = typer.Option(None, "--base", help="Branch the fix targets (default: the CI's branch)."),
    author: Optional[str] = typer.Option(None, "--author", help="Fix commit author, 'Name <email>'."),
    patch_file: Optional[str] = typer.Option(None, "--patch-file", help="Also save the patch here (an artifact path)."),
    summary_file: Optional[str] = typer.Option(None, "--summary-file", help="Also write the Markdown summary here."),
    dotenv: Optional[str] = typer.Option(None, "--dotenv", help="Write the outputs as REPAIRLOOP_*=value lines (GitLab dotenv)."),
    api_timeout: float = typer.Option(30.0, "--api-timeout", help="Seconds per forge API request."),
) -> None:
    """CI entry point: repair, then a summary, outputs, annotations, a patch file; optionally a branch and a pull request."""
    flags = {"test_cmd": test_cmd, "models": model or None, "api_base": api_base, "max_iterations": max_iterations,
             "max_tokens": max_tokens, "max_cost": max_cost, "timeout": timeout, "test_timeout": test_timeout}
    extra = {"push_branch": push_branch or open_pr, "open_pr": open_pr, "remote": remote, "base": base,
             "author": author, "patch_file": patch_file, "summary_file": summary_file, "dotenv_file": dotenv,
             "api_timeout": api_timeout}
    _guarded(lambda: _ci(path, flags, extra, model))


def _ci(path: Path, flags: Dict[str, Any], extra: Dict[str, Any], model: Optional[List[str]]) -> int:
    from repairloop.integrations.ci import CIOptions, run_ci
    from repairloop.integrations.ci_env import GITHUB, detect_system
    from repairloop.report import ConsoleRenderer, render_result

    _check_usage(model=model)
    settings = _settings(path, flags)
    options = CIOptions(**{k: v for k, v in extra.items() if v is not None})
    console = _console()
    renderer = ConsoleRenderer(console)
    try:
        report = run_ci(settings, path, options, environ=os.environ, stdout=sys.stdout, on_event=renderer)
    finally:
        renderer.close()
    if report.result is not None:
        # Outside GitHub the summary, patch included, went to stdout: print the patch once.
        render_result(console, report.result, show_patch=detect_system(os.environ) == GITHUB)
    for line in report.actions:
        console.print(line)
    return report.exit_code


def _terminated(signum: int, frame: Any) -> None:
    # CI systems stop jobs with SIGTERM: unwind like Ctrl-C so the workspace is removed.
    raise KeyboardInterrupt


def main(argv: Optional[List[str]] = None) -> int:
    """Console-script entry point; returns the exit code."""
    import signal
    import threading

    args = list(sys.argv[1:] if argv is None else argv)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        if "--json" in args:
            return _main_json(args)
        app(args=args, standalone_mode=True)
    except SystemExit as done:
        return int(done.code or 0)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


def _main_json(args: List[str]) -> int:
    """Like standalone mode, but a usage error click finds (bad option or value) also prints the JSON error."""
    # click's base exception, whether typer uses click or (typer >= 0.29) its own copy of it.
    click_exception = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        return int(app(args=args, standalone_mode=False) or 0)
    except click_exception as err:  # type: ignore[misc]
        err.show()
        ctx = getattr(err, "ctx", None)
        words = ["repairloop", *(ctx.command_path.split(" ")[1:] if ctx is not None else []), "--help"]
        hint = f"see '{' '.join(words)}'"
        _json_error("usage", err.format_message(), hint, err.exit_code)
        return err.exit_code
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        return int(ExitCode.NOT_FIXED)
