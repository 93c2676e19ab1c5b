"""Reports of runs: one run in every format (text, Markdown, JSON, HTML, the console panel), the
list of runs, stats.

One model, ``RunReport``: the ``RunResult`` of a run and what only its journal
knows (``model.py``), read back from ``<project>/.repairloop/runs/``
(``read.py``, the reading side of ``journal``) or viewing a live result
(``RunReport.of``). The formats register in ``formats.py``; ``console.py`` also
shows a live run as it goes. Reports never run tests or models. Public API::

    report = load_run(find_run(project, "latest"))
    text = render(report, "html")
    rows = [run_row(r) for r in load_runs(project)]
    stats = compute_stats(load_runs(project, since=parse_since("2024-05-01")))
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from repairloop.journal import JOURNAL, Shown, TestsSummary, resolve_run
from repairloop.reports.formats import FORMATS, Format, format_names, formats_help, render
from repairloop.reports.read import describe_event, load_run
from repairloop.reports.run_report import IterationDetail, IterationReport, RunReport, RunStatus
from repairloop.reports.stats import (
    Stats,
    compute_stats,
    load_runs,
    parse_since,
    render_runs,
    render_stats,
    run_row,
)

__all__ = [
    "FORMATS",
    "Format",
    "IterationDetail",
    "IterationReport",
    "RunReport",
    "RunStatus",
    "Shown",
    "Stats",
    "TestsSummary",
    "compute_stats",
    "describe_event",
    "find_run",
    "format_names",
    "formats_help",
    "load_run",
    "load_runs",
    "parse_since",
    "render",
    "render_runs",
    "render_stats",
    "run_row",
]


def find_run(project: Path, ref: Optional[str]) -> Path:
    """The run directory for ``ref``: ``latest``/None, a run id or unique prefix, or a run
    directory's path.

    Raises ProjectError when there is no such run (``journal.resolve_run``).
    """
    if ref and ref != "latest":
        candidate = Path(ref)
        if (candidate / JOURNAL).is_file():
            return candidate
    return resolve_run(project, ref)
