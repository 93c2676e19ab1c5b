"""The model proposer and real models' habits: reasoning, edit formats, refused parameters.

Through the real litellm against the scripted server on 127.0.0.1 (tests/scripted_server.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Dict, List

import pytest
from scripted_server import ScriptedServer

from repairloop.errors import ConfigError, ModelError
from repairloop.journal import event_to_json
from repairloop.propose.llm import LLMProposer, count_tokens
from repairloop.propose.prompts import SYSTEM_PROMPTS
from repairloop.settings import Settings, edit_format_for, load_settings
from repairloop.types import CodeSlice, Feedback, ProposalRequest, RepairContext

MODEL = "openai/scripted"
FIX = "```python\ndef last(xs):\n    return xs[-1]\n```"
CONTEXT = RepairContext(
    failing_tests=("tests/test_lists.py::test_last",),
    message="IndexError: list index out of range",
    traceback="calc/lists.py:2 in last",
    slices=(CodeSlice("calc/lists.py", 1, 2, "last", "def last(xs):\n    return xs[len(xs)]\n"),),
)


def make(srv: ScriptedServer, events: List[Dict[str, Any]], **kwargs: Any) -> LLMProposer:
    return LLMProposer(
        MODEL,
        api_base=srv.base_url,
        timeout=10.0,
        max_retries=1,
        max_completion_tokens=256,
        sleep=lambda s: None,
        rng=random.Random(1),
        on_event=lambda e: events.append({"event": e.kind.value, **event_to_json(e)}),
        **kwargs,
    )


def system_prompt(body: Dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


# --- thinking and reasoning fields ------------------------------------------------------------


def test_reasoning_field_is_kept_apart_counted_and_noted() -> None:
    reasoning = "The index is off by one. " * 40
    events: List[Dict[str, Any]] = []
    with ScriptedServer([("ok", FIX, "stop", None, {"reasoning_content": reasoning})]) as srv:
        proposal = make(srv, events).propose(ProposalRequest(context=CONTEXT))
    assert proposal.answer == FIX  # the reasoning never reaches the answer
    assert proposal.notes["reasoning"] == reasoning and proposal.notes["reasoning_chars"] == len(
        reasoning
    )
    assert proposal.usage.completion_tokens == len(FIX) // 4  # the server's count stands


def test_reasoning_is_counted_when_the_server_reports_no_usage() -> None:
    reasoning = "Think about the slice bounds carefully. " * 30
    usage: Dict[str, int] = {}  # a server that reports no usage: litellm gives zeros
    with ScriptedServer([("ok", FIX, "stop", usage, {"reasoning_content": reasoning})]) as srv:
        proposal = make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert proposal.usage.completion_tokens == count_tokens(MODEL, FIX) + count_tokens(
        MODEL, reasoning
    )
    assert proposal.usage.prompt_tokens > 0


@pytest.mark.parametrize(
    "fields",
    [None, {"reasoning_content": "Checked the slice."}],
    ids=["litellm-moves-it", "kept-inline"],
)
def test_a_refusal_inside_thinking_is_not_a_refusal(fields: Any) -> None:
    """Without a reasoning field litellm moves inline <think> into reasoning_content (1.110.2); with
    one it leaves the content as it is: either way the thought is set aside and the answer is no
    refusal."""
    thought = "I can't help noticing the index; I cannot provide a guess without reading it."
    answer = f"<think>{thought}</think>\n" + FIX
    with ScriptedServer([("ok", answer, "stop", None, fields)]) as srv:
        proposal = make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert proposal.answer.strip() in (answer, FIX) and proposal.notes["reasoning_chars"] > 0


THINKING_ONLY = [
    ("<think>\nThe bug is in last(); let me write the diff", None),
    ("", {"reasoning_content": "Long reasoning that ran out of tokens"}),
]


@pytest.mark.parametrize("content,fields", THINKING_ONLY, ids=["unclosed-think", "reasoning-only"])
def test_an_answer_that_is_only_thinking_is_a_model_error_naming_it(
    content: str, fields: Any
) -> None:
    with ScriptedServer([("ok", content, "stop", None, fields)]) as srv:
        with pytest.raises(ModelError, match="holds only thinking") as info:
            make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert "max_completion_tokens" in info.value.hint and info.value.usage.calls == 1


@pytest.mark.parametrize("content,fields", THINKING_ONLY, ids=["unclosed-think", "reasoning-only"])
def test_thinking_cut_at_the_output_limit_is_an_unfinished_answer_not_the_end_of_the_run(
    content: str, fields: Any
) -> None:
    """Cut at the limit (finish_reason "length"), thinking that never closed is an unfinished
    answer the loop refuses and asks again for, never a model error that ends the run."""
    with ScriptedServer([("ok", content, "length", None, fields)]) as srv:
        proposal = make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert proposal.cut_off and proposal.notes["finish_reason"] == "length"


def test_a_complete_looking_answer_cut_at_the_output_limit_is_marked_unfinished() -> None:
    with ScriptedServer([("ok", FIX, "length"), ("ok", FIX, "stop")]) as srv:
        proposer = make(srv, [])
        cut = proposer.propose(ProposalRequest(context=CONTEXT))
        whole = proposer.propose(ProposalRequest(context=CONTEXT))
    assert cut.cut_off and cut.answer == FIX and not whole.cut_off


# --- edit formats --------------------------------------------------------------------------------


def test_each_format_has_its_own_system_prompt() -> None:
    assert (
        "unified diff" in SYSTEM_PROMPTS["diff"]
        and SYSTEM_PROMPTS["auto"] == SYSTEM_PROMPTS["diff"]
    )
    assert "SEARCH/REPLACE blocks only" in SYSTEM_PROMPTS["search_replace"]
    whole = SYSTEM_PROMPTS["whole"]
    assert (
        "complete new version of each function" in whole
        and "`...`" in whole
        and "unified diff" not in whole
    )
    assert all(len(p) < 1500 for p in SYSTEM_PROMPTS.values())


@pytest.mark.parametrize("fmt", ["diff", "search_replace", "whole"])
def test_a_fixed_format_is_asked_for_every_time(fmt: str) -> None:
    feedback = Feedback(answer="bad", error="no patch found in the answer")
    with ScriptedServer([("ok", FIX)]) as srv:
        proposer = make(srv, [], edit_format=fmt)
        proposer.propose(ProposalRequest(context=CONTEXT))
        proposer.propose(ProposalRequest(context=CONTEXT, feedback=feedback))
    assert [system_prompt(b) for b in srv.requests] == [SYSTEM_PROMPTS[fmt]] * 2


def test_auto_asks_for_diffs_then_whole_functions_after_a_structural_error() -> None:
    events: List[Dict[str, Any]] = []
    feedback = Feedback(
        answer="--- a/x\n+++ b/x\n@@\n-nothing", error="hunk 1 of x does not match the file"
    )
    with ScriptedServer([("ok", FIX)]) as srv:
        proposer = make(srv, events)
        first = proposer.propose(ProposalRequest(context=CONTEXT))
        proposer.propose(ProposalRequest(context=CONTEXT, feedback=feedback))
        later = proposer.propose(ProposalRequest(context=CONTEXT, iteration=2))
    prompts = [system_prompt(b) for b in srv.requests]
    assert prompts == [SYSTEM_PROMPTS["diff"], SYSTEM_PROMPTS["whole"], SYSTEM_PROMPTS["whole"]]
    retry = srv.requests[1]["messages"][-1]["content"]
    assert "does not match the file" in retry and "complete new version of each function" in retry
    assert (first.notes["edit_format"], later.notes["edit_format"]) == ("diff", "whole")
    assert [e["event"] for e in events] == ["edit_format_switched"]


def test_a_second_model_starts_with_diffs_again() -> None:
    """The switch belongs to the model that made the structural error, not to the run."""
    with ScriptedServer([("ok", FIX)]) as srv:
        one = make(srv, [])
        one.propose(
            ProposalRequest(context=CONTEXT, feedback=Feedback(answer="x", error="no patch found"))
        )
        make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert system_prompt(srv.requests[-1]) == SYSTEM_PROMPTS["diff"]


# --- parameters a model refuses
# ----------------------------------------------------------------------


def test_a_refused_temperature_is_dropped_and_the_request_sent_again() -> None:
    events: List[Dict[str, Any]] = []
    refused = (
        "status",
        400,
        "Unsupported parameter: 'temperature' is not supported with this model.",
        None,
        {"param": "temperature", "code": "unsupported_parameter"},
    )
    with ScriptedServer([refused, ("ok", FIX)]) as srv:
        proposer = make(srv, events)
        proposal = proposer.propose(ProposalRequest(context=CONTEXT))
        proposer.propose(ProposalRequest(context=CONTEXT, iteration=2))
    assert proposal.answer == FIX and proposal.usage.calls == 2 and proposal.notes["attempts"] == 2
    assert "temperature" in srv.requests[0] and all(
        "temperature" not in b for b in srv.requests[1:]
    )
    assert [e["param"] for e in events if e["event"] == "model_param_dropped"] == ["temperature"]


def test_a_refused_max_tokens_becomes_max_completion_tokens() -> None:
    refused = (
        "status",
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
    )
    with ScriptedServer([refused, ("ok", FIX)]) as srv:
        make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert (
        srv.requests[1].get("max_completion_tokens") == 256 and "max_tokens" not in srv.requests[1]
    )


def test_a_bad_request_about_something_else_is_still_a_model_error() -> None:
    with ScriptedServer(
        [("status", 400, "Unsupported value: 'messages[0].role' does not support 'system'")]
    ) as srv:
        with pytest.raises(ModelError):
            make(srv, []).propose(ProposalRequest(context=CONTEXT))
    assert len(srv.requests) == 1


# --- configuration
# ------------------------------------------------------------------------------------


def test_edit_format_per_model_over_the_default(tmp_path: Path) -> None:
    (tmp_path / "repairloop.toml").write_text(
        'edit_format = "diff"\n[model_edit_formats]\n"ollama/qwen3:8b" = "whole"\n'
    )
    settings = load_settings(tmp_path, environ={})
    assert edit_format_for(settings, "ollama/qwen3:8b") == "whole"
    assert edit_format_for(settings, "openai/gpt-4o-mini") == "diff"


def test_edit_formats_from_the_environment(tmp_path: Path) -> None:
    env = {"REPAIRLOOP_MODEL_EDIT_FORMATS": "ollama/qwen3:8b=whole, openai/x=search_replace"}
    settings = load_settings(tmp_path, environ=env)
    assert settings.model_edit_formats == {"ollama/qwen3:8b": "whole", "openai/x": "search_replace"}


@pytest.mark.parametrize(
    "values", [{"edit_format": "udiff"}, {"model_edit_formats": {"m": "patch"}}]
)
def test_an_unknown_edit_format_is_a_config_error_naming_the_formats(
    tmp_path: Path, values: Dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match="auto, diff, search_replace, whole"):
        load_settings(tmp_path, values, environ={})


def test_default_is_auto() -> None:
    assert Settings().edit_format == "auto" and Settings().model_edit_formats == {}


@pytest.mark.parametrize(
    "flag, named", [("udiff", "'udiff'"), ("openai/x=banana", "'openai/x' = 'banana'")]
)
def test_a_bad_edit_format_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, named: str
) -> None:
    from repairloop.cli import main

    code = main(["run", str(tmp_path), "--edit-format", flag, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["error"]["kind"] == "config"
    assert (
        named in doc["error"]["message"]
        and "auto, diff, search_replace, whole" in doc["error"]["message"]
    )


@pytest.mark.parametrize(
    "content, answer",
    [
        ("Intro <think>x</think> answer", "Intro  answer"),
        ("thought</think>answer", "answer"),
        ("<think>a</think>b<think>never closed", "b"),
        ("plain", "plain"),
    ],
)
def test_visible_answer_without_inline_thinking(content: str, answer: str) -> None:
    """The proposer's view of inline thinking agrees with the parser's (textutil.split_thinking)."""
    from repairloop.propose.answer import visible
    from repairloop.textutil import split_thinking

    assert visible(content) == answer == split_thinking(content).answer


def test_a_harmony_answer_is_its_final_channel_and_its_analysis_is_thinking() -> None:
    """gpt-oss's channels written as text: the draft in the analysis channel is never the
    answer; an answer cut before its final channel is unfinished, not a refusal or an error."""
    harmony = (
        "<|channel|>analysis<|message|>I can't see the file; a draft:\n```diff\nwrong\n```<|end|>"
        "<|start|>assistant<|channel|>final<|message|>" + FIX + "<|return|>"
    )
    with ScriptedServer([("ok", harmony), ("ok", harmony.split("<|end|>")[0], "length")]) as srv:
        proposer = make(srv, [])
        whole = proposer.propose(ProposalRequest(context=CONTEXT))
        cut = proposer.propose(ProposalRequest(context=CONTEXT))
    from repairloop.textutil import split_thinking

    assert split_thinking(whole.answer).answer == FIX and whole.notes["reasoning_chars"] > 0
    assert cut.cut_off
