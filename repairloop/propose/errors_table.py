"""Model-side exceptions to DESIGN.md's error classes, in one ordered table.

litellm's exception classes are not a clean tree (TECH-NOTES 1.8): timeouts
are not litellm connection errors, 503 is not an internal server error, and
context-window and content-policy errors are bad requests. So the table is
ordered most specific first and the first matching row wins. A row matches
when one of its class names ("module.QualName") is in the exception's MRO, so
classifying never imports litellm; ``tests/test_llm.py`` walks every class in
``litellm.exceptions`` and fails on one this table does not name.

Some rows also look at the status code or the message, because litellm turns
several different failures into ``InternalServerError(500)`` (TECH-NOTES 1.9):
"Missing credentials" (no API key: unrecoverable), "Connection error" (nothing
listening, connection dropped: transient), and a malformed, empty or HTML body
("Expecting property name...", "Empty or invalid response": transient, but the
proposer retries that cause only once and then calls it a model error, since a
server that answers garbage twice is unlikely to stop).

Also here, because they read exceptions and need no litellm: ``hint_for``
(the fix to suggest for a cause), ``retry_after_seconds`` (the server's
Retry-After) and ``describe`` (a one-line summary for messages and journals).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, List, Optional, Tuple, Union

TRANSIENT = "transient"
STRUCTURAL = "structural"
MODEL = "model"
UNRECOVERABLE = "unrecoverable"

L = "litellm.exceptions."
# Classes that carry any status code: classified by ``status_code`` rows.
STATUS_CARRIERS = (
    L + "APIError",
    L + "MockException",
    L + "OpenAIError",
    "openai.APIStatusError",
    "openai.APIError",
    "openai.OpenAIError",
)


@dataclass(frozen=True)
class Rule:
    """One row: if a class in ``classes`` is in the MRO (and ``when`` holds) -> ``category``."""

    classes: Tuple[str, ...]
    category: str
    cause: str
    when: Optional[Callable[[BaseException], bool]] = None


def _status(exc: BaseException) -> Optional[int]:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _says(pattern: str) -> Callable[[BaseException], bool]:
    regex = re.compile(pattern, re.IGNORECASE)
    return lambda exc: bool(regex.search(str(exc)))


def _status_in(*codes: int) -> Callable[[BaseException], bool]:
    return lambda exc: _status(exc) in codes


def _server_side(exc: BaseException) -> bool:
    return (_status(exc) or 0) >= 500


_NO_KEY = _says(r"missing credentials|api[_ ]key.*(not set|must be set|required)")
_QUOTA = _says(r"insufficient_quota|exceeded your current quota")
_MALFORMED = _says(
    r"expecting (property name|value|',')|empty or invalid response|"
    r"json ?decode|invalid json|unterminated string|extra data"
)
_DROPPED = _says(r"connection error|server disconnected|connection (refused|reset|aborted)")


def _row(
    classes: Union[str, Tuple[str, ...]],
    category: str,
    cause: str,
    when: Optional[Callable[[BaseException], bool]] = None,
) -> Rule:
    names = (classes,) if isinstance(classes, str) else classes
    return Rule(tuple(n if "." in n else L + n for n in names), category, cause, when)


RULES: Tuple[Rule, ...] = (
    # Our own structural errors, so the loop can classify everything in one place.
    _row("repairloop.errors.PatchError", STRUCTURAL, "patch"),
    # Account and configuration: no retry changes these (for this model).
    _row(("CallerCredentialAuthenticationError", "AuthenticationError"), UNRECOVERABLE, "auth"),
    _row("PermissionDeniedError", UNRECOVERABLE, "permission"),
    _row("NotFoundError", UNRECOVERABLE, "not_found"),
    _row("BudgetExceededError", UNRECOVERABLE, "budget"),
    _row("PaymentRequiredError", UNRECOVERABLE, "payment"),
    _row("LiteLLMUnknownProvider", UNRECOVERABLE, "unknown_provider"),
    _row(
        ("UnsupportedEndpointError", "EndpointNotSupportedByModelError"),
        UNRECOVERABLE,
        "unsupported_endpoint",
    ),
    # The 400 family, most specific first (they all subclass BadRequestError).
    _row("ContextWindowExceededError", MODEL, "context_window"),
    _row("ContentPolicyViolationError", MODEL, "content_policy"),
    _row("RejectedRequestError", MODEL, "rejected"),
    _row("UnsupportedParamsError", MODEL, "unsupported_params"),
    _row(
        ("MalformedRequestFieldError", "ImageFetchError", "VectorStoreSearchError"),
        MODEL,
        "bad_request",
    ),
    _row("BadRequestError", UNRECOVERABLE, "unknown_provider", _says(r"LLM Provider NOT provided")),
    _row(
        ("BadRequestError", "InvalidRequestError", "UnprocessableEntityError"), MODEL, "bad_request"
    ),
    _row(("JSONSchemaValidationError", "APIResponseValidationError"), MODEL, "invalid_response"),
    _row(
        (
            "BlockedPiiEntityError",
            "GuardrailRaisedException",
            "ModifyResponseException",
            "SensitiveDataRouteException",
        ),
        MODEL,
        "guardrail",
    ),
    _row("ModelNotMappedError", MODEL, "not_mapped"),  # raised by pricing, which we catch
    # Transient: retried with backoff; a quota "rate limit" is an account problem.
    _row(("CallerCredentialRateLimitError", "RateLimitError"), UNRECOVERABLE, "quota", _QUOTA),
    _row(("CallerCredentialRateLimitError", "RateLimitError"), TRANSIENT, "rate_limit"),
    _row("Timeout", TRANSIENT, "timeout"),
    _row("APIConnectionError", TRANSIENT, "connection"),
    _row(
        ("MidStreamFallbackError", "ServiceUnavailableError", "BadGatewayError"),
        TRANSIENT,
        "server_error",
    ),
    _row("InternalServerError", UNRECOVERABLE, "auth", _NO_KEY),
    _row("InternalServerError", TRANSIENT, "connection", _DROPPED),
    _row("InternalServerError", TRANSIENT, "malformed_response", _MALFORMED),
    _row("InternalServerError", TRANSIENT, "server_error"),
    # Anything carrying a status code (litellm's generic APIError, e.g. 403; raw openai errors).
    _row(STATUS_CARRIERS, UNRECOVERABLE, "auth", _status_in(401)),
    _row(STATUS_CARRIERS, UNRECOVERABLE, "permission", _status_in(403)),
    _row(STATUS_CARRIERS, UNRECOVERABLE, "not_found", _status_in(404)),
    _row(STATUS_CARRIERS, UNRECOVERABLE, "payment", _status_in(402)),
    _row(STATUS_CARRIERS, TRANSIENT, "rate_limit", _status_in(429)),
    _row(STATUS_CARRIERS, TRANSIENT, "timeout", _status_in(408, 504)),
    _row(STATUS_CARRIERS, TRANSIENT, "server_error", _server_side),
    # The openai SDK's own classes, should one escape litellm's mapping.
    _row("openai.APIConnectionError", TRANSIENT, "connection"),  # includes APITimeoutError
    _row("openai.APIResponseValidationError", MODEL, "invalid_response"),
    _row(STATUS_CARRIERS, MODEL, "api_error"),  # any other status: not worth a retry
    # Transport errors raised raw (httpx, sockets).
    _row(
        ("httpx.TransportError", "builtins.TimeoutError", "builtins.ConnectionError"),
        TRANSIENT,
        "connection",
    ),
)

HINTS = {
    "auth": "check {key_env} for {model}",
    "permission": "check that the API key in {key_env} may use {model}",
    "not_found": "check the model name {model!r} (and --api-base {api_base})",
    "budget": "raise the provider-side budget for this key, or use another model",
    "payment": "add credits to the account behind {key_env}",
    "quota": "the account behind {key_env} is out of quota: check its plan and billing",
    "unknown_provider": "check the model name {model!r}: prefix it with a provider, e.g. "
    "openai/NAME",
    "unsupported_endpoint": "check that {model!r} is a chat model",
    "context_window": "the prompt is too long for {model}: lower the context budget or use a "
    "larger model",
    "content_policy": "the provider's content filter refused the request; try another model",
    "connection": "check that the server at {api_base} is up and reachable",
    "timeout": "raise --timeout, or check the server at {api_base}",
    "rate_limit": "wait and retry later, or lower the request rate",
    "server_error": "the provider had a server error; retry later or use another model",
    "malformed_response": "the server at {api_base} answered something that is not a chat "
    "completion",
}


# Errors raised before a connection existed: the request never left, so nothing is charged.
# httpx and httpcore name theirs ConnectError and ConnectTimeout; the OS's is
# ConnectionRefusedError, and a name that does not resolve is socket.gaierror.
_NOT_CONNECTED = ("ConnectError", "ConnectTimeout", "ConnectionRefusedError", "gaierror")


def never_sent(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) says no connection to the server
    was made, so the prompt was never sent: a refused connection, a connect timeout, an unknown
    host. A connection dropped after it was made may have carried the prompt: False."""
    seen = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in _NOT_CONNECTED:
            return True
        current = current.__cause__ or current.__context__
    return False


def classify_exception(exc: BaseException) -> Tuple[str, str]:
    """Return ``(category, cause)`` for a model-side exception; first matching row wins.

    ``category`` is one of ``transient``, ``structural``, ``model``,
    ``unrecoverable`` (DESIGN.md, "Errors from the model side"); ``cause`` is a
    short key of ``HINTS``. An exception no row names is a ``model`` error
    (``unknown``): the next model in the chain may do better.
    """
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(exc).__mro__}
    for rule in RULES:
        if names.intersection(rule.classes) and (rule.when is None or rule.when(exc)):
            return rule.category, rule.cause
    return MODEL, "unknown"


def hint_for(cause: str, model: str, api_base: Optional[str]) -> str:
    """The fix to suggest for ``cause``, naming the key variable, model and server."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    key_env = f"{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_API_KEY"
    template = HINTS.get(cause, "see the error above; try another model")
    return template.format(
        key_env=key_env, model=model, api_base=api_base or "the provider's default"
    )


def retry_after_seconds(exc: BaseException) -> Optional[float]:
    """The server's Retry-After (``retry-after-ms``, seconds or an HTTP date) on ``exc``, if any."""
    for headers in _header_sources(exc):
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        try:
            if "retry-after-ms" in lowered:
                return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
            if "retry-after" in lowered:
                value = lowered["retry-after"].strip()
                if re.fullmatch(r"\d+(\.\d+)?", value):
                    return float(value)
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            continue  # unparseable header: fall back to our own backoff
    return None


def _header_sources(exc: BaseException) -> List[Any]:
    """Header mappings an exception may carry: its HTTP response's, litellm's copy, its own."""
    try:
        response = getattr(exc, "response", None)
    except Exception:  # some SDK errors raise instead of having no response
        response = None
    candidates = (
        getattr(response, "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    )
    return [h for h in candidates if h is not None and hasattr(h, "items")]


def describe(exc: BaseException) -> str:
    """``Type: first line of the message`` without litellm's repeated class prefixes, capped."""
    lines = str(exc).strip().splitlines()
    line = re.sub(r"^(?:(?:litellm\.)?\w+: )+", "", lines[0] if lines else "")
    line = re.sub(r"^\w+Exception - ", "", line).split(", Received response")[0]
    return f"{type(exc).__name__}: {line[:200]}" if line else type(exc).__name__


def backoff_seconds(
    exc: BaseException, retry: int, base: float, cap: float, jitter: float
) -> float:
    """Seconds to wait before retry number ``retry + 1``: the server's Retry-After, else ``base *
    2**retry`` plus up to 50 % (``jitter`` is 0..1), capped at ``cap``."""
    after = retry_after_seconds(exc)
    if after is not None:
        return min(float(after), cap)
    nominal: float = min(cap, base * 2.0**retry)
    return min(cap, nominal * (1.0 + 0.5 * jitter))
