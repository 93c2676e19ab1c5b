"""``repairloop bench``: run a bench (``bench CASES_DIR`` or ``bench run CASES_DIR``) and ``bench
merge DIR...``.

A typer group whose default command is ``run``: ``repairloop bench fixtures/bench``
keeps working as before ``merge`` existed (a cases directory literally named
``merge`` is ``./merge``). Progress goes to stderr, a bar on a terminal and one
line per case everywhere, so ``--json`` stays one document on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, List, Optional

import typer
from typer.core import TyperGroup

from repairloop.cli.common import check_usage, err_console, guarded, warn_unknown_env
from repairloop.types import ExitCode


class BenchGroup(TyperGroup):
    """A group that runs ``run`` when the first argument is not one of its commands (or a help
    option)."""

    def parse_args(self, ctx: Any, args: List[str]) -> List[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return list(super().parse_args(ctx, args))


bench_app = typer.Typer(
    cls=BenchGroup,
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Run the loop over a directory of repair cases and measure it; merge the shards of a "
    "bench.",
)


class BenchProgress:
    """Cases done, fixed so far, elapsed and estimated time left, on the stderr console.

    A bar on a terminal; one line per finished case everywhere (CI logs have no
    terminal). The time left is the mean seconds per case so far times the cases left.
    """

    def __init__(self, console: Any, clock: Any = time.monotonic) -> None:
        self.console, self.clock = console, clock
        self.started, self.total, self.done, self.fixed = clock(), 0, 0, 0
        self.progress: Any = None
        self.task: Any = None

    def start(self, cases: List[Any]) -> None:
        self.started, self.total = self.clock(), len(cases)
        self.console.print(f"bench: {self.total} case(s)")
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn("bench"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("cases,"),
                TextColumn("{task.fields[fixed]} fixed,"),
                TimeElapsedColumn(),
                TextColumn("elapsed, {task.fields[left]} left"),
                console=self.console,
                transient=True,
            )
            self.task = self.progress.add_task("bench", total=self.total, fixed=0, left="unknown")
            self.progress.start()

    def case_done(self, row: Any) -> None:
        self.done += 1
        self.fixed += row.outcome == "fixed"
        elapsed = self.clock() - self.started
        left = _clock_text(elapsed / self.done * (self.total - self.done))
        judged = (
            ""
            if row.correct is None
            else "; correct"
            if row.correct
            else f"; NOT correct: {row.judge_detail}"
        )
        line = (
            f"[{self.done}/{self.total}] {row.name}: {row.outcome} ({row.stop_reason}, "
            f"{row.seconds:.1f}s){judged}"
            f" | fixed so far {self.fixed}, elapsed {_clock_text(elapsed)}, about {left} left"
        )
        target = self.progress.console if self.progress is not None else self.console
        target.print(line)
        if self.progress is not None:
            self.progress.update(self.task, advance=1, fixed=self.fixed, left=left)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _clock_text(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@bench_app.command("run")
def run(
    cases_dir: Path = typer.Argument(
        ..., help="Directory of cases (each a project with a case.toml)."
    ),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="Offline engine: candidates validated in parallel."
    ),
    warm: Optional[bool] = typer.Option(
        None,
        "--warm/--no-warm",
        help="Validate candidates in a warm test process "
        "(default) or each in a fresh one; the environment's REPAIRLOOP_WARM is "
        "ignored, like every setting from the environment.",
    ),
    model: Optional[List[str]] = typer.Option(
        None, "--model", "-m", help="Model chain (default: the offline engine)."
    ),
    api_base: Optional[str] = typer.Option(
        None, "--api-base", help="OpenAI-compatible server URL."
    ),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", help="Seconds per case (a case.toml timeout may lower it)."
    ),
    keep: Optional[Path] = typer.Option(
        None,
        "--keep",
        metavar="DIR",
        help="Keep each case's run in DIR/<case> (`repairloop report DIR/<case>`), "
        "and the result in DIR/bench.json and DIR/bench.md. DIR must be new or empty.",
    ),
    shard: Optional[str] = typer.Option(
        None,
        "--shard",
        metavar="I/N",
        help="Run only the I-th of N slices of the cases "
        "(every N-th case by name); `bench merge` combines the shards.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON document instead of a Markdown table."
    ),
) -> None:
    """Run the loop on every case of CASES_DIR, each in a temporary copy; report plausible and
    correct patches."""
    flags = {"workers": workers, "warm": warm, "models": model or None, "api_base": api_base}
    guarded(lambda: _run(cases_dir, flags, timeout, keep, shard, as_json, model), as_json)


def _run(
    cases_dir: Path,
    flags: Any,
    timeout: Optional[float],
    keep: Optional[Path],
    shard: Optional[str],
    as_json: bool,
    model: Optional[List[str]],
) -> int:
    from repairloop.integrations.bench import (
        BenchOptions,
        markdown_table,
        parse_shard,
        run_bench,
        settings_for_bench,
    )
    from repairloop.settings import check_flags

    check_usage(model=model)
    warn_unknown_env()
    check_flags(flags)  # a ConfigError naming the flag, not pydantic's ValidationError
    settings_for_bench(flags)
    options = BenchOptions(
        {k: v for k, v in flags.items() if v is not None},
        timeout,
        keep,
        parse_shard(shard) if shard is not None else None,
    )
    progress = BenchProgress(err_console())
    try:
        result = run_bench(cases_dir, options, on_start=progress.start, on_case=progress.case_done)
    finally:
        progress.close()
    sys.stdout.write(
        json.dumps(result.to_json(), indent=2) + "\n"
        if as_json
        else markdown_table(result.cases) + "\n"
    )
    return int(ExitCode.OK)


@bench_app.command("merge")
def merge(
    dirs: List[Path] = typer.Argument(
        ..., metavar="DIR...", help="Each shard's --keep directory (or its --json file)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON document instead of a Markdown table."
    ),
) -> None:
    """Combine the shards of one bench (`bench --shard I/N`) into one result: every shard once,
    totals over all cases."""

    def body() -> int:
        from repairloop.integrations.bench import markdown_table
        from repairloop.integrations.bench import merge as merge_shards

        merged = merge_shards(dirs)
        sys.stdout.write(
            json.dumps(merged.to_json(), indent=2) + "\n"
            if as_json
            else markdown_table(merged.cases) + "\n"
        )
        return int(ExitCode.OK)

    guarded(body, as_json)
