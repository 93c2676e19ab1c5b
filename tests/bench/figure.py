"""What a benchmark figure is: a titled table, what it compares, and the targets it is checked
against."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import List, Optional, Sequence


@dataclass(frozen=True)
class Check:
    """One target: its wording, the measured value as text, and whether it was met (None: not
    judged)."""

    target: str
    measured: str
    met: Optional[bool]


@dataclass
class Figure:
    """A figure of BENCHMARKS.md. ``rows[0]`` is the table header."""

    number: int
    title: str
    compares: str
    rows: List[List[str]] = field(default_factory=list)
    checks: List[Check] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    seconds: float = 0.0  # how long measuring it took

    def markdown(self, machine: str) -> str:
        out = [
            f"## {self.number}. {self.title}",
            "",
            f"Compares: {self.compares}",
            "",
            f"Measured on: {machine}.",
            "",
        ]
        if self.rows:
            out.append("| " + " | ".join(self.rows[0]) + " |")
            out.append("| " + " | ".join("---" for _ in self.rows[0]) + " |")
            out += ["| " + " | ".join(row) + " |" for row in self.rows[1:]]
            out.append("")
        for check in self.checks:
            out.append(
                f"- target: {check.target}; measured: {check.measured}; **{verdict(check.met)}**"
            )
        out += [f"- {note}" for note in self.notes]
        if self.seconds:
            out += ["", f"(measuring this figure took {self.seconds:.0f} s)"]
        out.append("")
        return "\n".join(out)


def verdict(met: Optional[bool]) -> str:
    return {True: "met", False: "not met", None: "not judged"}[met]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def pct(value: float) -> str:
    return f"{value * 100:.1f}%"
