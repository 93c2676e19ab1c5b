"""The HTML report: one self-contained file (inline CSS and SVG, no script, no network).

Fit for a CI artifact: it opens offline, from a zip, in any browser. The
content is the Markdown report's, with coloured diffs and a chart of failing
tests and prompt tokens per iteration (``chart.py``). Every piece of journal
text is escaped: answers and test output are untrusted.
"""

from __future__ import annotations

from html import escape
from typing import List

from repairloop.reports.chart import ChartPoint, chart_svg
from repairloop.reports.run_report import IterationReport, RunReport
from repairloop.reports.text import (
    cost_line,
    header_facts,
    similarity,
    tests_said,
    totals_line,
    trim_lines,
)
from repairloop.textutil import usd

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; }
body { color: #1b1f23; padding: 0 1em; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #d5d8dc; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #d5d8dc; padding: 2px 6px; }
td.num { text-align: right; }
ul.facts { list-style: none; padding: 0; }
ul.facts li { margin: 2px 0; }
/* a list of test ids (a::B::c[x-y], ...) wraps instead of widening the page */
li, td, p { overflow-wrap: anywhere; }
pre { background: #f6f8fa; padding: 0.6em; overflow-x: auto; font-size: 0.85em; line-height: 1.35; }
pre.diff span { display: block; }
.add { background: #e6ffec; color: #116329; }
.del { background: #ffebe9; color: #82071e; }
.hunk { color: #6e40c9; } .meta { color: #57606a; font-weight: bold; }
.kept, .fixed, .nothing_to_fix { color: #116329; font-weight: bold; }
.reverted, .partially_fixed { color: #9a6700; font-weight: bold; }
.rejected, .no_candidate, .not_fixed, .unrecoverable, .error, .interrupted {
  color: #82071e; font-weight: bold;
}
.duplicate, .stagnant { color: #6e40c9; font-weight: bold; }
.note { color: #57606a; }
.flag { color: #9a6700; }
"""


def _diff_html(diff: str) -> str:
    """A diff as ``<pre class="diff">``, one coloured span per line."""
    spans = []
    for line in diff.rstrip("\n").splitlines():
        if line.startswith(("+++", "---", "diff --git", "index ")):
            cls = "meta"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        spans.append(f'<span class="{cls}">{escape(line) or " "}</span>')
    return '<pre class="diff">' + "".join(spans) + "</pre>"


def _table(report: RunReport) -> List[str]:
    rows = [
        "<table><tr><th>#</th><th>model</th><th>decision</th><th>failing</th><th>prompt tok</th>"
        "<th>compl. tok</th><th>cost</th><th>model/engine s</th><th>tests s</th><th>sim. "
        "max</th></tr>"
    ]
    for it in report.iterations:
        r, decision = it.record, escape(it.record.decision.value)
        sim = "-" if r.similarity_max is None else f"{r.similarity_max:.2f}"
        failing = "-" if r.tests_failed is None else str(r.tests_failed)
        rows.append(
            f'<tr><td class="num">{r.number}</td><td>{escape(r.model)}</td>'
            f'<td class="{decision}">{decision}</td><td class="num">{failing}</td>'
            f'<td class="num">{r.usage.prompt_tokens:,}</td><td '
            f'class="num">{r.usage.completion_tokens:,}</td>'
            f'<td class="num">{usd(r.usage.cost_usd)}</td><td '
            f'class="num">{r.seconds_model:.2f}</td>'
            f'<td class="num">{r.seconds_tests:.2f}</td><td class="num">{sim}</td></tr>'
        )
    rows.append("</table>")
    return rows


def _iteration(it: IterationReport) -> List[str]:
    r, decision = it.record, escape(it.record.decision.value)
    out = [
        f'<h2 id="iteration-{r.number}">Iteration {r.number}: '
        f'<span class="{decision}">{decision}</span></h2>',
        '<ul class="facts">',
    ]
    facts = [
        f"model: {r.model} ({r.engine}), {r.attempts} attempt(s)",
        "cost: " + cost_line(r),
        f"similarity to earlier candidates: {similarity(r)}",
        f"tests: {tests_said(it)}",
        f"decision: {r.decision.value}: {r.reason}",
    ]
    out += [f"<li>{escape(fact)}</li>" for fact in facts]
    out += [f'<li class="flag">flag: {escape(str(flag))}</li>' for flag in r.flags]
    out += [f'<li class="note">note: {escape(note)}</li>' for note in it.detail.notes]
    out.append("</ul>")
    shown = it.detail.shown
    if shown is not None and (shown.message.strip() or shown.traceback.strip()):
        text = "\n".join(trim_lines(p) for p in (shown.message, shown.traceback) if p.strip())
        out.append(
            f"<p>Shown to the model ({shown.tokens:,} tokens of context"
            + (f"; trimmed: {escape(', '.join(shown.trimmed))}" if shown.trimmed else "")
            + "):</p>"
        )
        out.append(f"<pre>{escape(text)}</pre>")
    if r.diff:
        out += ["<p>Candidate:</p>", _diff_html(r.diff)]
    return out


def render_html(report: RunReport) -> str:
    """The whole report as one HTML document (text)."""
    title = f"repairloop run {report.run_id}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    facts = header_facts(report) + ["totals: " + totals_line(report)]
    out.append('<ul class="facts">' + "".join(f"<li>{escape(f)}</li>" for f in facts) + "</ul>")
    out.append(
        f'<p>Outcome: <span class="{escape(report.outcome)}">{escape(report.outcome)}</span></p>'
    )
    points = [
        ChartPoint(r.number, r.tests_failed, r.usage.prompt_tokens)
        for r in report.result.iterations
    ]
    baseline = (
        len(report.baseline.failing)
        if report.baseline is not None and report.baseline.failing
        else None
    )
    svg = chart_svg(points, baseline)
    if svg:
        out += ["<h2>Failing tests and prompt tokens per iteration</h2>", svg] + _table(report)
    else:
        out.append("<p>No iterations: the run stopped before asking for a candidate.</p>")
    for it in report.iterations:
        out += _iteration(it)
    notes = [f"note: {n}" for n in report.notes] + [f"warning: {w}" for w in report.warnings]
    if notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    out.append("<h2>Final patch</h2>")
    patch = report.result.patch
    out.append(_diff_html(patch) if patch else "<p>No patch.</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
