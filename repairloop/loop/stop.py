"""The stop policy of DESIGN.md: the one place where a run's ending is decided.

The session gathers the facts (``Facts``) and asks ``check`` after every step;
the first match wins: success, interrupted, unrecoverable (no usable model
left), budget, stagnation, no progress. The last two are judged on the current
link's own iterations and hand over to the next link while there is one, so
``builtin`` at the end of the chain gets its turn while budget is left. The
endings before the loop are ``baseline_ending``'s. Candidate similarity, which
stagnation rests on, is judged here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

from rapidfuzz import fuzz

from repairloop.types import Budget, Decision, Iteration, Outcome, StopReason, Usage

_BUDGET_REASON = {
    Budget.ITERATIONS: StopReason.BUDGET_ITERATIONS,
    Budget.TOKENS: StopReason.BUDGET_TOKENS,
    Budget.COST: StopReason.BUDGET_COST,
    Budget.SECONDS: StopReason.BUDGET_TIME,
}


@dataclass(frozen=True)
class Limits:
    """Budgets and thresholds; the settings give every value (their defaults live there only).

    Units: tokens, USD, seconds. ``similarity_threshold`` is 0..1.
    """

    max_iterations: int
    max_tokens: int
    max_cost: float
    timeout: float
    similarity_threshold: float
    patience: int
    downgrade_at: float = 1.0  # share of the token or cost budget after which the chain steps down


@dataclass(frozen=True)
class Refusal:
    """A budget gate refused to send a call: which budget, and the gate's sentence."""

    budget: Budget
    message: str


@dataclass(frozen=True)
class Facts:
    """What the policy decides on, gathered by the session after every step.

    ``link`` is the index of the current link of ``chain`` (``len(chain)`` when none is left);
    ``link_since`` the iterations made before it took over; ``dropped`` "model: why" per dropped
    link.
    """

    history: Tuple[Iteration, ...]
    baseline_failing: int
    remaining_failing: int
    flaky: int
    elapsed: float
    chain: Tuple[str, ...]
    link: int = 0
    link_since: int = 0
    dropped: Tuple[str, ...] = ()
    refused: Optional[Refusal] = None
    interrupted: bool = False


@dataclass(frozen=True)
class Ending:
    """Stop the run: why, in a sentence, and how it ended."""

    reason: StopReason
    detail: str
    outcome: Outcome


@dataclass(frozen=True)
class Handover:
    """Go on with the next link of the chain instead of stopping."""

    reason: StopReason
    detail: str


Verdict = Union[Ending, Handover]


# -- similarity -----------------------------------------------------------------


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


@dataclass(frozen=True)
class Likeness:
    """A candidate against the earlier ones: similarity to the previous and the highest (0..1, None
    without earlier candidates), and ``label``: DUPLICATE (never re-tested), STAGNANT (too alike) or
    None."""

    previous: Optional[float] = None
    highest: Optional[float] = None
    label: Optional[Decision] = None


def judge_candidate(signature: str, earlier: Sequence[str], threshold: float) -> Likeness:
    """How much a new candidate repeats the earlier ones (DESIGN.md stop policy, rule 4).

    A candidate equal to an earlier one is a DUPLICATE; one at least
    ``threshold`` alike to any earlier one (which also catches A-B-A
    oscillation) is STAGNANT unless its tests show it fixed something.
    """
    if not earlier:
        return Likeness()
    scores = [1.0 if signature == other else similarity(signature, other) for other in earlier]
    highest = max(scores)
    if signature in earlier:
        return Likeness(scores[-1], 1.0, Decision.DUPLICATE)
    return Likeness(scores[-1], highest, Decision.STAGNANT if highest >= threshold else None)


# -- spend ----------------------------------------------------------------------


def spent(history: Sequence[Iteration]) -> Usage:
    """What the iterations cost together (``Usage.cost_usd`` None when a call was not priced)."""
    return Usage.total(it.usage for it in history)


def known_cost(history: Sequence[Iteration]) -> float:
    """USD spent on priced calls; unpriced calls (cost None) count as 0 against the cost budget."""
    return sum(it.usage.cost_usd or 0.0 for it in history)


def budget_used_up(
    history: Sequence[Iteration], elapsed: float, limits: Limits
) -> Optional[Tuple[Budget, str]]:
    """The first budget that is used up, with a sentence saying so, or None."""
    usage = spent(history)
    cost = known_cost(history)
    if len(history) >= limits.max_iterations:
        return Budget.ITERATIONS, f"{len(history)} of {limits.max_iterations} iterations used"
    if usage.tokens >= limits.max_tokens:
        return Budget.TOKENS, f"{usage.tokens:,} of {limits.max_tokens:,} tokens used"
    if cost >= limits.max_cost:
        return Budget.COST, f"${cost:.4f} of ${limits.max_cost:.2f} spent"
    if elapsed >= limits.timeout:
        return Budget.SECONDS, f"{elapsed:.0f} s of {limits.timeout:.0f} s used"
    return None


def should_step_down(facts: Facts, limits: Limits) -> bool:
    """True once the spent share of the token or cost budget reaches ``downgrade_at``.

    Steps down only to a next *model*; the offline engine stays the last
    resort (``builtin``).
    """
    following = facts.chain[facts.link + 1 : facts.link + 2]
    if not following or following[0] == "builtin":
        return False
    share = spent(facts.history).tokens / limits.max_tokens
    if limits.max_cost:
        share = max(share, known_cost(facts.history) / limits.max_cost)
    return share >= limits.downgrade_at


# -- endings --------------------------------------------------------------------


def outcome_of(facts: Facts) -> Outcome:
    """FIXED with nothing failing; PARTIALLY_FIXED with fewer failing than at the baseline (flaky
    aside).

    Before the baseline is known (an interruption during it) nothing is fixed.
    """
    if not facts.baseline_failing:
        return Outcome.NOT_FIXED
    if not facts.remaining_failing:
        return Outcome.FIXED
    if facts.remaining_failing < facts.baseline_failing - facts.flaky:
        return Outcome.PARTIALLY_FIXED
    return Outcome.NOT_FIXED


def baseline_ending(
    *, green: bool, time_gone: bool, blocking: Optional[str], all_flaky: Optional[str]
) -> Optional[Ending]:
    """The endings before the first iteration: the time budget gone during the baseline, nothing to
    fix, a blocking failure kind (``blocking`` is its sentence), only flaky failures (``all_flaky``
    names them)."""
    if time_gone:
        return Ending(
            StopReason.BUDGET_TIME,
            "the run's time budget (--timeout) ran out during the baseline test run",
            Outcome.NOT_FIXED,
        )
    if green:
        return Ending(StopReason.NOTHING_TO_FIX, "the test suite passes", Outcome.NOTHING_TO_FIX)
    if blocking is not None:
        return Ending(StopReason.UNRECOVERABLE, blocking, Outcome.UNRECOVERABLE)
    if all_flaky is not None:
        return Ending(
            StopReason.UNRECOVERABLE,
            f"every failing test is flaky: {all_flaky}",
            Outcome.UNRECOVERABLE,
        )
    return None


def proven(ending: Ending, held: bool, detail: str) -> Ending:
    """The ending once the proof run (``proof.prove``) has judged the reported patch.

    A fix or partial fix the proof run did not confirm ends PROOF_FAILED,
    NOT_FIXED: only what a run it could not forge showed counts.
    """
    if held or ending.outcome not in (Outcome.FIXED, Outcome.PARTIALLY_FIXED):
        return ending
    return Ending(
        StopReason.PROOF_FAILED,
        f"the patch did not hold up on a fresh copy of the start state: {detail}",
        Outcome.NOT_FIXED,
    )


def check(facts: Facts, limits: Limits) -> Optional[Verdict]:
    """Decide after the latest step: an Ending, a Handover to the next link, or None to go on.

    First match wins: interrupted, success, no usable model left, a budget
    (a refused gate, or one used up), stagnation, no progress. The last two
    are a Handover while the chain has a next link, an Ending on its last.
    """
    if facts.interrupted:
        return Ending(
            StopReason.INTERRUPTED,
            "stopped by Ctrl-C or a termination signal; your files are as they were",
            outcome_of(facts),
        )
    if facts.remaining_failing == 0:
        return Ending(
            StopReason.SUCCESS,
            "every failing test passes and nothing that passed fails",
            Outcome.FIXED,
        )
    if facts.link >= len(facts.chain):
        return _chain_exhausted(facts)
    if facts.refused is not None:
        return Ending(
            _BUDGET_REASON[facts.refused.budget], facts.refused.message, outcome_of(facts)
        )
    used_up = budget_used_up(facts.history, facts.elapsed, limits)
    if used_up is not None:
        return Ending(_BUDGET_REASON[used_up[0]], used_up[1], outcome_of(facts))
    stuck = _stuck(facts, limits)
    if stuck is not None:
        reason, detail = stuck
        if facts.link + 1 < len(
            facts.chain
        ):  # the chain's next link (``builtin`` last) gets its turn
            return Handover(reason, detail)
        return Ending(reason, detail, outcome_of(facts))
    return None


def _stuck(facts: Facts, limits: Limits) -> Optional[Tuple[StopReason, str]]:
    """Stagnation or no progress of the current link, judged on its own iterations only, else
    None."""
    stagnant = _stagnation(facts, limits)
    if stagnant is not None:
        return StopReason.STAGNATION, stagnant
    if no_progress(facts.history, facts.baseline_failing, limits.patience, since=facts.link_since):
        return (
            StopReason.NO_PROGRESS,
            f"{limits.patience} iterations in a row without fewer failing tests",
        )
    return None


def _stagnation(facts: Facts, limits: Limits) -> Optional[str]:
    """The sentence for a current-link candidate that repeated an earlier one, else None."""
    if len(facts.history) <= facts.link_since:
        return None
    last = facts.history[-1]
    if last.decision not in (Decision.DUPLICATE, Decision.STAGNANT):
        return None
    score = last.similarity_max if last.similarity_max is not None else 1.0
    return (
        f"iteration {last.number} repeated an earlier candidate (similarity {score:.2f} >= "
        f"{limits.similarity_threshold:.2f})"
    )


def no_progress(
    history: Sequence[Iteration], baseline_failing: int, patience: int, *, since: int = 0
) -> bool:
    """True when the last ``patience`` iterations made at or after index ``since`` (the current
    link's first: each link has its own patience) did not lower the failing count below the whole
    history's best."""
    best = baseline_failing
    streak = 0
    for index, it in enumerate(history):
        if it.decision is Decision.KEPT and it.tests_failed is not None and it.tests_failed < best:
            best = it.tests_failed
            streak = 0
        elif index >= since:
            streak += 1
    return streak >= patience


def _chain_exhausted(facts: Facts) -> Ending:
    """No link left: say what the last one reported; UNRECOVERABLE when every link was dropped
    untried."""
    detail = "no usable model left in the chain"
    last = facts.history[-1] if facts.history else None
    if facts.dropped:
        detail += " (" + "; ".join(facts.dropped) + ")"
    elif (
        last is not None
        and last.decision is Decision.NO_CANDIDATE
        and facts.chain[-1:] == ("builtin",)
        and last.reason.startswith("builtin failed: ")
    ):
        # the offline engine is done
        detail = "nothing left to try: " + last.reason[len("builtin failed: ") :]
    elif last is not None and last.decision is Decision.NO_CANDIDATE:
        detail += f"; last: {last.reason}"
    tried = [it for it in facts.history if it.decision is not Decision.NO_CANDIDATE]
    if facts.dropped and not tried and len(facts.dropped) == len(facts.chain):
        return Ending(StopReason.NO_MODEL_LEFT, detail, Outcome.UNRECOVERABLE)
    return Ending(StopReason.NO_MODEL_LEFT, detail, outcome_of(facts))
