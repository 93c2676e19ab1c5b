"""The commands that read past runs back from their journals: ``report``, ``runs``, ``stats``.

Plain functions; ``repairloop.cli`` registers them on the typer app. They never
run tests or change files (apart from ``report --output``'s file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from repairloop.cli.common import guarded, not_a_directory
from repairloop.reports.formats import formats_help
from repairloop.types import ExitCode


def report(
    run_id: Optional[str] = typer.Argument(
        None,
        metavar="[RUN_ID|latest]",
        help="Run id, unique prefix or run directory (default: latest).",
    ),
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    fmt: str = typer.Option("text", "--format", "-f", help=f"One of: {formats_help()}."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write the report to this file instead of stdout."
    ),
) -> None:
    """Explain a run from its journal, iteration by iteration.

    Per iteration: the failure shown, model, tokens, cost, diff, tests, decision.
    """

    def body() -> int:
        from repairloop.reports import find_run, load_run, render

        if not path.is_dir():
            raise not_a_directory(path)
        _emit(render(load_run(find_run(path, run_id)), fmt), output)
        return int(ExitCode.OK)

    guarded(body)


def runs(
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """List the project's runs: id, date, outcome, stop reason, iterations, cost."""

    def body() -> int:
        from repairloop.reports import load_runs, render_runs, run_row

        if not path.is_dir():
            raise not_a_directory(path)
        rows = [run_row(r) for r in load_runs(path)]
        _emit(json.dumps(rows, indent=2) + "\n" if as_json else render_runs(rows), None)
        return int(ExitCode.OK)

    guarded(body, as_json)


def stats(
    path: Path = typer.Option(Path("."), "--project", "-C", help="Project directory."),
    since: Optional[str] = typer.Option(
        None, "--since", help="Only runs started on or after this date (YYYY-MM-DD)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout."),
) -> None:
    """Fix rate, cost per fix, stop reasons and failure kinds over the project's runs.

    Also iterations per fix, and flags faults that keep coming back.
    """

    def body() -> int:
        from repairloop.reports import compute_stats, load_runs, parse_since, render_stats

        if not path.is_dir():
            raise not_a_directory(path)
        figures = compute_stats(load_runs(path, parse_since(since) if since else None))
        _emit(
            json.dumps(figures.to_json(), indent=2) + "\n" if as_json else render_stats(figures),
            None,
        )
        return int(ExitCode.OK)

    guarded(body, as_json)


def _emit(text: str, output: Optional[Path]) -> None:
    """Write a command's document to stdout, or to ``output`` (ProjectError if it cannot be
    written)."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        from repairloop.errors import ProjectError

        raise ProjectError(
            f"cannot write {output}: {err.strerror}", hint="pick a writable path for --output"
        ) from None
