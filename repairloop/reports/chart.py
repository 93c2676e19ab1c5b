"""A small inline SVG chart: failing tests and prompt tokens per iteration.

Hand-written SVG, no library and no script: the HTML report must be one
self-contained file that renders offline (a CI artifact). Failing tests use
the left axis, prompt tokens the right one; every iteration is one point of
each series, with a ``<title>`` tooltip giving its exact values.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import List, Optional, Sequence

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 64, 34, 40  # margins, pixels
FAILING_COLOUR, TOKENS_COLOUR, GRID_COLOUR = "#c0392b", "#1f6fb2", "#d5d8dc"


@dataclass(frozen=True)
class ChartPoint:
    """One iteration: its number, failing tests after it (None: unknown) and prompt tokens."""

    iteration: int
    failing: Optional[int]
    prompt_tokens: int


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= value (axis maximum)."""
    if value <= 0:
        return 1.0
    power = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


class _Frame:
    """Maps iteration numbers and values to pixel coordinates."""

    def __init__(self, count: int, max_failing: float, max_tokens: float) -> None:
        self.count = count
        self.max_failing, self.max_tokens = max_failing, max_tokens
        self.plot_w, self.plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(self, index: int) -> float:
        if self.count == 1:
            return LEFT + self.plot_w / 2
        return LEFT + self.plot_w * index / (self.count - 1)

    def y(self, value: float, maximum: float) -> float:
        return TOP + self.plot_h * (1 - value / maximum)


def _axes(frame: _Frame, points: Sequence[ChartPoint]) -> List[str]:
    parts = []
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    for share in (0.0, 0.5, 1.0):
        y = TOP + frame.plot_h * (1 - share)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="{GRID_COLOUR}"/>'
        )
        failing = frame.max_failing * share
        if failing == int(failing):  # tests come whole: no "0.5 failing" tick
            parts.append(
                f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{FAILING_COLOUR}">'
                f"{_fmt(failing)}</text>"
            )
        parts.append(
            f'<text x="{right + 6}" y="{y + 4:.1f}" '
            f'fill="{TOKENS_COLOUR}">{_fmt(frame.max_tokens * share)}</text>'
        )
    every = max(1, len(points) // 12)  # at most about a dozen labels under the axis
    for index, point in enumerate(points):
        if index % every == 0 or index == len(points) - 1:
            parts.append(
                f'<text x="{frame.x(index):.1f}" y="{bottom + 16}" '
                f'text-anchor="middle">{point.iteration}</text>'
            )
    parts.append(
        f'<text x="{LEFT + frame.plot_w / 2:.1f}" y="{HEIGHT - 6}" '
        f'text-anchor="middle">iteration</text>'
    )
    return parts


def _series(frame: _Frame, points: Sequence[ChartPoint], failing: bool) -> List[str]:
    colour, name = (FAILING_COLOUR, "failing") if failing else (TOKENS_COLOUR, "tokens")
    coords = []
    circles = []
    for index, point in enumerate(points):
        value = point.failing if failing else point.prompt_tokens
        if value is None:
            continue
        x, y = frame.x(index), frame.y(value, frame.max_failing if failing else frame.max_tokens)
        coords.append(f"{x:.1f},{y:.1f}")
        label = (
            f"iteration {point.iteration}: {value:,} "
            f"{'failing tests' if failing else 'prompt tokens'}"
        )
        circles.append(
            f'<circle class="pt-{name}" data-iteration="{point.iteration}" cx="{x:.1f}" '
            f'cy="{y:.1f}" '
            f'r="4" fill="{colour}"><title>{escape(label)}</title></circle>'
        )
    dash = "" if failing else ' stroke-dasharray="5 3"'
    line = (
        f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} '
        f'points="{" ".join(coords)}"/>'
    )
    return ([line] if len(coords) > 1 else []) + circles


def chart_svg(points: Sequence[ChartPoint], baseline_failing: Optional[int] = None) -> str:
    """An inline ``<svg>`` element (text; no xmlns, HTML5 needs none) with one point per iteration
    per series.

    ``baseline_failing`` (tests failing before the first iteration) widens the
    left axis so that progress shows against where the run started. Returns ""
    when there are no points.
    """
    if not points:
        return ""
    known = [p.failing for p in points if p.failing is not None]
    frame = _Frame(
        len(points),
        _nice_ceiling(max(known + [baseline_failing or 0, 1])),
        _nice_ceiling(max([p.prompt_tokens for p in points] + [1])),
    )
    parts = [
        f'<svg class="chart" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-family="sans-serif" font-size="11" '
        f'aria-label="failing tests and prompt tokens per iteration">',
        "<title>Failing tests (left axis) and prompt tokens (right axis) per iteration</title>",
    ]
    parts += _axes(frame, points)
    parts += _series(frame, points, failing=True)
    parts += _series(frame, points, failing=False)
    parts.append(
        f'<text x="{LEFT}" y="16" fill="{FAILING_COLOUR}">&#9679; failing tests (left)</text>'
    )
    parts.append(
        f'<text x="{LEFT + 170}" y="16" fill="{TOKENS_COLOUR}">&#9679; prompt tokens (right, '
        f"dashed)</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)
