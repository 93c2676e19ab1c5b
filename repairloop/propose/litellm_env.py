"""litellm, imported lazily with its gotchas silenced, and what it knows offline: tokens, prices,
key names.

This is the one module that imports litellm (``load_litellm``): the import
takes about 3 s and, unless told otherwise first, fetches a price map from the
network, may download tokenizers, loads ``.env`` files from the working
directory and prints to stdout (TECH-NOTES 1.2-1.4).
"""

from __future__ import annotations

import logging
import os
import re
from types import ModuleType
from typing import Any, Optional, Sequence, Tuple

from repairloop.propose.errors_table import classify_exception
from repairloop.types import Usage

_ENV_DEFAULTS = (
    ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),  # no price-map fetch at import
    ("LITELLM_OFFLINE_MODE", "true"),  # no tokenizer downloads
    ("LITELLM_MODE", "PRODUCTION"),
)  # do not load the project's .env secrets
_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


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


def price_usd(
    model: str, prompt_tokens: int, completion_tokens: int, price: Optional[Sequence[float]] = None
) -> Optional[float]:
    """USD for the given tokens: from ``price`` (the user's ``model_prices`` entry: USD per million
    prompt and completion tokens) when given, else litellm's bundled price map; None when not
    priced."""
    if price is not None:
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
    try:
        prompt, completion = load_litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
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


def response_cost(
    response: Any,
    model: str,
    price: Optional[Sequence[float]] = None,
    tokens: Tuple[int, int] = (0, 0),
) -> Optional[float]:
    """USD of one completion: ``tokens`` (prompt, completion) at ``price`` when the user gave one
    (``price_usd``), else litellm's ``response_cost``, else ``completion_cost``; None if
    unpriced."""
    if price is not None:
        return price_usd(model, tokens[0], tokens[1], price)
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if cost is None:
        try:
            cost = load_litellm().completion_cost(completion_response=response, model=model)
        except Exception:  # ModelNotMappedError (TECH-NOTES 1.6): the model is not priced
            return None
    return None if cost is None else float(cost)


def completion_usage(
    response: Any,
    model: str,
    price: Optional[Sequence[float]],
    said: Tuple[str, str],
    prompt_tokens: int,
    seconds: float,
) -> Usage:
    """One call's tokens (the server's count, else ours) and cost (USD); ``said`` is the answer's
    (content, reasoning), counted when the server reports no completion tokens."""
    content, reasoning = said
    reported = getattr(response, "usage", None)
    used_prompt = getattr(reported, "prompt_tokens", None)
    used_completion = getattr(reported, "completion_tokens", None)
    # Providers count reasoning in completion_tokens; counted here, it is counted too. A server
    # that sends no usage gets zeros from litellm (measured, 1.110.2): zero for a non-empty
    # answer is unknown.
    counted = count_tokens(model, content) + (count_tokens(model, reasoning) if reasoning else 0)
    used = (
        int(used_prompt) if used_prompt else prompt_tokens,
        int(used_completion or 0) if used_completion or not counted else counted,
    )
    return Usage(used[0], used[1], response_cost(response, model, price, used), seconds, 1)


def calls_functions(model: str) -> bool:
    """litellm's ``supports_function_calling`` for ``model`` (its model map), False when it cannot
    tell (an unknown provider or model makes litellm raise rather than say no)."""
    try:
        return bool(load_litellm().supports_function_calling(model))
    except Exception:
        return False
