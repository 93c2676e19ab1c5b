"""What a CI run says about itself: the failure fingerprint and the Markdown summary.

The Markdown goes to the GitHub step summary, to a GitLab job log or file, and
is the body of the pull request, so it is written for a reviewer: what failed
and of which kind, what was tried, the patch, and what it cost (tokens, USD,
seconds).
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable, Optional, Sequence

from repairloop.textutil import fence, usd
from repairloop.types import Failure, Iteration, Outcome, RunResult

FINGERPRINT_CHARS = 12
PATCH_LIMIT = 60_000  # characters of patch shown in the Markdown; the file keeps all of it
UNPRICED = "unknown (unpriced model)"  # the cost of a model with no known price

_TITLES = {
    Outcome.FIXED: "a fix for the failing tests",
    Outcome.PARTIALLY_FIXED: "a partial fix for the failing tests",
    Outcome.NOT_FIXED: "no fix found",
    Outcome.NOTHING_TO_FIX: "the tests pass",
    Outcome.UNRECOVERABLE: "a failure no code change in the loop can fix",
}


def fingerprint(failures: Iterable[Failure]) -> str:
    """A short hash (12 hex digits) of the sorted failing test ids and their exception types.

    Stable across runs of the same failure: no messages (they may hold addresses
    or timings), no line numbers. Empty string when nothing failed.
    """
    items = sorted({f"{f.test_id}\0{f.exc_type or f.kind.value}" for f in failures})
    if not items:
        return ""
    return hashlib.sha256("\n".join(items).encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def cell(text: object, limit: int = 160) -> str:
    """Plain text for a Markdown table cell or line: one line, cut to ``limit`` characters, with
    HTML and Markdown's markup characters escaped (test ids and messages are the project's text, and
    the summary also becomes a pull request's body: they must never render as headings, links or
    images)."""
    flat = " ".join(str(text).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # code spans, emphasis, links and images, table cells
    return re.sub(r"([\\`*\[\]!|])", r"\\\1", flat)


def code(text: object, limit: int = 160) -> str:
    """``text`` as an inline code span (one line, cut to ``limit``), fenced with more backticks than
    it holds."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    return f"{fence} {flat} {fence}" if fence != "`" else f"`{flat}`"


def headline(result: RunResult) -> str:
    """One line: the outcome in words, e.g. ``repairloop: a fix for the failing tests``."""
    return f"repairloop: {_TITLES[result.outcome]}"


def _failures_table(failures: Sequence[Failure]) -> str:
    rows = ["| test | kind | where | message |", "| --- | --- | --- | --- |"]
    for f in failures:
        where = f"{code(f.location)}" if f.location else ""
        rows.append(f"| {code(f.test_id)} | {f.kind.value} | {where} | {cell(f.message)} |")
    hints = [f"- {code(f.test_id)}: {cell(f.hint, 300)}" for f in failures if f.hint]
    return "\n".join(rows) + ("\n\nWhat to do:\n" + "\n".join(hints) if hints else "") + "\n"


def _iterations_table(iterations: Sequence[Iteration]) -> str:
    rows = [
        "| # | engine | model | decision | tests failing | tokens | cost | why |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for it in iterations:
        failing = "" if it.tests_failed is None else str(it.tests_failed)
        rows.append(
            f"| {it.number} | {it.engine} | {cell(it.model, 40)} | {it.decision.value} | {failing} "
            f"| {it.usage.tokens:,} | {usd(it.usage.cost_usd, UNPRICED)} | {cell(it.reason)} |"
        )
    return "\n".join(rows) + "\n"


def sandbox_line(result: RunResult) -> str:
    """Where candidate code ran, in one Markdown line (bold when unconfined)."""
    box = result.sandbox
    if box is None:
        return "sandbox: not recorded"
    if not box.confined:
        return f"**WARNING: candidate code ran unconfined**: {cell(box.describe(), 600)}"
    return cell(box.describe(), 600)


def _totals_line(result: RunResult) -> str:
    totals = result.totals
    tokens = totals["prompt_tokens"] + totals["completion_tokens"]
    return (
        f"{totals['iterations']} iteration(s), {tokens:,} tokens "
        f"({totals['prompt_tokens']:,} prompt + {totals['completion_tokens']:,} completion), "
        f"{usd(totals['cost_usd'], UNPRICED)}, {result.seconds:.1f} s"
    )


def markdown_summary(
    result: RunResult,
    *,
    fingerprint_text: str = "",
    patch_path: Optional[str] = None,
    actions: Sequence[str] = (),
) -> str:
    """The whole summary: headline, what failed, what was tried, the patch, totals, actions taken.

    ``actions`` are lines such as "pushed branch …" or "opened pull request …".
    """
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.failure_kinds.items())) or "none"
    parts = [
        f"## {headline(result)}\n",
        f"- outcome: **{result.outcome.value}** "
        f"(stopped: {result.stop_reason.value}: {cell(result.stop_detail, 300)})",
        f"- failing at the start: {len(result.failures)} (kinds: {kinds})"
        + (f"; fingerprint `{fingerprint_text}`" if fingerprint_text else ""),
        f"- spent: {_totals_line(result)}",
        f"- {sandbox_line(result)}\n",
    ]
    if result.failures:
        parts.append("### What failed\n\n" + _failures_table(result.failures))
    if result.iterations:
        parts.append("### What was tried\n\n" + _iterations_table(result.iterations))
    if result.patch:
        fixed = ", ".join(f"{code(t)}" for t in result.fixed_tests) or "none"
        shown = (
            result.patch
            if len(result.patch) <= PATCH_LIMIT
            else result.patch[:PATCH_LIMIT] + "\n… (cut)\n"
        )
        parts.append(
            "### Patch\n\nFixes: "
            + fixed
            + ". Evidence: "
            + result.evidence.summary()
            + ".\n\n"
            + fence(shown.removesuffix("\n"), "diff")
            + "\n"
            + (f"\nSaved as `{patch_path}`.\n" if patch_path else "")
        )
    if result.still_failing:
        parts.append(
            "Still failing: " + ", ".join(f"{code(t)}" for t in result.still_failing) + "\n"
        )
    if actions:
        parts.append("### Actions\n\n" + "\n".join(f"- {a}" for a in actions) + "\n")
    return "\n".join(parts)
