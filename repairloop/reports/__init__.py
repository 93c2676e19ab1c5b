"""Reports read back from run journals: one run (text, Markdown, JSON, HTML), the list of runs, stats.

Reads only ``<project>/.repairloop/runs/`` (``journal.py``'s reading side);
never runs tests or models. Public API::

    report = load_run(resolve_run(project, "latest"))
    text = render(report, "html")
    rows = [run_row(r) for r in load_runs(project)]
    stats = compute_stats(load_runs(project, since=parse_since("2024-05-01")))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from repairloop.errors import ConfigError
from repairloop.journal import JOURNAL, Shown, resolve_run
from repairloop.reports.model import IterationReport, RunReport, load_run
from repairloop.reports.stats import Stats, compute_stats, load_runs, parse_since, render_runs, render_stats, run_row

FORMATS = ("text", "md", "json", "html")

__all__ = [
    "FORMATS", "IterationReport", "RunReport", "Shown", "Stats", "compute_stats", "find_run", "load_run",
    "load_runs", "parse_since", "render", "render_runs", "render_stats", "run_row",
]


def render(report: RunReport, fmt: str = "text") -> str:
    """``report`` in one of FORMATS (text). Raises ConfigError for an unknown format."""
    if fmt == "text":
        from repairloop.reports.text import render_text

        return render_text(report)
    if fmt == "md":
        from repairloop.reports.text import render_markdown

        return render_markdown(report)
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "html":
        from repairloop.reports.html import render_html

        return render_html(report)
    raise ConfigError(f"unknown report format {fmt!r}", hint=f"use one of: {', '.join(FORMATS)}")


def find_run(project: Path, ref: Optional[str]) -> Path:
    """The run directory for ``ref``: ``latest``/None, a run id or unique prefix, or a run directory's path.

    Raises ProjectError when there is no such run (``journal.resolve_run``).
    """
    if ref and ref != "latest":
        candidate = Path(ref)
        if (candidate / JOURNAL).is_file():
            return candidate
    return resolve_run(project, ref)
