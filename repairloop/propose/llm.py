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

import os
import random
import time
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Type

from repairloop.errors import (
    ModelError,
    ProposerError,
    TransientModelError,
    UnrecoverableModelError,
)
from repairloop.propose.answer import (
    answer_of,
    is_refusal,
    refused_param,
    tool_calls_text,
    visible,
)
from repairloop.propose.errors_table import (
    HINTS,
    TRANSIENT,
    UNRECOVERABLE,
    backoff_seconds,
    classify_exception,
    describe,
    hint_for,
    never_sent,
)
from repairloop.propose.litellm_env import (
    calls_functions,
    classify_model_exception,
    completion_usage,
    count_tokens,
    load_litellm,
    price_usd,
    provider_key_env,
)
from repairloop.propose.model_call import ModelCall
from repairloop.propose.prompts import EDIT_TOOLS, render_messages
from repairloop.types import (
    CUT_OFF_REASONS,
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

__all__ = [
    "DUMMY_KEY",
    "MAX_ANSWER_CHARS",
    "LLMProposer",
    "classify_model_exception",
    "count_tokens",
    "load_litellm",
    "price_usd",
    "provider_key_env",
]  # the helpers live in litellm_env; tests and callers import them here too

MAX_ANSWER_CHARS = 100_000  # an answer is a patch; 100k chars is far beyond any useful one
# sent only when no key is set: local servers need none, the openai client insists (1.9)
DUMMY_KEY = "sk-no-key"
MESSAGE_OVERHEAD = 4  # tokens per chat message beyond its content (OpenAI's counting guide)
TOOLS_SENT = {"tools": EDIT_TOOLS, "tool_choice": "required"}  # a call of an edit tool is required
MAX_REASONING_CHARS = 20_000  # kept in the journal per answer; the tokens are counted whole


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

    def __init__(
        self,
        model: str,
        *,
        api_base: Optional[str] = None,
        api_key: Optional[str] = None,
        api_key_env: Optional[str] = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        max_completion_tokens: int = 2048,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        edit_format: str = "auto",
        sleep: Callable[[float], None] = time.sleep,
        rng: Optional[random.Random] = None,
        on_event: Optional[OnModelEvent] = None,
        price: Optional[Sequence[float]] = None,
    ) -> None:
        self.name, self.price = (
            model,
            price,
        )  # price: USD per million prompt, completion tokens (model_prices)
        self.api_base = api_base
        self.api_key_env = api_key_env or (
            provider_key_env(model) if api_base and not api_key else None
        )
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
        self.switched = (
            False  # auto: a structural error in this run switched this model to whole functions
        )
        # Sent with every request; a parameter the model refuses is dropped for the rest of the run.
        self.params: Dict[str, Any] = {"temperature": 0, "max_tokens": max_completion_tokens}
        self._calls_functions: Optional[bool] = None
        self._tools_refused = False  # a 400 named `tools` or `tool_choice`: text formats from now

    @property
    def asked_format(self) -> str:
        """The answer format the prompt asks for now: ``auto`` is the edit tools where litellm
        says the model supports function calling, else diffs, until a structural error switches
        it to whole functions."""
        if self.edit_format == "auto":
            if self.switched:
                return "whole"
            return "tools" if self.calls_functions else "diff"
        if self.edit_format == "tools" and self._tools_refused:
            return "diff"
        return self.edit_format

    @property
    def calls_functions(self) -> bool:
        """Whether this model is given the edit tools under ``auto`` (``calls_functions``)."""
        if self._calls_functions is None:
            self._calls_functions = calls_functions(self.name)
        return self._calls_functions

    def propose(self, request: ProposalRequest) -> Proposal:
        """Ask the model for a patch for ``request.context``; return its answer and usage.

        Every attempt is gated on ``request.budget`` first and rebuilt from the
        request (never a half-sent thread). Raises ``BudgetExhausted`` (nothing
        sent), ``TransientModelError`` (retries exhausted), ``ModelError``
        (refusal, empty answer, content filter, context window, bad request) or
        ``UnrecoverableModelError`` (auth, unknown model); each carries the
        ``usage`` of every attempt and the number of ``attempts``.
        """
        call = ModelCall(self.name, start=time.monotonic())
        if request.feedback is not None and self.edit_format == "auto" and not self.switched:
            was = self.asked_format  # diff, or the edit tools
            self.switched = True  # a structural error: ask this model for whole functions now
            self._emit(
                EditFormatSwitchedEvent(
                    model=self.name,
                    from_format=was,
                    to_format="whole",
                    error=request.feedback.error[:300],
                )
            )
        while True:
            messages = render_messages(request.context, request.feedback, self.asked_format)
            prompt_tokens = sum(
                count_tokens(self.name, m["content"]) + MESSAGE_OVERHEAD for m in messages
            )
            estimate = price_usd(self.name, prompt_tokens, self.max_completion_tokens, self.price)
            timeout = call.gate(
                request.budget, prompt_tokens, self.max_completion_tokens, estimate, self.timeout
            )
            call.attempts += 1
            began = time.monotonic()
            try:
                response = self._complete(messages, timeout)
            except Exception as exc:  # classified below; KeyboardInterrupt passes through
                sent = 0 if never_sent(exc) else prompt_tokens  # a refused connection costs none
                # a failed request is not billed by the providers we know; "not priced" stays
                cost = None if price_usd(self.name, 1, 1, self.price) is None else 0.0
                failed = Usage(sent, 0, cost, time.monotonic() - began, 1)
                call.usage = call.usage + failed
                if not self._drop_refused_param(exc):
                    self._after_failure(exc, call, request.budget)
                continue
            return self._accept(response, messages, prompt_tokens, call, time.monotonic() - began)

    def _complete(self, messages: List[Dict[str, str]], timeout: float) -> Any:
        litellm = load_litellm()
        # drop_params: litellm leaves out what it knows a model refuses (temperature for o1); what
        # it does not know, the server refuses with a 400 naming the parameter
        # (_drop_refused_param).
        tools = TOOLS_SENT if self.asked_format == "tools" else {}
        return litellm.completion(
            model=self.name,
            messages=[dict(m) for m in messages],
            api_base=self.api_base,
            api_key=self.api_key,
            timeout=timeout,
            max_retries=0,
            drop_params=True,
            **tools,
            **self.params,
        )

    def _drop_refused_param(self, exc: BaseException) -> bool:
        """Drop a parameter a 400 says the model refuses (max_tokens becomes max_completion_tokens);
        True when the request can be sent again without it."""
        tools = TOOLS_SENT if self.asked_format == "tools" else {}
        param = refused_param(exc, {**self.params, **tools})
        if param is None:
            return False
        if param in tools:  # a server that takes no tools (or no required call): text formats
            self._calls_functions, self._tools_refused = False, True
            self._emit(ParamDroppedEvent(model=self.name, param=param, error=describe(exc)[:300]))
            return True
        value = self.params.pop(param)
        if param == "max_tokens" and "max_completion_tokens" in str(exc):
            self.params["max_completion_tokens"] = value
        self._emit(ParamDroppedEvent(model=self.name, param=param, error=describe(exc)[:300]))
        return True

    def _after_failure(self, exc: Exception, call: ModelCall, budget: BudgetLeft) -> None:
        """Sleep before a transient retry; raise the ProposerError that ends the call otherwise."""
        category, cause = classify_exception(exc)
        call.causes.append(cause)
        if cause == "malformed_response":
            call.malformed += 1
            if call.malformed > 1:  # garbage twice: the server will not get better (errors_table)
                category = "model"
        detail = describe(exc)
        if (
            self.api_key and self.api_key != DUMMY_KEY
        ):  # a server may echo the key; whatever its name
            detail = detail.replace(self.api_key, "[REDACTED]")
        if category == TRANSIENT and call.retries < self.max_retries:
            wait = backoff_seconds(
                exc, call.retries, self.backoff_base, self.backoff_max, self.rng.random()
            )
            if budget.seconds is not None and call.elapsed() + wait >= budget.seconds:
                call.exhausted(
                    Budget.SECONDS,
                    f"a retry after {cause} would start after the time budget ({wait:.1f} s wait)",
                )
            call.retries += 1
            self._emit(
                ModelRetryEvent(
                    model=self.name,
                    cause=cause,
                    attempt=call.attempts,
                    wait=round(wait, 3),
                    error=detail,
                )
            )
            self.sleep(wait)
            call.usage = call.usage + Usage(seconds=wait)
            return
        error_class = {TRANSIENT: TransientModelError, UNRECOVERABLE: UnrecoverableModelError}.get(
            category, ModelError
        )
        what = cause.replace("_", " ")
        if category == TRANSIENT:
            what += f", still failing after {call.retries} retries"
        self._raise(error_class, f"{self.name}: {what}: {detail}", self._hint(cause), call, exc)

    def _hint(self, cause: str) -> str:
        """``hint_for``'s fix, naming the variable the key really came from (or that it is
        unset)."""
        if not (self.api_key_env and "{key_env}" in HINTS.get(cause, "")):
            return hint_for(cause, self.name, self.api_base)
        unset = "" if os.environ.get(self.api_key_env, "").strip() else " (not set)"
        return HINTS[cause].format(
            key_env=self.api_key_env + unset, model=self.name, api_base=self.api_base
        )

    def _accept(
        self,
        response: Any,
        messages: List[Dict[str, str]],
        prompt_tokens: int,
        call: ModelCall,
        seconds: float,
    ) -> Proposal:
        """Turn a completion into a Proposal; raise ModelError for an unusable answer."""
        content, finish, reasoning = answer_of(response)
        call.usage = call.usage + completion_usage(
            response, self.name, self.price, (content, reasoning), prompt_tokens, seconds
        )
        calls = tool_calls_text(response)
        content = (content + "\n" + calls).strip() if calls else content
        answer = visible(content)
        cut_off = finish in CUT_OFF_REASONS
        if not cut_off:  # an unfinished answer is the loop's to refuse, never the run's end
            self._refuse_unusable(content, answer, finish, reasoning, call)
        notes: Dict[str, Any] = {
            "finish_reason": finish,
            "attempts": call.attempts,
            "retry_causes": call.causes,
            "edit_format": self.asked_format,
        }
        if reasoning or answer != content:
            notes["reasoning_chars"] = len(reasoning) + len(content) - len(answer)
        if reasoning:  # journalled (the journal redacts), never parsed
            notes["reasoning"] = reasoning[:MAX_REASONING_CHARS]
        if len(content) > MAX_ANSWER_CHARS:
            notes["truncated_from_chars"] = len(content)
            self._emit(
                AnswerTruncatedEvent(model=self.name, chars=len(content), kept=MAX_ANSWER_CHARS)
            )
            content = content[:MAX_ANSWER_CHARS]
        return Proposal(
            answer=content,
            engine=self.engine,
            model=self.name,
            usage=call.usage,
            prompt=tuple(messages),
            notes=notes,
            cut_off=cut_off,
        )

    def _refuse_unusable(
        self, content: str, answer: str, finish: Any, reasoning: str, call: ModelCall
    ) -> None:
        """ModelError for an answer no patch can come from: filtered, only thinking, empty, a
        refusal."""
        hint = "try another model"
        if finish == "content_filter":
            self._raise(
                ModelError, f"{self.name}: the answer was stopped by a content filter", hint, call
            )
        if not answer.strip() and (reasoning.strip() or content.strip()):
            thought = len(reasoning) + len(content)
            self._raise(
                ModelError,
                f"{self.name}: the answer holds only thinking ({thought} characters, "
                f"finish_reason {finish!r}), no patch after it",
                "raise max_completion_tokens (a reasoning model spends them thinking first), "
                "or try another model",
                call,
            )
        if not content.strip():
            self._raise(
                ModelError, f"{self.name}: empty answer (finish_reason {finish!r})", hint, call
            )
        if is_refusal(answer):
            self._raise(
                ModelError, f"{self.name}: the model refused: {answer.strip()[:200]!r}", hint, call
            )

    def _raise(
        self,
        error_class: Type[ProposerError],
        message: str,
        hint: str,
        call: ModelCall,
        cause: Optional[BaseException] = None,
    ) -> NoReturn:
        exc: ProposerError = error_class(message, hint, usage=call.usage, attempts=call.attempts)
        self._emit(
            ModelErrorEvent(
                model=self.name, error=error_class.__name__, message=message, attempts=call.attempts
            )
        )
        raise exc from cause

    def _emit(self, record: ModelEvent) -> None:
        if self.on_event is not None:
            self.on_event(record)
