"""Across runs: ``repairloop runs`` (one line per run) and ``repairloop stats``.

Both read only the journals under ``<project>/.repairloop/runs``. The stats
end with a warning when one piece of code keeps being repaired: if more than
10% of the runs end in repairs of the same code, the fault belongs upstream
(a rule from practice: self-repair must not hide a recurring fault).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from repairloop.errors import ConfigError
from repairloop.journal import list_runs
from repairloop.reports.read import load_run
from repairloop.reports.run_report import RunReport
from repairloop.textutil import usd

RECURRING_SHARE = 0.10  # more than this share of runs repairing the same code: fix it upstream
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class)\s")
# Lines that cannot open a block: comments (may sit at any indentation) and the closing bracket
# of a multi-line signature or call (black puts ``) -> int:`` at the definition's indentation).
_NOT_A_BLOCK = re.compile(r"^\s*[#)\]}]")


def load_runs(project: Path, since: Optional[datetime] = None) -> List[RunReport]:
    """Every run of ``project`` started at or after ``since`` (UTC), newest first.

    A run whose journal is damaged raises ProjectError (``journal.read_journal``).
    """
    reports = [load_run(run_dir) for run_dir in list_runs(project)]
    if since is None:
        return reports
    return [r for r in reports if (_started(r) or since) >= since]


def _started(report: RunReport) -> Optional[datetime]:
    try:
        moment = datetime.fromisoformat(report.started)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def parse_since(text: str) -> datetime:
    """``YYYY-MM-DD`` or an ISO 8601 date-time (UTC unless it says otherwise). Raises
    ConfigError."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(
            f"--since {text!r} is not a date", hint="use YYYY-MM-DD, e.g. --since 2024-05-01"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def run_row(report: RunReport) -> Dict[str, Any]:
    """One line of ``repairloop runs``: id, date, outcome, stop reason, iterations, tokens, cost
    (USD)."""
    totals = report.totals
    return {
        "run_id": report.run_id,
        "started": report.started,
        "outcome": report.outcome,
        "stop_reason": report.stop_reason,
        "iterations": totals["iterations"],
        "tokens": totals["prompt_tokens"] + totals["completion_tokens"],
        "cost_usd": totals["cost_usd"],
    }


def render_runs(rows: Sequence[Dict[str, Any]]) -> str:
    """Rows as an aligned plain-text table."""
    if not rows:
        return "no runs\n"
    table = [("run", "started (UTC)", "outcome", "stop reason", "iterations", "cost")]
    for row in rows:
        cost = usd(row["cost_usd"])
        table.append(
            (
                row["run_id"],
                row["started"][:19].replace("T", " "),
                row["outcome"],
                row["stop_reason"] or "-",
                str(row["iterations"]),
                cost,
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return (
        "\n".join(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table
        )
        + "\n"
    )


def repaired_code(patch: str) -> Tuple[str, ...]:
    """Where a patch changes code: one place per run of changed lines, sorted, without repeats.

    A place is ``path: <definition line>``, the innermost ``def``/``class`` enclosing the run's
    first line, e.g. ``calc/ops.py: def total(items):``. It is read from the patch text alone
    (the journal is the source of reports): the hunk's old lines above the change (context and
    removed) when they hold the enclosing definition, else git's hunk heading, else the bare
    path (module-level code, or no heading). The heading alone misleads: it is the last
    definition line above the hunk, the function before the fix when the fixed one's ``def``
    sits in the hunk's context.
    """
    places = set()
    path = ""
    lines = patch.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("+++ "):
            path = line[4:].strip()
            path = path[2:] if path.startswith("b/") else path
            continue
        match = _HUNK.match(line)
        if match and path:
            for owner in _enclosing_definitions(lines[index + 1 :]):
                owner = match.group(2).strip() if owner is None else owner
                places.add(f"{path}: {owner}" if owner else path)
    return tuple(sorted(places))


def _enclosing_definitions(hunk: Sequence[str]) -> List[Optional[str]]:
    """For each run of changed lines in ``hunk`` (the lines after its ``@@`` heading), the
    enclosing ``def``/``class`` line (stripped), ``""`` when the old lines above show module-level
    code, or None when they do not say (the hunk heading then decides)."""
    owners: List[Optional[str]] = []
    old: List[str] = []  # the old file's lines so far: context and removed
    in_change = False
    for line in hunk:
        if line.startswith(("@@", "diff ")):
            break
        if line[:1] in ("+", "-"):
            if not in_change:
                owners.append(_definition_above(line[1:], old))
            in_change = True
        elif not line.startswith("\\"):  # "\ No newline at end of file" does not end a change
            in_change = False
        if line[:1] in (" ", "-") or not line:  # some tools drop a blank context line's space
            old.append(line[1:])
    return owners


def _definition_above(changed: str, context: Sequence[str]) -> Optional[str]:
    """The definition among the ``context`` lines (old file, top down) that encloses ``changed``:
    its line, ``""`` for module level, None when the lines do not say."""
    if _DEFINITION.match(changed):  # the definition line itself changes: the repair is to it
        return changed.strip()
    # A comment or closing bracket says nothing by its indentation: any line above may hold it.
    limit = 1 << 30 if _NOT_A_BLOCK.match(changed) or not changed.strip() else _indent(changed)
    # Walk up: the first line less indented than the change opens the block holding it; a
    # definition is the answer, another block (if/for/with) lowers the limit.
    for code in reversed(context):
        if limit == 0:
            return ""
        if not code.strip() or _NOT_A_BLOCK.match(code) or _indent(code) >= limit:
            continue
        if _DEFINITION.match(code):
            return code.strip()
        limit = _indent(code)
    return "" if limit == 0 else None


def _indent(code: str) -> int:
    return len(code.expandtabs(8)) - len(code.expandtabs(8).lstrip())


@dataclass(frozen=True)
class Stats:
    """Figures over a set of runs. Units: USD, iterations; shares are 0..1."""

    runs: int
    outcomes: Dict[str, int]
    needed_repair: int  # runs that found something to fix
    fixed: int
    fix_rate: Optional[float]  # fixed / needed_repair
    iterations_per_fix: Optional[float]  # every iteration of every run / fixes
    median_iterations_fixed: Optional[float]  # in the runs that fixed
    cost_usd: float  # known USD; runs with unpriced calls add what was priced
    cost_per_fix: Optional[float]  # cost_usd / fixes
    unpriced_runs: int  # runs with at least one call whose model has no price
    stop_reasons: Dict[str, int]
    failure_kinds: Dict[str, int]
    recurring: List[Dict[str, Any]] = field(default_factory=list)  # {code, runs, share}
    upstream: List[str] = field(default_factory=list)  # warnings

    def to_json(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def _count(values: Sequence[str]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def compute_stats(reports: Sequence[RunReport]) -> Stats:
    """Fix rate, iterations and cost per fix, stop reasons, failure kinds and recurring repairs."""
    needed = [r for r in reports if r.outcome != "nothing_to_fix"]
    fixed = [r for r in reports if r.outcome == "fixed"]
    iterations = sum(len(r.iterations) for r in reports)
    costs = [r.totals["cost_usd"] for r in reports]
    cost = sum((c for c in costs if c is not None), 0.0)
    kinds: Dict[str, int] = {}
    for report in reports:
        for kind, n in report.result.failure_kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
    recurring, upstream = _recurring(reports)
    return Stats(
        runs=len(reports),
        outcomes=_count([r.outcome for r in reports]),
        needed_repair=len(needed),
        fixed=len(fixed),
        fix_rate=round(len(fixed) / len(needed), 3) if needed else None,
        iterations_per_fix=round(iterations / len(fixed), 2) if fixed else None,
        median_iterations_fixed=statistics.median(len(r.iterations) for r in fixed)
        if fixed
        else None,
        cost_usd=round(cost, 6),
        cost_per_fix=round(cost / len(fixed), 6) if fixed else None,
        unpriced_runs=sum(c is None for c in costs),
        stop_reasons=_count([r.stop_reason or "-" for r in reports]),
        failure_kinds=dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        recurring=recurring,
        upstream=upstream,
    )


def _recurring(reports: Sequence[RunReport]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Code repaired by more than RECURRING_SHARE of the runs (and by at least two)."""
    repaired = [r for r in reports if r.result.patch and r.outcome in ("fixed", "partially_fixed")]
    places = _count([place for r in repaired for place in repaired_code(r.result.patch or "")])
    recurring, upstream = [], []
    for place, n in places.items():
        share = n / len(reports)
        if n >= 2 and share > RECURRING_SHARE:
            recurring.append({"code": place, "runs": n, "share": round(share, 3)})
            # A definition heading ends with ':' (git's hunk heading); another ':' after it read as
            # '::'.
            upstream.append(
                f"{n} of {len(reports)} runs ({share:.0%}) repaired {place.rstrip(':')}. The fault "
                "keeps coming back, so the problem belongs upstream: fix it at its source (the "
                "code, its generator or the dependency) instead of repairing it run after run"
            )
    return recurring, upstream


def render_stats(stats: Stats) -> str:
    """The stats as plain text."""

    def share(value: Optional[float]) -> str:
        return "-" if value is None else f"{value:.0%}"

    outcomes = ", ".join(f"{k} {n}" for k, n in stats.outcomes.items())
    lines = [
        f"runs: {stats.runs} ({outcomes or 'none'})",
        f"fix rate: {share(stats.fix_rate)} ({stats.fixed} fixed of {stats.needed_repair} runs "
        f"with something to fix)",
        f"iterations per fix: "
        f"{stats.iterations_per_fix if stats.iterations_per_fix is not None else '-'} "
        f"(all iterations / fixes); median in a fixed run: "
        f"{stats.median_iterations_fixed if stats.median_iterations_fixed is not None else '-'}",
        f"cost: {usd(stats.cost_usd)} in all, {usd(stats.cost_per_fix)} per fix"
        + (
            f" ({stats.unpriced_runs} run(s) with unpriced models: their cost is unknown)"
            if stats.unpriced_runs
            else ""
        ),
        "stop reasons: " + (", ".join(f"{k} {n}" for k, n in stats.stop_reasons.items()) or "-"),
        "failure kinds: " + (", ".join(f"{k} {n}" for k, n in stats.failure_kinds.items()) or "-"),
    ]
    lines += [f"upstream: {warning}" for warning in stats.upstream]
    return "\n".join(lines) + "\n"
