"""The stop policy as a pure function of the facts a session gathers."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from repairloop.loop import stop
from repairloop.patch import change_signature as sig
from repairloop.types import Budget, Decision, Iteration, Outcome, StopReason, Usage

A = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n x = 1\n-return n - 1\n+return n + 1\n y = 2\n"
A_WIDER = "--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-return n - 1\n+return  n + 1\n"
A_NEAR = "--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-return n - 1\n+return n + 2\n"
B = (
    "--- a/other.py\n+++ b/other.py\n@@ -5,1 +5,2 "
    "@@\n-items.sort()\n+items.sort(reverse=True)\n+items.pop()\n"
)

LIMITS = stop.Limits(
    max_iterations=8,
    max_tokens=200_000,
    max_cost=1.0,
    timeout=900.0,
    similarity_threshold=0.90,
    patience=3,
)


def it(
    n: int, decision: Decision, failed: int = 1, tokens: int = 0, sim: float = 0.0, model: str = "m"
) -> Iteration:
    return Iteration(
        n,
        "llm",
        model,
        Usage(prompt_tokens=tokens),
        decision,
        "",
        tests_failed=failed,
        similarity_max=sim,
    )


def facts(history: Any = (), **kw: Any) -> stop.Facts:
    base = {
        "baseline_failing": 1,
        "remaining_failing": 1,
        "flaky": 0,
        "elapsed": 0.0,
        "chain": ("m",),
    }
    return stop.Facts(history=tuple(history), **{**base, **kw})


def reason(verdict: Any) -> StopReason:
    assert verdict is not None
    return verdict.reason


def test_similarity_ignores_context_and_whitespace() -> None:
    assert stop.similarity(sig(A), sig(A_WIDER)) == 1.0
    assert stop.similarity(sig(A), sig(B)) < 0.5


def test_judge_candidate_labels_duplicates_and_near_repeats() -> None:
    assert stop.judge_candidate(sig(A), [], 0.9) == stop.Likeness()
    duplicate = stop.judge_candidate(sig(A_WIDER), [sig(A), sig(B)], 0.9)
    assert (
        duplicate.label is Decision.DUPLICATE
        and duplicate.highest == 1.0
        and duplicate.previous < 0.5
    )
    near = stop.judge_candidate(sig(A_NEAR), [sig(A)], 0.9)
    assert near.label is Decision.STAGNANT and 0.9 <= near.highest < 1.0
    assert stop.judge_candidate(sig(A_NEAR), [sig(A)], 0.99).label is None


def test_success_wins_over_budget() -> None:
    verdict = stop.check(
        facts([it(1, Decision.KEPT, 0)], remaining_failing=0), replace(LIMITS, max_iterations=1)
    )
    assert (
        isinstance(verdict, stop.Ending)
        and verdict.reason is StopReason.SUCCESS
        and verdict.outcome is Outcome.FIXED
    )


def test_iteration_token_cost_and_time_budgets() -> None:
    hist = [it(1, Decision.REVERTED, tokens=600)]
    assert (
        reason(stop.check(facts(hist), replace(LIMITS, max_iterations=1)))
        is StopReason.BUDGET_ITERATIONS
    )
    assert (
        reason(stop.check(facts(hist), replace(LIMITS, max_tokens=500))) is StopReason.BUDGET_TOKENS
    )
    costly = [Iteration(1, "llm", "m", Usage(cost_usd=0.3), Decision.REVERTED, "")]
    assert (
        reason(stop.check(facts(costly), replace(LIMITS, max_cost=0.25))) is StopReason.BUDGET_COST
    )
    assert (
        reason(stop.check(facts(hist, elapsed=61.0), replace(LIMITS, timeout=60)))
        is StopReason.BUDGET_TIME
    )


def test_a_refused_budget_gate_stops_with_its_budget() -> None:
    refused = stop.Refusal(Budget.COST, "the next request may cost $0.30; $0.10 left")
    verdict = stop.check(facts([it(1, Decision.NO_CANDIDATE)], refused=refused), LIMITS)
    assert isinstance(verdict, stop.Ending) and verdict.reason is StopReason.BUDGET_COST
    assert verdict.detail == refused.message


def test_duplicate_or_stagnant_candidate_stops() -> None:
    dup = [it(1, Decision.REVERTED), it(2, Decision.DUPLICATE, sim=1.0)]
    assert reason(stop.check(facts(dup), LIMITS)) is StopReason.STAGNATION
    assert (
        reason(
            stop.check(
                facts([it(1, Decision.REVERTED), it(2, Decision.STAGNANT, sim=0.93)]), LIMITS
            )
        )
        is StopReason.STAGNATION
    )
    assert stop.check(facts([it(1, Decision.REVERTED), it(2, Decision.REVERTED)]), LIMITS) is None


def test_stagnation_hands_over_once_to_the_next_link() -> None:
    chain = ("first", "second", "builtin")
    history = [
        it(1, Decision.REVERTED, model="first"),
        it(2, Decision.DUPLICATE, sim=1.0, model="first"),
    ]
    verdict = stop.check(facts(history, chain=chain), LIMITS)
    assert isinstance(verdict, stop.Handover) and verdict.reason is StopReason.STAGNATION
    # The next link has made no candidate yet: the first link's repeat is not its stagnation.
    assert stop.check(facts(history, chain=chain, link=1, link_since=2), LIMITS) is None
    last_link = stop.check(
        facts([*history, it(3, Decision.DUPLICATE, sim=1.0)], chain=chain, link=2, link_since=2),
        LIMITS,
    )
    assert isinstance(last_link, stop.Ending) and last_link.reason is StopReason.STAGNATION


def test_no_progress_after_patience() -> None:
    limits = replace(LIMITS, patience=2)
    progress = [it(1, Decision.KEPT, failed=2), it(2, Decision.REVERTED, failed=2)]
    assert stop.check(facts(progress, remaining_failing=2, baseline_failing=3), limits) is None
    stuck = progress + [it(3, Decision.REJECTED, failed=2)]
    verdict = stop.check(facts(stuck, remaining_failing=2, baseline_failing=3), limits)
    assert isinstance(verdict, stop.Ending) and verdict.reason is StopReason.NO_PROGRESS
    assert verdict.outcome is Outcome.PARTIALLY_FIXED


def test_interruption_is_a_stop_reason_with_the_partial_outcome() -> None:
    kept = [it(1, Decision.KEPT, failed=1)]
    verdict = stop.check(
        facts(kept, baseline_failing=2, remaining_failing=1, interrupted=True), LIMITS
    )
    assert isinstance(verdict, stop.Ending) and verdict.reason is StopReason.INTERRUPTED
    assert verdict.outcome is Outcome.PARTIALLY_FIXED
    during_baseline = stop.check(
        facts(baseline_failing=0, remaining_failing=0, interrupted=True), LIMITS
    )
    assert isinstance(during_baseline, stop.Ending) and during_baseline.outcome is Outcome.NOT_FIXED


def test_no_usable_model_left_comes_before_the_budgets() -> None:
    dropped = ("m: authentication failed",)
    verdict = stop.check(
        facts([it(1, Decision.NO_CANDIDATE)], link=1, dropped=dropped),
        replace(LIMITS, max_iterations=1),
    )
    assert isinstance(verdict, stop.Ending) and verdict.reason is StopReason.NO_MODEL_LEFT
    assert verdict.outcome is Outcome.UNRECOVERABLE and "authentication failed" in verdict.detail


def test_baseline_endings() -> None:
    assert stop.baseline_ending(green=False, time_gone=False, blocking=None, all_flaky=None) is None
    green = stop.baseline_ending(green=True, time_gone=False, blocking=None, all_flaky=None)
    assert (
        green is not None
        and green.reason is StopReason.NOTHING_TO_FIX
        and green.outcome is Outcome.NOTHING_TO_FIX
    )
    blocked = stop.baseline_ending(
        green=False, time_gone=False, blocking="syntax failure at m.py:3", all_flaky=None
    )
    assert (
        blocked is not None
        and blocked.outcome is Outcome.UNRECOVERABLE
        and blocked.detail.startswith("syntax")
    )
    flaky = stop.baseline_ending(green=False, time_gone=False, blocking=None, all_flaky="t::a")
    assert flaky is not None and flaky.reason is StopReason.UNRECOVERABLE and "t::a" in flaky.detail
    late = stop.baseline_ending(green=True, time_gone=True, blocking=None, all_flaky=None)
    assert late is not None and late.reason is StopReason.BUDGET_TIME


def test_step_down_only_to_a_next_model() -> None:
    limits = replace(LIMITS, max_tokens=1000, downgrade_at=0.5)
    spent = [it(1, Decision.REVERTED, tokens=600)]
    assert stop.should_step_down(facts(spent, chain=("big", "small", "builtin")), limits)
    assert not stop.should_step_down(facts(spent, chain=("big", "builtin")), limits)
    assert not stop.should_step_down(
        facts([it(1, Decision.REVERTED, tokens=100)], chain=("big", "small")), limits
    )


def test_no_progress_hands_over_to_the_next_link() -> None:
    # Seen on a real project: a model gave the same unusable answer three times and the run ended
    # with no_progress although `builtin`, the chain's last link, was never tried.
    chain = ("m", "builtin")
    unusable = [it(n, Decision.REJECTED, model="m") for n in (1, 2, 3)]
    verdict = stop.check(facts(unusable, chain=chain), LIMITS)
    assert isinstance(verdict, stop.Handover) and verdict.reason is StopReason.NO_PROGRESS
    # The next link has its own patience: the model's turns do not count against it.
    assert stop.check(facts(unusable, chain=chain, link=1, link_since=3), LIMITS) is None
    engine = [*unusable, *(it(n, Decision.REVERTED, model="builtin") for n in (4, 5, 6))]
    last = stop.check(facts(engine, chain=chain, link=1, link_since=3), LIMITS)
    assert isinstance(last, stop.Ending) and last.reason is StopReason.NO_PROGRESS


def test_a_dropped_models_turns_do_not_use_up_the_next_links_patience() -> None:
    # Two unusable answers, then the model is dropped (authentication) in its third turn: the
    # session has moved on to builtin, which must get its turn before no progress can end the run.
    turns = [it(1, Decision.REJECTED), it(2, Decision.REJECTED), it(3, Decision.NO_CANDIDATE)]
    after_drop = facts(
        turns, chain=("m", "builtin"), link=1, link_since=3, dropped=("m: authentication failed",)
    )
    assert stop.check(after_drop, LIMITS) is None


def test_progress_made_by_an_earlier_link_is_the_bar_for_the_next() -> None:
    limits = replace(LIMITS, patience=2)
    history = [
        it(1, Decision.KEPT, failed=1, model="m"),
        it(2, Decision.REVERTED, failed=1, model="m"),
        it(3, Decision.REVERTED, failed=1, model="builtin"),
        it(4, Decision.REVERTED, failed=1, model="builtin"),
    ]
    verdict = stop.check(
        facts(history, chain=("m", "builtin"), link=1, link_since=2, baseline_failing=2), limits
    )
    assert isinstance(verdict, stop.Ending) and verdict.reason is StopReason.NO_PROGRESS
    assert verdict.outcome is Outcome.PARTIALLY_FIXED
