"""Plain-text and Markdown renderings of a RunReport (``report --format text|md``).

Both show, per iteration: the failure the model was shown (trimmed to a few
lines), model, tokens, cost, seconds, the candidate diff, what the tests said,
the similarity to earlier candidates and the decision with its reason; then
the outcome, stop reason, totals and the final patch. Plain strings, no rich:
the output goes to files and CI logs as often as to a terminal.
"""

from __future__ import annotations

from typing import List

from repairloop.reports.run_report import IterationReport, RunReport
from repairloop.textutil import fence, usd
from repairloop.types import Decision, Iteration

SHOWN_LINES = 8  # lines of the failure message and of the traceback kept in text reports


def trim_lines(text: str, limit: int = SHOWN_LINES) -> str:
    """The first ``limit`` lines of ``text``, and a note saying how many were left out."""
    lines = text.strip("\n").splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit] + [f"... ({len(lines) - limit} more lines in the journal)"])


def similarity(it: Iteration) -> str:
    """``previous 0.66, max 0.97`` or ``first candidate``."""
    if it.similarity_to_previous is None and it.similarity_max is None:
        return "first candidate" if it.diff else "no candidate"
    prev = "-" if it.similarity_to_previous is None else f"{it.similarity_to_previous:.2f}"
    high = "-" if it.similarity_max is None else f"{it.similarity_max:.2f}"
    return f"previous {prev}, max {high}"


def tests_said(it: IterationReport) -> str:
    """What the test runs of this candidate said, in one line."""
    tests, record = it.detail.tests, it.record
    if tests is None:
        return (
            "not run (the candidate was never tested)"
            if record.decision is not Decision.KEPT
            else "not recorded"
        )
    text = (
        f"{tests.passed} passed, {len(tests.failing)} failing (exit {tests.exit_code}, "
        f"{tests.seconds} s)"
    )
    if tests.timed_out:
        text += ", timed out"
    if record.fixed:
        text += "; fixed " + ", ".join(record.fixed)
    if record.broke:
        text += "; broke " + ", ".join(record.broke)
    return text


def cost_line(it: Iteration) -> str:
    return (
        f"{it.usage.prompt_tokens:,} prompt + {it.usage.completion_tokens:,} completion tokens, "
        f"{usd(it.usage.cost_usd)}; seconds: {'engine' if it.engine == 'builtin' else 'model'} "
        f"{it.seconds_model:.2f}, tests {it.seconds_tests:.2f}, total {it.seconds_total:.2f}"
    )


def totals_line(report: RunReport) -> str:
    t = report.totals
    run = "?" if t["seconds"]["total"] is None else f"{t['seconds']['total']:.1f}"
    # the offline engine's time is its own
    engines = any(i.engine == "builtin" for i in report.result.iterations)
    engine = f", engine {t['seconds'].get('engine') or 0.0:.1f}" if engines else ""
    return (
        f"{t['iterations']} iterations, {t['model_calls']} model calls, {t['prompt_tokens']:,} "
        f"prompt + "
        f"{t['completion_tokens']:,} completion tokens, cost {usd(t['cost_usd'])}; seconds: model "
        f"{t['seconds']['model']:.1f}{engine}, tests {t['seconds']['tests']:.1f}, run {run}"
    )


def baseline_line(report: RunReport) -> str:
    base = report.baseline
    if base is None:
        return "no baseline recorded"
    text = (
        f"{base.passed} passed, {len(base.failing)} failing (exit {base.exit_code}, "
        f"{base.seconds} s)"
    )
    return text + (": " + ", ".join(base.failing[:10]) if base.failing else "")


def header_facts(report: RunReport) -> List[str]:
    """The lines shared by every format's header."""
    result = report.result
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.failure_kinds.items())) or "none"
    facts = [
        f"project: {report.project}",
        f"started: {report.started}",
        f"model chain: {', '.join(report.chain) or '-'}",
        f"outcome: {report.outcome}",
        f"stopped: {report.stop_reason}"
        + (f" ({report.stop_detail})" if report.stop_detail else ""),
        f"baseline: {baseline_line(report)}",
        f"failure kinds: {kinds}",
    ]
    if result.flaky_tests:
        facts.append("flaky (left alone): " + ", ".join(result.flaky_tests))
    return facts


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def render_text(report: RunReport) -> str:
    """The report as plain text."""
    out = [f"repairloop run {report.run_id}"] + header_facts(report)
    for it in report.iterations:
        record = it.record
        out.append("")
        out.append(
            f"iteration {record.number}: {record.model} ({record.engine}) -> "
            f"{record.decision.value}"
        )
        out.extend(_text_iteration(it))
    out += ["", "totals: " + totals_line(report)]
    out += [f"note: {n}" for n in report.notes] + [f"warning: {w}" for w in report.warnings]
    patch = report.result.patch
    out += ["", "final patch:" if patch else "final patch: none"]
    if patch:
        out.append(_indent(patch.rstrip("\n")))
    return "\n".join(out) + "\n"


def _text_iteration(it: IterationReport) -> List[str]:
    lines, record, shown = [], it.record, it.detail.shown
    if shown is not None:
        lines.append(
            f"  shown: {len(shown.failing_tests)} failing test(s), {shown.tokens:,} tokens of "
            f"context" + (f", trimmed: {', '.join(shown.trimmed)}" if shown.trimmed else "")
        )
        for part in (shown.message, shown.traceback):
            if part.strip():
                lines.append(_indent(trim_lines(part), "    | "))
    lines.append("  cost: " + cost_line(record))
    lines.append(f"  similarity to earlier candidates: {similarity(record)}")
    lines.append(f"  tests: {tests_said(it)}")
    lines.append(f"  decision: {record.decision.value}: {record.reason}")
    lines += [f"  flag: {f}" for f in record.flags] + [f"  note: {n}" for n in it.detail.notes]
    if record.diff:
        lines.append("  candidate:")
        lines.append(_indent(record.diff.rstrip("\n")))
    return lines


def render_markdown(report: RunReport) -> str:
    """The report as Markdown: a summary list, a table of iterations, then one section each."""
    out = [f"# repairloop run {report.run_id}", ""] + [f"- {fact}" for fact in header_facts(report)]
    out += ["- totals: " + totals_line(report), ""]
    if report.iterations:
        out += [
            "| # | model | decision | failing | prompt tok | compl. tok | cost | model/engine s | "
            "tests s | sim. max |",
            "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for it in report.iterations:
            r = it.record
            sim = "-" if r.similarity_max is None else f"{r.similarity_max:.2f}"
            failing = "-" if r.tests_failed is None else str(r.tests_failed)
            out.append(
                f"| {r.number} | {r.model} | {r.decision.value} | {failing} | "
                f"{r.usage.prompt_tokens:,} | "
                f"{r.usage.completion_tokens:,} | {usd(r.usage.cost_usd)} | {r.seconds_model:.2f} "
                f"| {r.seconds_tests:.2f} | {sim} |"
            )
        out.append("")
    for it in report.iterations:
        out += _md_iteration(it)
    out += [f"> note: {n}" for n in report.notes] + [f"> warning: {w}" for w in report.warnings]
    out += ["", "## Final patch", ""]
    patch = report.result.patch
    out.append(fence(patch.rstrip(), "diff") if patch else "No patch.")
    return "\n".join(out) + "\n"


def _md_iteration(it: IterationReport) -> List[str]:
    record, shown = it.record, it.detail.shown
    out = [f"## Iteration {record.number}: {record.decision.value}", ""]
    out.append(f"- model: {record.model} ({record.engine}), {record.attempts} attempt(s)")
    out.append("- cost: " + cost_line(record))
    out.append(f"- similarity to earlier candidates: {similarity(record)}")
    out.append(f"- tests: {tests_said(it)}")
    out.append(f"- decision: **{record.decision.value}**: {record.reason}")
    out += [f"- flag: {f}" for f in record.flags] + [f"- note: {n}" for n in it.detail.notes]
    if shown is not None and (shown.message.strip() or shown.traceback.strip()):
        text = "\n".join(trim_lines(p) for p in (shown.message, shown.traceback) if p.strip())
        out += [
            "",
            f"Shown to the model ({shown.tokens:,} tokens of context):",
            "",
            fence(text.rstrip()),
        ]
    if record.diff:
        out += ["", "Candidate:", "", fence(record.diff.rstrip(), "diff")]
    out.append("")
    return out
