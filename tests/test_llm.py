"""The model proposer through the real litellm against the scripted local server.

No network: every server listens on 127.0.0.1, port 0 (tests/scripted_server.py).
Waits are recorded by an injected ``sleep`` instead of slept, so retry tests
are fast and not timing-sensitive; only the hang tests spend real seconds (1 s
timeouts).
"""

from __future__ import annotations

import importlib
import inspect
import os
import random
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import httpx
import pytest
from scripted_server import ScriptedServer

from repairloop.errors import (
    BudgetExhausted,
    ModelError,
    PatchError,
    TransientModelError,
    UnrecoverableModelError,
)
from repairloop.journal import event_to_json
from repairloop.propose import errors_table
from repairloop.propose.llm import (
    MAX_ANSWER_CHARS,
    LLMProposer,
    classify_model_exception,
    count_tokens,
    load_litellm,
)
from repairloop.propose.prompts import render_messages
from repairloop.types import BudgetLeft, CodeSlice, Feedback, ProposalRequest, RepairContext

REPO = Path(__file__).resolve().parent.parent
MODEL = "openai/scripted"
DIFF = (
    "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -1,2 +1,2 @@\n def last(xs):\n-    return "
    "xs[len(xs)]\n+    return xs[-1]\n"
)
CONTEXT = RepairContext(
    failing_tests=("tests/test_lists.py::test_last",),
    message="IndexError: list index out of range",
    traceback="calc/lists.py:2 in last\n    return xs[len(xs)]",
    slices=(CodeSlice("calc/lists.py", 1, 2, "last", "def last(xs):\n    return xs[len(xs)]\n"),),
)


class Recorder:
    """Stands in for ``time.sleep`` and for the journal hook."""

    def __init__(self) -> None:
        self.waits: List[float] = []
        self.events: List[Dict[str, Any]] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def make(
    srv: Optional[ScriptedServer],
    rec: Recorder,
    *,
    api_base: Optional[str] = None,
    model: str = MODEL,
    **kwargs: Any,
) -> LLMProposer:
    options: Dict[str, Any] = {"timeout": 10.0, "max_retries": 3, "max_completion_tokens": 256}
    options.update(kwargs)
    return LLMProposer(
        model,
        api_base=api_base or (srv.base_url if srv else None),
        sleep=rec.sleep,
        rng=random.Random(7),
        on_event=lambda e: rec.events.append({"event": e.kind.value, **event_to_json(e)}),
        **options,
    )


def request(**kwargs: Any) -> ProposalRequest:
    return ProposalRequest(context=CONTEXT, **kwargs)


def prompt_tokens_of(req: ProposalRequest) -> int:
    """What the proposer counts for one attempt's prompt (content tokens + 4 per message)."""
    return sum(
        count_tokens(MODEL, m["content"]) + 4 for m in render_messages(req.context, req.feedback)
    )


# --- answers ----------------------------------------------------------------------------------


def test_ok_answer_gives_proposal_with_usage_and_one_call() -> None:
    rec = Recorder()
    with ScriptedServer([("ok", DIFF)]) as srv:
        proposal = make(srv, rec).propose(request())
    body = srv.requests[0]
    chars = sum(len(m["content"]) for m in body["messages"])
    assert proposal.answer == DIFF
    assert (proposal.engine, proposal.model) == ("llm", MODEL)
    assert proposal.usage.prompt_tokens == chars // 4  # the server's numbers, not our estimate
    assert proposal.usage.completion_tokens == len(DIFF) // 4
    assert proposal.usage.calls == 1 and proposal.usage.cost_usd is None  # unpriced model
    assert [m["role"] for m in proposal.prompt] == ["system", "user"]
    assert body["model"] == "scripted" and body["temperature"] == 0 and body["max_tokens"] == 256
    assert rec.waits == []


def test_priced_model_reports_cost() -> None:
    rec = Recorder()
    with ScriptedServer([("ok", DIFF)]) as srv:
        proposal = make(srv, rec, model="openai/gpt-4o-mini").propose(request())
    assert proposal.usage.cost_usd is not None and proposal.usage.cost_usd > 0


def test_answer_of_200k_tokens_is_capped_and_noted() -> None:
    rec = Recorder()
    huge = DIFF + "+x = 1\n" * 120_000  # ~840,000 chars, about 200,000 tokens
    with ScriptedServer([("ok", huge)]) as srv:
        proposal = make(srv, rec).propose(request())
    assert len(proposal.answer) == MAX_ANSWER_CHARS and proposal.answer.startswith(DIFF)
    assert proposal.notes["truncated_from_chars"] == len(huge)
    assert any(e["event"] == "model_answer_truncated" for e in rec.events)


@pytest.mark.parametrize(
    "item",
    [
        ("empty",),
        ("ok", "I'm sorry, but I can't help with that request."),
        ("ok", "I cannot assist with modifying this code."),
        ("ok", DIFF, "content_filter"),
        (
            "status",
            400,
            "This model's maximum context length is 8192 tokens. However, you requested 9000.",
        ),
        ("status", 400, "Invalid parameter: temperature"),
        ("status", 422, "Unprocessable entity"),
    ],
    ids=[
        "empty",
        "refusal",
        "cannot-assist",
        "content-filter",
        "context-window",
        "bad-request",
        "422",
    ],
)
def test_unusable_answers_are_model_errors_without_retry(item: tuple) -> None:
    rec = Recorder()
    with ScriptedServer([item]) as srv:
        with pytest.raises(ModelError) as info:
            make(srv, rec).propose(request())
    assert len(srv.requests) == 1 and rec.waits == []
    assert info.value.attempts == 1 and info.value.usage.calls == 1
    assert info.value.usage.prompt_tokens > 0


def test_refusal_words_inside_a_patch_are_not_a_refusal() -> None:
    answer = DIFF + "+# I can't help noticing this was off by one\n"
    with ScriptedServer([("ok", answer)]) as srv:
        assert make(srv, Recorder()).propose(request()).answer == answer


@pytest.mark.parametrize(
    "code, message, hint_word",
    [
        (401, "Incorrect API key provided", "OPENAI_API_KEY"),
        (403, "You are not allowed to use this model", "OPENAI_API_KEY"),
        (404, "The model `scripted` does not exist", "model name"),
    ],
)
def test_auth_and_unknown_model_are_unrecoverable(code: int, message: str, hint_word: str) -> None:
    with ScriptedServer([("status", code, message)]) as srv:
        with pytest.raises(UnrecoverableModelError) as info:
            make(srv, Recorder()).propose(request())
    assert len(srv.requests) == 1
    assert message in info.value.message and hint_word in info.value.hint


# --- transient errors -------------------------------------------------------------------------


def test_retry_after_is_honoured() -> None:
    rec = Recorder()
    with ScriptedServer(
        [("status", 429, "Rate limit reached", {"Retry-After": "1"}), ("ok", DIFF)]
    ) as srv:
        proposal = make(srv, rec, backoff_base=0.01).propose(request())
    assert len(srv.requests) == 2 and rec.waits == [1.0]
    assert proposal.usage.calls == 2
    retry = [e for e in rec.events if e["event"] == "model_retry"]
    assert retry == [
        {
            "event": "model_retry",
            "model": MODEL,
            "cause": "rate_limit",
            "attempt": 1,
            "wait": 1.0,
            "error": retry[0]["error"],
        }
    ]


def test_retry_after_is_capped_at_backoff_max() -> None:
    rec = Recorder()
    with ScriptedServer(
        [("status", 429, "slow down", {"Retry-After": "3600"}), ("ok", DIFF)]
    ) as srv:
        make(srv, rec, backoff_max=5.0).propose(request())
    assert rec.waits == [5.0]


@pytest.mark.parametrize(
    "item",
    [
        ("status", 429, "Rate limit reached"),
        ("status", 500, "Internal error"),
        ("status", 502, "Bad gateway"),
        ("status", 503, "Service unavailable"),
    ],
    ids=["429", "500", "502", "503"],
)
def test_transient_errors_back_off_and_are_bounded(item: tuple) -> None:
    rec = Recorder()
    with ScriptedServer([item]) as srv:
        with pytest.raises(TransientModelError) as info:
            make(srv, rec, max_retries=3).propose(request())
    assert len(srv.requests) == 4  # max_retries + 1
    assert len(rec.waits) == 3 and rec.waits == sorted(rec.waits) and rec.waits[0] < rec.waits[-1]
    assert all(1.0 <= w <= 30.0 for w in rec.waits)
    assert info.value.attempts == 4 and info.value.usage.calls == 4


def test_hang_past_timeout_is_retried_with_identical_rebuilt_requests() -> None:
    rec = Recorder()
    with ScriptedServer([("hang", 3)]) as srv:
        with pytest.raises(TransientModelError) as info:
            make(srv, rec, timeout=1.0, max_retries=1).propose(request())
    assert len(srv.requests) == 2 and srv.requests[0] == srv.requests[1]
    assert "timeout" in info.value.message
    assert info.value.usage.seconds >= 2.0  # two 1-second attempts plus the wait


def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rec = Recorder()
    with pytest.raises(TransientModelError) as info:
        make(None, rec, api_base=f"http://127.0.0.1:{port}/v1", max_retries=2).propose(request())
    assert info.value.attempts == 3 and len(rec.waits) == 2
    assert "127.0.0.1" in info.value.hint
    # nothing reached a server: no tokens are charged (seen in a new user's trial: 4 x the prompt)
    assert info.value.usage.calls == 3 and info.value.usage.prompt_tokens == 0


def test_dropped_connection_is_retried_then_answered() -> None:
    rec = Recorder()
    with ScriptedServer([("close",), ("ok", DIFF)]) as srv:
        proposal = make(srv, rec).propose(request())
    assert proposal.answer == DIFF and len(rec.waits) == 1


@pytest.mark.parametrize("bad", [("garbage",), ("html",)])
def test_malformed_body_is_retried_once_then_a_model_error(bad: tuple) -> None:
    rec = Recorder()
    with ScriptedServer([bad, ("ok", DIFF)]) as srv:
        assert make(srv, rec).propose(request()).answer == DIFF
    with ScriptedServer([bad]) as srv:
        with pytest.raises(ModelError) as info:
            make(srv, rec, max_retries=5).propose(request())
    assert len(srv.requests) == 2 and info.value.attempts == 2


# --- usage and budget -------------------------------------------------------------------------


def test_usage_counts_failed_attempts() -> None:
    rec = Recorder()
    with ScriptedServer([("status", 500, "boom"), ("ok", DIFF)]) as srv:
        proposal = make(srv, rec).propose(request())
    chars = sum(len(m["content"]) for m in srv.requests[1]["messages"])
    assert proposal.usage.calls == 2
    assert proposal.usage.prompt_tokens == prompt_tokens_of(request()) + chars // 4


def test_token_budget_too_small_sends_nothing() -> None:
    with ScriptedServer([("ok", DIFF)]) as srv:
        with pytest.raises(BudgetExhausted) as info:
            make(srv, Recorder()).propose(request(budget=BudgetLeft(tokens=100)))
    assert srv.requests == [] and info.value.budget == "tokens" and info.value.usage.calls == 0


def test_token_budget_gates_every_retry() -> None:
    req = request(budget=BudgetLeft(tokens=prompt_tokens_of(request()) + 256 + 10))
    with ScriptedServer([("status", 500, "boom")]) as srv:
        with pytest.raises(BudgetExhausted) as info:
            make(srv, Recorder()).propose(req)
    assert len(srv.requests) == 1  # the retry did not fit what the failed attempt left
    assert (
        info.value.budget == "tokens" and info.value.usage.calls == 1 and info.value.attempts == 1
    )


def test_cost_budget_gate_uses_litellm_prices() -> None:
    with ScriptedServer([("ok", DIFF)]) as srv:
        with pytest.raises(BudgetExhausted) as info:
            make(srv, Recorder(), model="openai/gpt-4o-mini").propose(
                request(budget=BudgetLeft(cost_usd=1e-9))
            )
        assert srv.requests == [] and info.value.budget == "cost"
        # an unpriced model costs 0 by estimate: the same budget lets it through
        assert (
            make(srv, Recorder()).propose(request(budget=BudgetLeft(cost_usd=1e-9))).answer == DIFF
        )


def test_no_seconds_left_sends_nothing() -> None:
    with ScriptedServer([("ok", DIFF)]) as srv:
        with pytest.raises(BudgetExhausted) as info:
            make(srv, Recorder()).propose(request(budget=BudgetLeft(seconds=0)))
    assert srv.requests == [] and info.value.budget == "seconds"


def test_seconds_budget_clamps_timeout_and_stops_retries() -> None:
    rec = Recorder()
    with ScriptedServer([("hang", 5)]) as srv:
        with pytest.raises(BudgetExhausted) as info:
            make(srv, rec, timeout=120.0).propose(request(budget=BudgetLeft(seconds=1.0)))
    assert len(srv.requests) == 1 and rec.waits == []  # the retry would start past the budget
    assert info.value.budget == "seconds" and info.value.usage.calls == 1


# --- prompt shape -----------------------------------------------------------------------------


def test_feedback_sends_four_messages_with_the_error_last() -> None:
    feedback = Feedback(answer="Just change the index.", error="no patch found in the answer")
    with ScriptedServer([("ok", DIFF)]) as srv:
        proposal = make(srv, Recorder()).propose(request(feedback=feedback))
    messages = srv.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "Just change the index."
    assert "no patch found in the answer" in messages[3]["content"]
    assert len(proposal.prompt) == 4


# --- litellm hygiene --------------------------------------------------------------------------


def test_litellm_prints_nothing_on_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    rec = Recorder()
    with ScriptedServer(
        [("status", 500, "boom"), ("garbage",), ("ok", DIFF), ("status", 401, "bad key")]
    ) as srv:
        make(srv, rec).propose(request())
        with pytest.raises(UnrecoverableModelError):
            make(srv, rec).propose(request())
        with pytest.raises(UnrecoverableModelError) as info:  # litellm prints "Provider List" here
            make(srv, rec, model="no-provider-model").propose(request())
    assert "provider" in info.value.hint
    count_tokens("meta-llama/llama-3-8b-instruct", "hello")  # would fetch a tokenizer when online
    out, _ = capfd.readouterr()
    assert out == ""


@pytest.mark.slow  # a fresh interpreter imports litellm: seconds
def test_import_is_lazy_and_dotenv_is_not_loaded(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("REPAIRLOOP_FAKE_SECRET=leaked\n")
    script = (
        "import sys, os\nimport repairloop.propose.llm as llm\n"
        "assert 'litellm' not in sys.modules, 'litellm imported at module import'\n"
        "llm.load_litellm()\nassert 'litellm' in sys.modules\n"
        "sys.stderr.write(repr(os.environ.get('REPAIRLOOP_FAKE_SECRET')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.endswith("None")


# --- the exception table ----------------------------------------------------------------------


def _litellm_exception_classes() -> List[type]:
    module = importlib.import_module("litellm.exceptions")
    return [c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, Exception)]


def test_every_litellm_exception_class_has_an_explicit_row() -> None:
    load_litellm()
    named = {name for rule in errors_table.RULES for name in rule.classes}
    missing = [
        f"{c.__module__}.{c.__qualname__}"
        for c in _litellm_exception_classes()
        if f"{c.__module__}.{c.__qualname__}" not in named
    ]
    assert missing == [], f"add these litellm exceptions to errors_table.RULES: {missing}"


def _resolve(name: str) -> Optional[type]:
    module, _, qualname = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), qualname)  # type: ignore[no-any-return]
    except (ImportError, AttributeError):
        return None


def test_no_row_is_shadowed_by_an_earlier_unconditional_row() -> None:
    load_litellm()
    seen: List[type] = []
    for rule in errors_table.RULES:
        classes = [c for c in map(_resolve, rule.classes) if c is not None]
        assert classes, f"row names no importable class: {rule}"
        for cls in classes:
            shadow = [s for s in seen if issubclass(cls, s)]
            assert not shadow, f"{cls} is caught by earlier row for {shadow}"
        if rule.when is None:
            seen.extend(classes)


def test_classification_of_constructed_exceptions() -> None:
    litellm = load_litellm()
    req = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    args = {"llm_provider": "openai", "model": "m"}
    cases = [
        (litellm.RateLimitError("slow down", **args), "transient"),
        (litellm.RateLimitError("You exceeded your current quota", **args), "unrecoverable"),
        (litellm.Timeout("timed out", **args), "transient"),
        (litellm.APIConnectionError("refused", request=req, **args), "transient"),
        (litellm.ServiceUnavailableError("503", **args), "transient"),
        (litellm.InternalServerError("Connection error.", **args), "transient"),
        (
            litellm.InternalServerError("Missing credentials. Please pass an `api_key`", **args),
            "unrecoverable",
        ),
        (litellm.APIError(502, "bad", request=req, **args), "transient"),
        (litellm.APIError(403, "forbidden", request=req, **args), "unrecoverable"),
        (litellm.APIError(418, "teapot", request=req, **args), "model"),
        (litellm.ContextWindowExceededError("too long", **args), "model"),
        (litellm.ContentPolicyViolationError("unsafe", **args), "model"),
        (litellm.BadRequestError("LLM Provider NOT provided", **args), "unrecoverable"),
        (litellm.AuthenticationError("bad key", **args), "unrecoverable"),
        (litellm.NotFoundError("no such model", **args), "unrecoverable"),
        (litellm.BudgetExceededError(current_cost=2.0, max_budget=1.0), "unrecoverable"),
        (PatchError("hunk does not apply"), "structural"),
        (ConnectionResetError(), "transient"),
        (ValueError("something else"), "model"),
    ]
    got = [(type(e).__name__, classify_model_exception(e)) for e, _ in cases]
    assert got == [(type(e).__name__, want) for e, want in cases]


def test_retry_after_header_forms() -> None:
    litellm = load_litellm()

    def rate_limit(headers: Dict[str, str]) -> BaseException:
        response = httpx.Response(
            429, headers=headers, request=httpx.Request("POST", "http://127.0.0.1/v1")
        )
        return litellm.RateLimitError("slow", llm_provider="openai", model="m", response=response)

    assert errors_table.retry_after_seconds(rate_limit({"retry-after-ms": "1500"})) == 1.5
    assert errors_table.retry_after_seconds(rate_limit({"Retry-After": "2"})) == 2.0
    assert (
        errors_table.retry_after_seconds(
            rate_limit({"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"})
        )
        == 0.0
    )
    assert errors_table.retry_after_seconds(rate_limit({"Retry-After": "soon"})) is None
    assert errors_table.retry_after_seconds(rate_limit({})) is None


def test_count_tokens_is_positive_and_offline() -> None:
    assert 0 < count_tokens(MODEL, "def last(xs):\n    return xs[-1]\n") < 40


# --- the scripted server itself ---------------------------------------------------------------


def test_scripted_server_accepts_callables_and_runs_as_a_script(tmp_path: Path) -> None:
    def echo_roles(body: Dict[str, Any]) -> tuple:
        return ("ok", DIFF + "# roles: " + ",".join(m["role"] for m in body["messages"]) + "\n")

    with ScriptedServer([echo_roles]) as srv:
        assert make(srv, Recorder()).propose(request()).answer.endswith("# roles: system,user\n")
    answer = tmp_path / "answer.txt"
    answer.write_text(DIFF)
    command = [
        sys.executable,
        str(REPO / "tests" / "scripted_server.py"),
        "--port",
        "0",
        "--answer-file",
        str(answer),
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            base_url = proc.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
            assert make(None, Recorder(), api_base=base_url).propose(request()).answer == DIFF
        finally:
            proc.terminate()
