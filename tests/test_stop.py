"""The stop policy as a pure function of the history."""

from __future__ import annotations

from repairloop import stop
from repairloop.patch import change_signature as sig
from repairloop.types import Decision, Iteration, StopReason, Usage

A = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n x = 1\n-return n - 1\n+return n + 1\n y = 2\n"
A_WIDER = "--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-return n - 1\n+return  n + 1\n"
B = "--- a/other.py\n+++ b/other.py\n@@ -5,1 +5,2 @@\n-items.sort()\n+items.sort(reverse=True)\n+items.pop()\n"


def it(n: int, decision: Decision, failed: int = 1, tokens: int = 0, sim: float = 0.0) -> Iteration:
    return Iteration(n, "llm", "m", Usage(prompt_tokens=tokens), decision, "", tests_failed=failed, similarity_max=sim)


def test_similarity_ignores_context_and_whitespace() -> None:
    assert stop.similarity(sig(A), sig(A_WIDER)) == 1.0
    assert stop.is_repeat(sig(A_WIDER), [sig(B), sig(A)])
    assert stop.similarity(sig(A), sig(B)) < 0.5


def test_similarities_previous_and_max() -> None:
    prev, best = stop.similarities(sig(A), [sig(A_WIDER), sig(B)])
    assert prev is not None and prev < 0.5 and best == 1.0
    assert stop.similarities(sig(A), []) == (None, None)


def test_success_wins_over_budget() -> None:
    limits = stop.Limits(max_iterations=1)
    verdict = stop.check([it(1, Decision.KEPT, 0)], limits=limits, remaining_failing=0, baseline_failing=1, elapsed=0)
    assert verdict is not None and verdict[0] is StopReason.SUCCESS


def test_iteration_token_cost_and_time_budgets() -> None:
    hist = [it(1, Decision.REVERTED, tokens=600)]
    kw = {"remaining_failing": 1, "baseline_failing": 1, "elapsed": 0.0}
    assert stop.check(hist, limits=stop.Limits(max_iterations=1), **kw)[0] is StopReason.BUDGET_ITERATIONS
    assert stop.check(hist, limits=stop.Limits(max_tokens=500), **kw)[0] is StopReason.BUDGET_TOKENS
    costly = [Iteration(1, "llm", "m", Usage(cost_usd=0.3), Decision.REVERTED, "")]
    assert stop.check(costly, limits=stop.Limits(max_cost=0.25), **kw)[0] is StopReason.BUDGET_COST
    late = dict(kw, elapsed=61.0)
    assert stop.check(hist, limits=stop.Limits(timeout=60), **late)[0] is StopReason.BUDGET_TIME


def test_duplicate_or_stagnant_candidate_stops() -> None:
    kw = {"limits": stop.Limits(), "remaining_failing": 1, "baseline_failing": 1, "elapsed": 0.0}
    assert stop.check([it(1, Decision.REVERTED), it(2, Decision.DUPLICATE, sim=1.0)], **kw)[0] is StopReason.STAGNATION
    assert stop.check([it(1, Decision.REVERTED), it(2, Decision.STAGNANT, sim=0.93)], **kw)[0] is StopReason.STAGNATION
    assert stop.check([it(1, Decision.REVERTED), it(2, Decision.REVERTED)], **kw) is None


def test_no_progress_after_patience() -> None:
    kw = {"limits": stop.Limits(patience=2), "remaining_failing": 2, "baseline_failing": 3, "elapsed": 0.0}
    progress = [it(1, Decision.KEPT, failed=2), it(2, Decision.REVERTED, failed=2)]
    assert stop.check(progress, **kw) is None
    stuck = progress + [it(3, Decision.REJECTED, failed=2)]
    assert stop.check(stuck, **kw)[0] is StopReason.NO_PROGRESS
