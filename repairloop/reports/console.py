"""The console (rich, on stderr): loop events as they come, the final panel, ``classify``'s list.

Only this module and ``cli/`` touch rich. Colour is off when the stream is not
a terminal or ``NO_COLOR`` is set; the text is then plain. The final panel is
also the ``console`` report format (``render_console``): the panel a run ended
with, drawn again from its journal.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

from repairloop.reports.run_report import RunReport, RunStatus
from repairloop.textutil import usd
from repairloop.types import (
    Decision,
    Failure,
    IterationEnded,
    LoopEvent,
    Outcome,
    PhaseStarted,
    RunNote,
    RunResult,
    TestReport,
)

if TYPE_CHECKING:
    from rich.console import Console
# rich itself is imported where it draws: ``repairloop --help`` lists the report formats without it.

_DECISION_STYLE = {
    Decision.KEPT: "green",
    Decision.REVERTED: "yellow",
    Decision.REJECTED: "red",
    Decision.DUPLICATE: "magenta",
    Decision.STAGNANT: "magenta",
    Decision.NO_CANDIDATE: "red",
}

_OUTCOME_STYLE = {
    Outcome.FIXED: "green",
    Outcome.NOTHING_TO_FIX: "green",
    Outcome.PARTIALLY_FIXED: "yellow",
    Outcome.NOT_FIXED: "red",
    Outcome.UNRECOVERABLE: "red",
}


def make_console(stream: Any = None) -> Console:
    """A console on stderr; plain text when not a terminal or NO_COLOR is set."""
    from rich.console import Console

    stream = stream or sys.stderr
    plain = bool(os.environ.get("NO_COLOR")) or not getattr(stream, "isatty", lambda: False)()
    piped = not getattr(stream, "isatty", lambda: False)()
    # Piped output is read by programs and logs: wide, so paths and test ids stay on one line.
    # markup=False: test ids such as test_x[a-b] must not be read as rich markup tags.
    return Console(
        file=stream,
        no_color=plain,
        highlight=False,
        markup=False,
        width=160 if piped else None,
        force_terminal=None if not plain else False,
    )


class ConsoleRenderer:
    """Shows loop events as they come: phases with a spinner on a terminal, a line per iteration."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.status: Optional[Any] = None

    def __call__(self, event: LoopEvent) -> None:
        if isinstance(event, PhaseStarted):
            self._phase(event.message)
            return
        self._stop_status()
        if isinstance(event, RunNote):
            self.console.print(f"  {event.message}")
        elif isinstance(event, IterationEnded):
            from rich.text import Text

            it = event.iteration
            style = _DECISION_STYLE.get(it.decision, "")
            sim = "" if it.similarity_max is None else f" sim={it.similarity_max:.2f}"
            cost = "" if it.usage.cost_usd in (None, 0) else f" ${it.usage.cost_usd:.4f}"
            line = Text(f"  #{it.number} {it.model}: ")
            line.append(it.decision.value, style=style)
            line.append(f" ({it.usage.tokens} tok{cost}, {it.seconds_total:.1f}s{sim}) {it.reason}")
            for (
                flag
            ) in it.flags:  # guard flags: test edits, scratch files dropped, suspected overfitting
                line.append(f"\n    {flag}", style="yellow")
            self.console.print(line)

    def _phase(self, message: str) -> None:
        self._stop_status()
        if self.console.is_terminal:
            self.status = self.console.status(message)
            self.status.start()
        else:
            self.console.print(f"- {message}")

    def _stop_status(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        self._stop_status()


def render_result(console: Console, result: RunResult, *, show_patch: bool = True) -> None:
    """The final panel of a live run: outcome, stop reason, totals, where the run is kept, and the
    diff.

    ``show_patch`` False leaves the diff out when the user has already been shown it
    (the --apply question, the CI summary), so a patch is printed once.
    """
    print_panel(console, RunReport.of(result), show_patch=show_patch)


def render_console(report: RunReport) -> str:
    """The ``console`` report format: the final panel as plain text (no colour, 160 columns)."""
    buffer = io.StringIO()
    print_panel(make_console(buffer), report)
    return buffer.getvalue()


def print_panel(console: Console, report: RunReport, *, show_patch: bool = True) -> None:
    """The final panel of ``report``, live or read from a journal (see ``render_result``)."""
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    result = report.result
    # the run's own figures (a journal's last line may come later: an --apply)
    totals = result.totals
    cost = totals["cost_usd"]
    # Guard warnings (test edits allowed, suspected overfitting) come right under the outcome.
    warnings = [n for n in result.notes if n.startswith("WARNING")]
    lines = [
        f"outcome: {report.outcome}",
        *warnings,
        f"stopped: {report.stop_reason} ({report.stop_detail})",
        f"iterations: {totals['iterations']}, tokens: "
        f"{totals['prompt_tokens'] + totals['completion_tokens']:,}, "
        f"cost: {usd(cost)}, time: {totals['seconds']['total']:.1f}s",
    ]
    if result.fixed_tests:
        lines.append("fixed: " + _some(result.fixed_tests))
    if result.still_failing:
        lines.append(_still_failing(result))
    if result.flaky_tests:
        lines.append("flaky (left alone): " + _some(result.flaky_tests))
    for note in result.notes:
        if not note.startswith("WARNING"):
            lines.append(note)
    stopped = report.status is RunStatus.STOPPED
    if stopped and result.evidence.plausible:
        lines.append("evidence: " + result.evidence.summary())
    if result.patch:
        lines.append(
            f"patch: {result.run_dir}/fix.patch" + (" (applied)" if result.applied else "")
        )
    lines.append(f"run: {result.run_dir}")
    style = "yellow" if warnings else _OUTCOME_STYLE.get(result.outcome, "") if stopped else "red"
    body = Text()
    for index, line in enumerate(lines):
        body.append(("\n" if index else "") + line, style="bold yellow" if line in warnings else "")
    console.print(Panel(body, title="repairloop", border_style=style, expand=False))
    if result.patch and show_patch:
        console.print(Syntax(result.patch, "diff", theme="ansi_dark", background_color="default"))


def _some(names: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def render_classification(
    console: Console, report: TestReport, failures: Sequence[Failure], kind: str
) -> None:
    """``repairloop classify`` as text: the summary line, then one block per failure."""
    counts = ", ".join(f"{n} {name}" for name, n in summary_counts(report).items())
    console.print(f"{counts} -> kind: {kind}")
    for f in failures:
        where = f" at {f.location}" if f.location else ""
        console.print(
            f"- {f.test_id}: {f.kind.value}{where}" + ("" if f.retryable else " (blocking)")
        )
        if f.message:
            console.print(f"    {f.message.splitlines()[0][:200]}")
        if f.hint:
            console.print(f"    hint: {f.hint}")


def summary_counts(report: TestReport) -> Dict[str, int]:
    """passed, failed, errors, skipped counts of one test report."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for r in report.results:
        key = {"passed": "passed", "xpassed": "passed", "failed": "failed", "error": "errors"}.get(
            r.outcome.value, "skipped"
        )
        counts[key] += 1
    return counts


def _still_failing(result: RunResult) -> str:
    """The panel's line of the tests still failing and, for a partial fix, the function they all
    run (``RunResult.shared_fault``)."""
    where = f" ({result.shared_fault})" if result.shared_fault else ""
    return "still failing: " + _some(result.still_failing) + where
