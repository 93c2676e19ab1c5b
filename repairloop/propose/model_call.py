"""One ``propose()`` of the model proposer as a record: its attempts, usage and budget gate.

Every attempt of a call, failed ones included, adds to the same ``ModelCall``; before
each request ``gate`` checks that the worst case of the next one fits what is left of the
run's budget (DESIGN.md, "Budgets": a request is never sent that could overrun it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import List, NoReturn, Optional

from repairloop.errors import BudgetExhausted
from repairloop.types import Budget, BudgetLeft, Usage

__all__ = ["ModelCall"]

_RAISE_IT = {
    Budget.TOKENS: "raise --max-tokens or lower max_completion_tokens",
    Budget.COST: "raise --max-cost",
    Budget.SECONDS: "raise --timeout",
}


@dataclass
class ModelCall:
    """Running totals of one ``propose()`` of ``model``: every attempt, failed ones included.

    ``start`` is a ``time.monotonic()`` reading (seconds); an unpriced attempt makes
    ``usage.cost_usd`` unknown (None).
    """

    model: str
    start: float
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    retries: int = 0
    malformed: int = 0
    causes: List[str] = field(default_factory=list)

    def elapsed(self) -> float:
        """Seconds since ``start``, at least the usage's (an injected sleep is not on the clock)."""
        return max(time.monotonic() - self.start, self.usage.seconds)

    def gate(
        self,
        budget: BudgetLeft,
        prompt_tokens: int,
        completion_tokens: int,
        estimate_usd: Optional[float],
        timeout: float,
    ) -> float:
        """The next request's timeout (seconds, at most ``timeout``); raises BudgetExhausted
        unless its worst case (``prompt_tokens`` + ``completion_tokens``, ``estimate_usd``) fits
        ``budget``."""
        need = self.usage.tokens + prompt_tokens + completion_tokens
        if budget.tokens is not None and need > budget.tokens:
            earlier = " + earlier attempts" if self.attempts else ""
            self.exhausted(
                Budget.TOKENS,
                f"the next request needs up to {need} tokens ({prompt_tokens} prompt + "
                f"{completion_tokens} completion{earlier}); {budget.tokens} left",
            )
        spent = self.usage.cost_usd or 0.0
        if budget.cost_usd is not None and spent + (estimate_usd or 0.0) > budget.cost_usd:
            self.exhausted(
                Budget.COST,
                f"the next request may cost ${spent + (estimate_usd or 0.0):.4f}; "
                f"${budget.cost_usd:.4f} left",
            )
        if budget.seconds is None:
            return timeout
        left = budget.seconds - self.elapsed()
        if left <= 0:
            self.exhausted(Budget.SECONDS, "no time left for another model request")
        return min(timeout, left)

    def exhausted(self, budget: Budget, detail: str) -> NoReturn:
        """Raise BudgetExhausted for ``budget``, carrying this call's usage and attempts."""
        exc = BudgetExhausted(
            f"{self.model}: {budget.value} budget exhausted: {detail}",
            budget=budget,
            usage=self.usage,
        )
        exc.attempts = self.attempts
        exc.hint = _RAISE_IT.get(budget, "")
        raise exc
