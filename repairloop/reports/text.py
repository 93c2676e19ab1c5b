"""Plain-text and Markdown renderings of a RunReport (``report --format text|md``).

Both show, per iteration: the failure the model was shown (trimmed to a few
lines), model, tokens, cost, seconds, the candidate diff, what the tests said,
the similarity to earlier candidates and the decision with its reason; then
the outcome, stop reason, totals and the final patch. Plain strings, no rich:
the output goes to files and CI logs as often as to a terminal.
"""

from __future__ import annotations

from typing import Any, Dict, List

from repairloop.reports.model import IterationReport, RunReport
from repairloop.textutil import fence, usd

SHOWN_LINES = 8  # lines of the failure message and of the traceback kept in text reports


def trim_lines(text: str, limit: int = SHOWN_LINES) -> str:
    """The first ``limit`` lines of ``text``, and a note saying how many were left out."""
    lines = text.strip("\n").splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit] + [f"... ({len(lines) - limit} more lines in the journal)"])


def similarity(it: IterationReport) -> str:
    """``previous 0.66, max 0.97`` or ``first candidate``."""
    if it.similarity_to_previous is None and it.similarity_max is None:
        return "first candidate" if it.diff else "no candidate"
    prev = "-" if it.similarity_to_previous is None else f"{it.similarity_to_previous:.2f}"
    high = "-" if it.similarity_max is None else f"{it.similarity_max:.2f}"
    return f"previous {prev}, max {high}"


def tests_said(it: IterationReport) -> str:
    """What the test runs of this candidate said, in one line."""
    tests = it.tests
    if not tests:
        return "not run (the candidate was never tested)" if it.decision != "kept" else "not recorded"
    failing = tests.get("failing") or []
    text = f"{tests.get('passed', 0)} passed, {len(failing)} failing (exit {tests.get('exit_code')}, {tests.get('seconds', 0)} s)"
    if tests.get("timed_out"):
        text += ", timed out"
    if it.fixed:
        text += "; fixed " + ", ".join(it.fixed)
    if it.broke:
        text += "; broke " + ", ".join(it.broke)
    return text


def cost_line(it: IterationReport) -> str:
    return (f"{it.prompt_tokens:,} prompt + {it.completion_tokens:,} completion tokens, {usd(it.cost_usd)}; "
            f"seconds: model {it.seconds_model:.2f}, tests {it.seconds_tests:.2f}, total {it.seconds_total:.2f}")


def totals_line(report: RunReport) -> str:
    t = report.totals
    run = "?" if t["seconds"]["total"] is None else f"{t['seconds']['total']:.1f}"
    return (f"{t['iterations']} iterations, {t['model_calls']} model calls, {t['prompt_tokens']:,} prompt + "
            f"{t['completion_tokens']:,} completion tokens, cost {usd(t['cost_usd'])}; seconds: model "
            f"{t['seconds']['model']:.1f}, tests {t['seconds']['tests']:.1f}, run {run}")


def baseline_line(report: RunReport) -> str:
    base = report.baseline
    if not base:
        return "no baseline recorded"
    failing = base.get("failing") or []
    text = f"{base.get('passed', 0)} passed, {len(failing)} failing (exit {base.get('exit_code')}, {base.get('seconds', 0)} s)"
    return text + (": " + ", ".join(failing[:10]) if failing else "")


def header_facts(report: RunReport) -> List[str]:
    """The lines shared by every format's header."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.failure_kinds.items())) or "none"
    facts = [
        f"project: {report.project}",
        f"started: {report.started}",
        f"model chain: {', '.join(report.chain) or '-'}",
        f"outcome: {report.outcome}",
        f"stopped: {report.stop_reason}" + (f" ({report.stop_detail})" if report.stop_detail else ""),
        f"baseline: {baseline_line(report)}",
        f"failure kinds: {kinds}",
    ]
    if report.flaky:
        facts.append("flaky (left alone): " + ", ".join(report.flaky))
    return facts


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def render_text(report: RunReport) -> str:
    """The report as plain text."""
    out = [f"repairloop run {report.run_id}"] + header_facts(report)
    for it in report.iterations:
        out.append("")
        out.append(f"iteration {it.number}: {it.model} ({it.engine}) -> {it.decision}")
        out.extend(_text_iteration(it))
    out += ["", "totals: " + totals_line(report)]
    out += [f"note: {n}" for n in report.notes] + [f"warning: {w}" for w in report.warnings]
    out += ["", "final patch:" if report.patch else "final patch: none"]
    if report.patch:
        out.append(_indent(report.patch.rstrip("\n")))
    return "\n".join(out) + "\n"


def _text_iteration(it: IterationReport) -> List[str]:
    lines = []
    if it.shown is not None:
        shown = it.shown
        lines.append(f"  shown: {len(shown.failing_tests)} failing test(s), {shown.tokens:,} tokens of context"
                     + (f", trimmed: {', '.join(shown.trimmed)}" if shown.trimmed else ""))
        for part in (shown.message, shown.traceback):
            if part.strip():
                lines.append(_indent(trim_lines(part), "    | "))
    lines.append("  cost: " + cost_line(it))
    lines.append(f"  similarity to earlier candidates: {similarity(it)}")
    lines.append(f"  tests: {tests_said(it)}")
    lines.append(f"  decision: {it.decision}: {it.reason}")
    lines += [f"  flag: {f}" for f in it.flags] + [f"  note: {n}" for n in it.notes]
    if it.diff:
        lines.append("  candidate:")
        lines.append(_indent(it.diff.rstrip("\n")))
    return lines


def render_markdown(report: RunReport) -> str:
    """The report as Markdown: a summary list, a table of iterations, then one section each."""
    out = [f"# repairloop run {report.run_id}", ""] + [f"- {fact}" for fact in header_facts(report)]
    out += ["- totals: " + totals_line(report), ""]
    if report.iterations:
        out += ["| # | model | decision | failing | prompt tok | compl. tok | cost | model s | tests s | sim. max |",
                "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for it in report.iterations:
            sim = "-" if it.similarity_max is None else f"{it.similarity_max:.2f}"
            failing = "-" if it.tests_failed is None else str(it.tests_failed)
            out.append(f"| {it.number} | {it.model} | {it.decision} | {failing} | {it.prompt_tokens:,} | "
                       f"{it.completion_tokens:,} | {usd(it.cost_usd)} | {it.seconds_model:.2f} | "
                       f"{it.seconds_tests:.2f} | {sim} |")
        out.append("")
    for it in report.iterations:
        out += _md_iteration(it)
    out += [f"> note: {n}" for n in report.notes] + [f"> warning: {w}" for w in report.warnings]
    out += ["", "## Final patch", ""]
    out.append(fence(report.patch.rstrip(), "diff") if report.patch else "No patch.")
    return "\n".join(out) + "\n"


def _md_iteration(it: IterationReport) -> List[str]:
    out = [f"## Iteration {it.number}: {it.decision}", ""]
    out.append(f"- model: {it.model} ({it.engine}), {it.attempts} attempt(s)")
    out.append("- cost: " + cost_line(it))
    out.append(f"- similarity to earlier candidates: {similarity(it)}")
    out.append(f"- tests: {tests_said(it)}")
    out.append(f"- decision: **{it.decision}**: {it.reason}")
    out += [f"- flag: {f}" for f in it.flags] + [f"- note: {n}" for n in it.notes]
    if it.shown is not None and (it.shown.message.strip() or it.shown.traceback.strip()):
        shown = "\n".join(trim_lines(p) for p in (it.shown.message, it.shown.traceback) if p.strip())
        out += ["", f"Shown to the model ({it.shown.tokens:,} tokens of context):", "", fence(shown.rstrip())]
    if it.diff:
        out += ["", "Candidate:", "", fence(it.diff.rstrip(), "diff")]
    out.append("")
    return out


def report_dict(report: RunReport) -> Dict[str, Any]:
    """The JSON document of ``report --format json``."""
    return report.to_json()
