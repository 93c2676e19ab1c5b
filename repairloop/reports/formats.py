"""The output formats of a run's report: each registers here, once; ``report --format`` lists them.

A format is a name, one line of help, and a function from a ``RunReport`` to
text. Every format renders the one model, so a live result
(``RunReport.of(result)``) and a run read back from its journal
(``read.load_run``) come out the same way. Adding a format: a module with its
renderer, and one line in ``FORMATS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Tuple

from repairloop.errors import ConfigError
from repairloop.reports.console import render_console
from repairloop.reports.html import render_html
from repairloop.reports.jsondoc import render_json
from repairloop.reports.run_report import RunReport
from repairloop.reports.text import render_markdown, render_text


@dataclass(frozen=True)
class Format:
    """One output format: ``name`` for ``--format``, a line of ``help``, and its renderer."""

    name: str
    help: str
    render: Callable[[RunReport], str]


FORMATS: Tuple[Format, ...] = (
    Format("text", "plain text", render_text),
    Format("md", "Markdown", render_markdown),
    Format("json", "one JSON document", render_json),
    Format("html", "one self-contained HTML file with a chart", render_html),
    Format("console", "the panel `repairloop run` ends with", render_console),
)


def format_names() -> Tuple[str, ...]:
    return tuple(f.name for f in FORMATS)


def formats_help() -> str:
    """The formats for ``--help``: ``text (plain text, the default), md (Markdown), ...``."""
    return ", ".join(f"{f.name} ({f.help})" for f in FORMATS)


def render(report: RunReport, fmt: str = "text") -> str:
    """``report`` in the format named ``fmt``. Raises ConfigError for a name not in FORMATS."""
    for candidate in FORMATS:
        if candidate.name == fmt:
            return candidate.render(report)
    raise ConfigError(
        f"unknown report format {fmt!r}", hint=f"use one of: {', '.join(format_names())}"
    )
