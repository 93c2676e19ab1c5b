"""The commands other tools call: ``hook`` (pre-commit) and ``ci`` (CI jobs); ``bench`` is in
``cli.bench``.

Plain functions; ``repairloop.cli`` registers them on the typer app. Each is a
thin adapter over ``repairloop.integrations``: flags in, a report rendered,
its exit code returned through ``guarded``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import typer

from repairloop.cli.common import (
    PathArg,
    check_usage,
    err_console,
    given_runner,
    guarded,
    not_a_directory,
    print_notices,
    project_settings,
    warn_unknown_env,
)

if TYPE_CHECKING:
    from repairloop.loop.suite import RunnerFactory


def hook(
    ctx: typer.Context,
    path: Path = PathArg,
    apply: bool = typer.Option(
        False, "--apply", help="Write the fix to the working tree (never staged); still exits 1."
    ),
    test_cmd: Optional[str] = typer.Option(
        None, "--test-cmd", help="Test command (default: python -m pytest)."
    ),
    model: Optional[List[str]] = typer.Option(
        None, "--model", "-m", help="Model (litellm name or 'builtin'); repeat for a chain."
    ),
    api_base: Optional[str] = typer.Option(
        None, "--api-base", help="OpenAI-compatible server URL."
    ),
    max_iterations: Optional[int] = typer.Option(
        None, "--max-iterations", help="Iteration budget (hook default 3)."
    ),
    max_cost: Optional[float] = typer.Option(
        None, "--max-cost", help="Cost budget in USD (hook default 0.10)."
    ),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", help="Wall-clock budget, seconds (hook default 120)."
    ),
    test_timeout: Optional[float] = typer.Option(
        None, "--test-timeout", help="Seconds for one run of the test command."
    ),
) -> None:
    """pre-commit entry point: exit 0 when tests pass; else a short repair, the patch, exit 1."""
    flags = {
        "test_cmd": test_cmd,
        "models": model or None,
        "api_base": api_base,
        "max_iterations": max_iterations,
        "max_cost": max_cost,
        "timeout": timeout,
        "test_timeout": test_timeout,
    }
    guarded(lambda: _hook(path, flags, apply, model, given_runner(ctx)))


def _hook(
    path: Path,
    flags: Dict[str, Any],
    apply: bool,
    model: Optional[List[str]],
    runner: Optional["RunnerFactory"] = None,
) -> int:
    from repairloop.integrations.hook import hook_settings, run_hook
    from repairloop.reports.console import ConsoleRenderer

    check_usage(model=model)
    if not path.is_dir():
        raise not_a_directory(path)
    warn_unknown_env()
    layers = hook_settings(path.resolve(), flags, os.environ)
    print_notices(layers.notices)
    settings = layers.settings
    renderer = ConsoleRenderer(err_console())
    try:
        report = run_hook(settings, path, apply=apply, on_event=renderer, runner=runner)
    finally:
        renderer.close()
    sys.stdout.write("\n".join(report.lines) + "\n")
    return report.exit_code


def ci(
    ctx: typer.Context,
    path: Path = PathArg,
    test_cmd: Optional[str] = typer.Option(
        None, "--test-cmd", help="Test command (default: python -m pytest)."
    ),
    model: Optional[List[str]] = typer.Option(
        None, "--model", "-m", help="Model (litellm name or 'builtin'); repeat for a chain."
    ),
    api_base: Optional[str] = typer.Option(
        None, "--api-base", help="OpenAI-compatible server URL."
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
    push_branch: bool = typer.Option(
        False, "--push-branch", help="Push a fix as one commit on repairloop/<fingerprint>."
    ),
    open_pr: bool = typer.Option(
        False, "--open-pr", help="Also open (or update) a pull request; implies --push-branch."
    ),
    remote: str = typer.Option("origin", "--remote", help="Remote to push to."),
    base: Optional[str] = typer.Option(
        None, "--base", help="Branch the fix targets (default: the CI's branch)."
    ),
    author: Optional[str] = typer.Option(
        None, "--author", help="Fix commit author, 'Name <email>'."
    ),
    patch_file: Optional[str] = typer.Option(
        None, "--patch-file", help="Also save the patch here (an artifact path)."
    ),
    summary_file: Optional[str] = typer.Option(
        None, "--summary-file", help="Also write the Markdown summary here."
    ),
    dotenv: Optional[str] = typer.Option(
        None, "--dotenv", help="Write the outputs as REPAIRLOOP_*=value lines (GitLab dotenv)."
    ),
    api_timeout: float = typer.Option(30.0, "--api-timeout", help="Seconds per forge API request."),
    allow_unconfined: Optional[bool] = typer.Option(
        None,
        "--allow-unconfined",
        help="Run on a pull-request event even when no sandbox is usable.",
    ),
) -> None:
    """CI entry point: repair, then a summary, annotations and a patch file; optionally a PR.

    Also the job's outputs, and with --push-branch or --open-pr a branch and a pull request.
    """
    flags = {
        "test_cmd": test_cmd,
        "models": model or None,
        "api_base": api_base,
        "max_iterations": max_iterations,
        "max_tokens": max_tokens,
        "max_cost": max_cost,
        "timeout": timeout,
        "test_timeout": test_timeout,
        "allow_unconfined_pr": allow_unconfined,
    }
    extra = {
        "push_branch": push_branch or open_pr,
        "open_pr": open_pr,
        "remote": remote,
        "base": base,
        "author": author,
        "patch_file": patch_file,
        "summary_file": summary_file,
        "dotenv_file": dotenv,
        "api_timeout": api_timeout,
    }
    guarded(lambda: _ci(path, flags, extra, model, given_runner(ctx)))


def _ci(
    path: Path,
    flags: Dict[str, Any],
    extra: Dict[str, Any],
    model: Optional[List[str]],
    runner: Optional["RunnerFactory"] = None,
) -> int:
    from repairloop.integrations import github_actions
    from repairloop.integrations.ci import CIOptions, run_ci
    from repairloop.integrations.ci_env import GITHUB, detect_system
    from repairloop.reports.console import ConsoleRenderer, render_result

    token = github_actions.stop_commands(sys.stdout) if detect_system(os.environ) == GITHUB else ""
    check_usage(model=model)
    settings = project_settings(path, flags, "ci")
    options = CIOptions(**{k: v for k, v in extra.items() if v is not None}, commands_token=token)
    console = err_console()
    renderer = ConsoleRenderer(console)
    try:
        report = run_ci(
            settings,
            path,
            options,
            environ=os.environ,
            stdout=sys.stdout,
            on_event=renderer,
            runner=runner,
        )
    finally:
        renderer.close()
    if report.result is not None:
        # Outside GitHub the summary, patch included, went to stdout: print the patch once.
        render_result(console, report.result, show_patch=detect_system(os.environ) == GITHUB)
    for line in report.actions:
        console.print(line)
    return report.exit_code
