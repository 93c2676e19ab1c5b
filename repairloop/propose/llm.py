"""The model proposer: one model behind litellm, with our own retries, budget gate and cost.

This is the one module that imports litellm, and only inside functions
(``load_litellm``): the import takes about 3 s and, unless told otherwise
first, fetches a price map from the network, may download tokenizers, loads
``.env`` files from the working directory and prints to stdout (TECH-NOTES 1.2-1.4).

Retries are ours, keyed on the exception class (``errors_table``): litellm is
called with ``max_retries=0`` (no openai SDK retries) and never ``num_retries``
(it retries 400/401 too and needs tenacity; TECH-NOTES 1.9). Fallbacks between
models are the loop's job (litellm's reuse the primary's ``api_base``; 1.10):
an ``LLMProposer`` is exactly one model.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Dict, List, NoReturn, Optional, Type

from repairloop.errors import BudgetExhausted, ModelError, ProposerError, TransientModelError, UnrecoverableModelError
from repairloop.propose.answer import answer_of, is_refusal, refused_param, visible
from repairloop.propose.errors_table import (
    HINTS,
    TRANSIENT,
    UNRECOVERABLE,
    classify_exception,
    describe,
    hint_for,
    retry_after_seconds,
)
from repairloop.propose.prompts import render_messages
from repairloop.types import (
    AnswerTruncatedEvent,
    Budget,
    BudgetLeft,
    EditFormatSwitchedEvent,
    ModelErrorEvent,
    ModelEvent,
    ModelRetryEvent,
    OnModelEvent,
    ParamDroppedEvent,
    Proposal,
    ProposalRequest,
    Usage,
)

MAX_ANSWER_CHARS = 100_000  # an answer is a patch; 100k chars is far beyond any useful one
DUMMY_KEY = "sk-no-key"  # sent only when no key is set: local servers need none, the openai client insists (1.9)
MESSAGE_OVERHEAD = 4  # tokens per chat message beyond its content (OpenAI's counting guide)
_ENV_DEFAULTS = (("LITELLM_LOCAL_MODEL_COST_MAP", "True"),  # no price-map fetch at import
                 ("LITELLM_OFFLINE_MODE", "true"),  # no tokenizer downloads
                 ("LITELLM_MODE", "PRODUCTION"))  # do not load the project's .env secrets
_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
MAX_REASONING_CHARS = 20_000  # kept in the journal per answer; the tokens are counted whole


def load_litellm() -> ModuleType:
    """Import litellm quietly and offline; the ONE place it is imported (lazily).

    Sets (``setdefault``: a user's explicit choice wins) the environment block
    of TECH-NOTES 1.3 before the import, then ``suppress_debug_info`` (its
    ``print()``s go to stdout, fatal for ``--json``) and its loggers to CRITICAL.
    """
    for key, value in _ENV_DEFAULTS:
        os.environ.setdefault(key, value)
    import litellm

    litellm.suppress_debug_info = True
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


def count_tokens(model: str, text: str) -> int:
    """Tokens in ``text`` for ``model``, counted offline by litellm (cl100k for most names).

    Falls back to ``len(text) // 4`` if litellm cannot count (TECH-NOTES 1.5:
    counts are approximate anyway; good enough for budgeting).
    """
    try:
        return int(load_litellm().token_counter(model=model, text=text))
    except Exception:  # any failure of an optional precision: use the rough rule
        return len(text) // 4


def classify_model_exception(exc: BaseException) -> str:
    """``transient`` | ``structural`` | ``model`` | ``unrecoverable``, by ``errors_table.RULES``."""
    return classify_exception(exc)[0]


def price_usd(model: str, prompt_tokens: int, completion_tokens: int) -> Optional[float]:
    """USD for the given tokens from litellm's bundled price map; None when not priced."""
    try:
        prompt, completion = load_litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return float(prompt) + float(completion)
    except Exception:  # ModelNotMappedError, unknown provider: the model has no price
        return None


def provider_key_env(model: str) -> str:
    """The variable holding ``model``'s provider key, ``<PROVIDER>_API_KEY`` (e.g. OPENAI_API_KEY).

    The provider is litellm's (``get_llm_provider``: ``openai`` for ``openai/NAME``
    and bare ``gpt-*`` names, ``hosted_vllm`` for ``hosted_vllm/NAME``), named as
    litellm's provider docs name their keys; an unknown one falls back to the
    name's prefix, else openai (as ``errors_table.hint_for`` does).
    """
    try:
        provider = str(load_litellm().get_llm_provider(model)[1])
    except Exception:  # unknown provider: the call itself will say so
        provider = model.split("/", 1)[0] if "/" in model else "openai"
    return f"{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_API_KEY"


@dataclass
class _Call:
    """Running totals of one ``propose()``: every attempt, failed ones included."""

    start: float
    usage: Usage = field(default_factory=Usage)  # an unpriced attempt makes the sum unknown (None)
    attempts: int = 0
    retries: int = 0
    malformed: int = 0
    causes: List[str] = field(default_factory=list)

    def elapsed(self) -> float:
        # With an injected sleep the clock does not see the waits, so count them explicitly.
        return max(time.monotonic() - self.start, self.usage.seconds)


class LLMProposer:
    """One model reached through litellm; implements ``repairloop.types.Proposer``.

    ``timeout`` bounds one request (seconds); ``max_retries`` bounds transient
    retries per ``propose()``; waits are ``backoff_base * 2**n`` seconds plus up
    to 50 % jitter, capped at ``backoff_max``, or the server's Retry-After
    (capped the same). ``on_event`` receives the journal's records of what
    happened on the way (``types.model_events``: retries, errors, a cut answer).
    The key sent is ``api_key``, else ``api_key_env``'s value, else with ``api_base``
    the provider's (``provider_key_env``) or the placeholder DUMMY_KEY; without
    ``api_base`` litellm reads the provider's variable itself.
    """

    engine = "llm"

    def __init__(self, model: str, *, api_base: Optional[str] = None, api_key: Optional[str] = None,
                 api_key_env: Optional[str] = None, timeout: float = 120.0, max_retries: int = 3,
                 max_completion_tokens: int = 2048, backoff_base: float = 1.0, backoff_max: float = 30.0,
                 edit_format: str = "auto", sleep: Callable[[float], None] = time.sleep,
                 rng: Optional[random.Random] = None,
                 on_event: Optional[OnModelEvent] = None) -> None:
        self.name = model
        self.api_base = api_base
        self.api_key_env = api_key_env or (provider_key_env(model) if api_base and not api_key else None)
        from_env = os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""
        self.api_key = api_key or from_env or (DUMMY_KEY if api_base else None)
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_completion_tokens = max_completion_tokens
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.on_event = on_event
        self.edit_format = edit_format
        self.switched = False  # auto: a structural error in this run switched this model to whole functions
        # Sent with every request; a parameter the model refuses is dropped for the rest of the run.
        self.params: Dict[str, Any] = {"temperature": 0, "max_tokens": max_completion_tokens}

    @property
    def asked_format(self) -> str:
        """The answer format the prompt asks for now: ``auto`` is diffs until it switches to whole."""
        if self.edit_format == "auto":
            return "whole" if self.switched else "diff"
        return self.edit_format

    def propose(self, request: ProposalRequest) -> Proposal:
        """Ask the model for a patch for ``request.context``; return its answer and usage.

        Every attempt is gated on ``request.budget`` first and rebuilt from the
        request (never a half-sent thread). Raises ``BudgetExhausted`` (nothing
        sent), ``TransientModelError`` (retries exhausted), ``ModelError``
        (refusal, empty answer, content filter, context window, bad request) or
        ``UnrecoverableModelError`` (auth, unknown model); each carries the
        ``usage`` of every attempt and the number of ``attempts``.
        """
        call = _Call(start=time.monotonic())
        if request.feedback is not None and self.edit_format == "auto" and not self.switched:
            self.switched = True  # a structural error: ask this model for whole functions from now on
            self._emit(EditFormatSwitchedEvent(model=self.name, from_format="diff", to_format="whole",
                                               error=request.feedback.error[:300]))
        while True:
            messages = render_messages(request.context, request.feedback, self.asked_format)
            prompt_tokens = sum(count_tokens(self.name, m["content"]) + MESSAGE_OVERHEAD for m in messages)
            timeout = self._gate(request.budget, call, prompt_tokens)
            call.attempts += 1
            began = time.monotonic()
            try:
                response = self._complete(messages, timeout)
            except Exception as exc:  # classified below; KeyboardInterrupt passes through
                failed = Usage(prompt_tokens, 0, self._failed_cost(), time.monotonic() - began, 1)
                call.usage = call.usage + failed
                if not self._drop_refused_param(exc):
                    self._after_failure(exc, call, request.budget)
                continue
            return self._accept(response, messages, prompt_tokens, call, time.monotonic() - began)

    def _complete(self, messages: List[Dict[str, str]], timeout: float) -> Any:
        litellm = load_litellm()
        # drop_params: litellm leaves out what it knows a model refuses (temperature for o1); what it
        # does not know, the server refuses with a 400 naming the parameter (_drop_refused_param).
        return litellm.completion(
            model=self.name, messages=[dict(m) for m in messages], api_base=self.api_base,
            api_key=self.api_key, timeout=timeout, max_retries=0, drop_params=True, **self.params)

    def _drop_refused_param(self, exc: BaseException) -> bool:
        """Drop a parameter a 400 says the model refuses (max_tokens becomes max_completion_tokens);
        True when the request can be sent again without it."""
        param = refused_param(exc, self.params)
        if param is None:
            return False
        value = self.params.pop(param)
        if param == "max_tokens" and "max_completion_tokens" in str(exc):
            self.params["max_completion_tokens"] = value
        self._emit(ParamDroppedEvent(model=self.name, param=param, error=describe(exc)[:300]))
        return True

    def _gate(self, budget: BudgetLeft, call: _Call, prompt_tokens: int) -> float:
        """Raise BudgetExhausted unless the next attempt fits; return its timeout (seconds)."""
        need = call.usage.tokens + prompt_tokens + self.max_completion_tokens
        if budget.tokens is not None and need > budget.tokens:
            self._exhausted(Budget.TOKENS, f"the next request needs up to {need} tokens "
                            f"({prompt_tokens} prompt + {self.max_completion_tokens} completion"
                            f"{' + earlier attempts' if call.attempts else ''}); {budget.tokens} left", call)
        if budget.cost_usd is not None:
            estimate = price_usd(self.name, prompt_tokens, self.max_completion_tokens) or 0.0
            spent = call.usage.cost_usd or 0.0
            if spent + estimate > budget.cost_usd:
                self._exhausted(Budget.COST, f"the next request may cost ${spent + estimate:.4f}; "
                                f"${budget.cost_usd:.4f} left", call)
        if budget.seconds is None:
            return self.timeout
        left = budget.seconds - call.elapsed()
        if left <= 0:
            self._exhausted(Budget.SECONDS, "no time left for another model request", call)
        return min(self.timeout, left)

    def _exhausted(self, budget: Budget, detail: str, call: _Call) -> NoReturn:
        exc = BudgetExhausted(f"{self.name}: {budget.value} budget exhausted: {detail}", budget=budget,
                              usage=call.usage)
        exc.attempts = call.attempts
        exc.hint = {Budget.TOKENS: "raise --max-tokens or lower max_completion_tokens",
                    Budget.COST: "raise --max-cost", Budget.SECONDS: "raise --timeout"}.get(budget, "")
        raise exc

    def _failed_cost(self) -> Optional[float]:
        # A failed request is not billed by the providers we know; keep "not priced" visible.
        return None if price_usd(self.name, 1, 1) is None else 0.0

    def _after_failure(self, exc: Exception, call: _Call, budget: BudgetLeft) -> None:
        """Sleep before a transient retry; raise the ProposerError that ends the call otherwise."""
        category, cause = classify_exception(exc)
        call.causes.append(cause)
        if cause == "malformed_response":
            call.malformed += 1
            if call.malformed > 1:  # garbage twice: the server will not get better (errors_table)
                category = "model"
        detail = describe(exc)
        if self.api_key and self.api_key != DUMMY_KEY:  # a server may echo the key; whatever its name
            detail = detail.replace(self.api_key, "[REDACTED]")
        if category == TRANSIENT and call.retries < self.max_retries:
            wait = self._backoff(exc, call.retries)
            if budget.seconds is not None and call.elapsed() + wait >= budget.seconds:
                self._exhausted(Budget.SECONDS, f"a retry after {cause} would start after the "
                                f"time budget ({wait:.1f} s wait)", call)
            call.retries += 1
            self._emit(ModelRetryEvent(model=self.name, cause=cause, attempt=call.attempts, wait=round(wait, 3),
                                       error=detail))
            self.sleep(wait)
            call.usage = call.usage + Usage(seconds=wait)
            return
        error_class = {TRANSIENT: TransientModelError, UNRECOVERABLE: UnrecoverableModelError}.get(
            category, ModelError)
        what = cause.replace("_", " ")
        if category == TRANSIENT:
            what += f", still failing after {call.retries} retries"
        self._raise(error_class, f"{self.name}: {what}: {detail}",
                    self._hint(cause), call, exc)

    def _hint(self, cause: str) -> str:
        """``hint_for``'s fix, naming the variable the key really came from (or that it is unset)."""
        if not (self.api_key_env and "{key_env}" in HINTS.get(cause, "")):
            return hint_for(cause, self.name, self.api_base)
        unset = "" if os.environ.get(self.api_key_env, "").strip() else " (not set)"
        return HINTS[cause].format(key_env=self.api_key_env + unset, model=self.name, api_base=self.api_base)

    def _backoff(self, exc: BaseException, retry: int) -> float:
        """Seconds to wait before retry number ``retry + 1``: Retry-After, else jittered exponential."""
        after = retry_after_seconds(exc)
        if after is not None:
            return min(float(after), self.backoff_max)
        nominal: float = min(self.backoff_max, self.backoff_base * 2.0 ** retry)
        return min(self.backoff_max, nominal * (1.0 + 0.5 * self.rng.random()))

    def _accept(self, response: Any, messages: List[Dict[str, str]], prompt_tokens: int,
                call: _Call, seconds: float) -> Proposal:
        """Turn a completion into a Proposal; raise ModelError for an unusable answer."""
        content, finish, reasoning = answer_of(response)
        reported = getattr(response, "usage", None)
        used_prompt = getattr(reported, "prompt_tokens", None)
        used_completion = getattr(reported, "completion_tokens", None)
        # Providers count reasoning in completion_tokens; counted here, it is counted too. A server that
        # sends no usage gets zeros from litellm (measured, 1.110.2): zero for a non-empty answer is unknown.
        counted = count_tokens(self.name, content) + (count_tokens(self.name, reasoning) if reasoning else 0)
        attempt = Usage(int(used_prompt) if used_prompt else prompt_tokens,
                        int(used_completion or 0) if used_completion or not counted else counted,
                        _response_cost(response, self.name), seconds, 1)
        call.usage = call.usage + attempt
        hint = "try another model"
        answer = visible(content)
        if finish == "content_filter":
            self._raise(ModelError, f"{self.name}: the answer was stopped by a content filter", hint, call)
        if not answer.strip() and (reasoning.strip() or content.strip()):
            thought = len(reasoning) + len(content)
            self._raise(ModelError, f"{self.name}: the answer holds only thinking ({thought} characters, "
                        f"finish_reason {finish!r}), no patch after it",
                        "raise max_completion_tokens (a reasoning model spends them thinking first), "
                        "or try another model", call)
        if not content.strip():
            self._raise(ModelError, f"{self.name}: empty answer (finish_reason {finish!r})", hint, call)
        if is_refusal(answer):
            self._raise(ModelError, f"{self.name}: the model refused: {answer.strip()[:200]!r}", hint, call)
        notes: Dict[str, Any] = {"finish_reason": finish, "attempts": call.attempts,
                                 "retry_causes": call.causes, "edit_format": self.asked_format}
        if reasoning or answer != content:
            notes["reasoning_chars"] = len(reasoning) + len(content) - len(answer)
        if reasoning:  # journalled (the journal redacts), never parsed
            notes["reasoning"] = reasoning[:MAX_REASONING_CHARS]
        if len(content) > MAX_ANSWER_CHARS:
            notes["truncated_from_chars"] = len(content)
            self._emit(AnswerTruncatedEvent(model=self.name, chars=len(content), kept=MAX_ANSWER_CHARS))
            content = content[:MAX_ANSWER_CHARS]
        return Proposal(answer=content, engine=self.engine, model=self.name, usage=call.usage,
                        prompt=tuple(messages), notes=notes)

    def _raise(self, error_class: Type[ProposerError], message: str, hint: str, call: _Call,
               cause: Optional[BaseException] = None) -> NoReturn:
        exc: ProposerError = error_class(message, hint, usage=call.usage, attempts=call.attempts)
        self._emit(ModelErrorEvent(model=self.name, error=error_class.__name__, message=message,
                                   attempts=call.attempts))
        raise exc from cause

    def _emit(self, record: ModelEvent) -> None:
        if self.on_event is not None:
            self.on_event(record)


def _response_cost(response: Any, model: str) -> Optional[float]:
    """USD of one completion: litellm's ``response_cost``, else ``completion_cost``; None if unpriced."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if cost is None:
        try:
            cost = load_litellm().completion_cost(completion_response=response, model=model)
        except Exception:  # ModelNotMappedError (TECH-NOTES 1.6): the model is not priced
            return None
    return None if cost is None else float(cost)

