"""The stop policy of DESIGN.md as pure functions of the run's history.

Checked after every iteration, first match wins: success, unrecoverable,
budget, stagnation, no progress. Unrecoverable endings (a blocking failure
kind, no model left) are decided by the loop where they happen; this module
owns the rest, plus candidate similarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Tuple

from rapidfuzz import fuzz

from repairloop.types import Decision, Iteration, StopReason, Usage


@dataclass(frozen=True)
class Limits:
    """Budgets and thresholds. None means unlimited; units: tokens, USD, seconds."""

    max_iterations: int = 8
    max_tokens: Optional[int] = None
    max_cost: Optional[float] = None
    timeout: Optional[float] = None
    similarity_threshold: float = 0.90
    patience: int = 3


def similarity(sig_a: str, sig_b: str) -> float:
    """0..1 likeness of two candidate patches: rapidfuzz ``fuzz.ratio`` on their change signatures.

    A signature holds only the changed lines (``patch.change_signature``): full
    diffs move with context size and hunk headers (the same fix scored 0.89
    with one line of context instead of three; TECH-NOTES section 4).
    ``token_set_ratio`` is not used: it calls a patch that does half the work
    identical.
    """
    if not sig_a and not sig_b:
        return 1.0
    return fuzz.ratio(sig_a, sig_b) / 100.0


def similarities(signature: str, earlier: Sequence[str]) -> Tuple[Optional[float], Optional[float]]:
    """(similarity to the previous candidate, highest similarity to any earlier one), by signature."""
    if not earlier:
        return None, None
    scores = [similarity(signature, other) for other in earlier]
    return scores[-1], max(scores)


def is_repeat(signature: str, earlier: Iterable[str]) -> bool:
    """True when a candidate changes exactly what an earlier one changed (it is never re-tested)."""
    return any(signature == other for other in earlier)


def total_usage(history: Sequence[Iteration]) -> Usage:
    usage = Usage()
    for it in history:
        usage = usage + it.usage
    return usage


def known_cost(history: Sequence[Iteration]) -> float:
    """USD spent on priced calls; unpriced calls (cost None) count as 0 against the cost budget."""
    return sum(it.usage.cost_usd or 0.0 for it in history)


def budget_exhausted(
    spent: Usage, elapsed: float, iterations: int, limits: Limits, cost: float = 0.0
) -> Optional[Tuple[StopReason, str]]:
    """The first budget that is used up, with a sentence saying so, or None. ``cost`` is known USD."""
    if iterations >= limits.max_iterations:
        return StopReason.BUDGET_ITERATIONS, f"{iterations} of {limits.max_iterations} iterations used"
    if limits.max_tokens is not None and spent.tokens >= limits.max_tokens:
        return StopReason.BUDGET_TOKENS, f"{spent.tokens:,} of {limits.max_tokens:,} tokens used"
    if limits.max_cost is not None and cost >= limits.max_cost:
        return StopReason.BUDGET_COST, f"${cost:.4f} of ${limits.max_cost:.2f} spent"
    if limits.timeout is not None and elapsed >= limits.timeout:
        return StopReason.BUDGET_TIME, f"{elapsed:.0f} s of {limits.timeout:.0f} s used"
    return None


def no_progress(history: Sequence[Iteration], baseline_failing: int, patience: int) -> bool:
    """True when the last ``patience`` iterations all failed to lower the failing count."""
    if len(history) < patience:
        return False
    best = baseline_failing
    streak = 0
    for it in history:
        if it.decision is Decision.KEPT and it.tests_failed is not None and it.tests_failed < best:
            best = it.tests_failed
            streak = 0
        else:
            streak += 1
    return streak >= patience


def check(
    history: Sequence[Iteration],
    *,
    limits: Limits,
    remaining_failing: int,
    baseline_failing: int,
    elapsed: float,
) -> Optional[Tuple[StopReason, str]]:
    """Decide whether to stop after the latest iteration: (reason, detail) or None.

    ``remaining_failing`` counts the failing tests in the workspace now;
    ``elapsed`` is wall-clock seconds since the run started.
    """
    if remaining_failing == 0:
        return StopReason.SUCCESS, "every failing test passes and nothing that passed fails"
    budget = budget_exhausted(total_usage(history), elapsed, len(history), limits, known_cost(history))
    if budget:
        return budget
    if history and history[-1].decision in (Decision.DUPLICATE, Decision.STAGNANT):
        last = history[-1]
        score = last.similarity_max if last.similarity_max is not None else 1.0
        return StopReason.STAGNATION, (
            f"iteration {last.number} repeated an earlier candidate "
            f"(similarity {score:.2f} >= {limits.similarity_threshold:.2f})"
        )
    if no_progress(history, baseline_failing, limits.patience):
        return StopReason.NO_PROGRESS, f"{limits.patience} iterations in a row without fewer failing tests"
    return None
