"""The API key sent to an OpenAI-compatible server given with ``--api-base``.

Real litellm against the scripted server on 127.0.0.1 (tests/scripted_server.py
records each request's headers): the user's key for the provider is sent, or
the variable ``api_key_env`` names; the placeholder key only when none is set;
the key's value never reaches the journal or the run's files (runs whose tests'
results are canned, ``tests/canned_runner.py``: the key is the model's business).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from canned_projects import canned
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT

from repairloop.cli import main
from repairloop.errors import UnrecoverableModelError
from repairloop.propose.llm import DUMMY_KEY, LLMProposer, provider_key_env
from repairloop.types import CodeSlice, ProposalRequest, RepairContext

KEY = "sk-test-4f9a2c7e1b8d6f3a5c0e"
ODD_KEY = "gateway-pass-8c1d0e7f"  # a key whose format the redactor's patterns do not know
DIFF = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def last(xs):\n-    return xs[len(xs)]\n+  "
    "  return xs[-1]\n"
)
REQUEST = ProposalRequest(
    context=RepairContext(
        failing_tests=("tests/test_calc.py::test_last",),
        message="IndexError: list index out of range",
        traceback="calc.py:2 in last",
        slices=(CodeSlice("calc.py", 1, 2, "last", "def last(xs):\n    return xs[len(xs)]\n"),),
    )
)
KEY_VARIABLES = ("OPENAI_API_KEY", "HOSTED_VLLM_API_KEY", "VLLM_AUTH", "REPAIRLOOP_API_KEY_ENV")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test without the keys it is about, whatever the developer's shell has."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def bearer(srv: ScriptedServer) -> List[str]:
    return [h.get("authorization", "") for h in srv.headers]


def proposer(srv: ScriptedServer, model: str = "openai/scripted", **kwargs: Any) -> LLMProposer:
    return LLMProposer(model, api_base=srv.base_url, timeout=10.0, max_retries=0, **kwargs)


# --- the proposer ---------------------------------------------------------------------------


def test_provider_key_is_sent_to_the_api_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer([("ok", DIFF)]) as srv:
        assert proposer(srv).propose(REQUEST).answer == DIFF
    assert bearer(srv) == [f"Bearer {KEY}"]


def test_without_any_key_the_placeholder_is_sent_and_works() -> None:
    with ScriptedServer([("ok", DIFF)]) as srv:
        assert proposer(srv).propose(REQUEST).answer == DIFF
    assert bearer(srv) == [f"Bearer {DUMMY_KEY}"]


def test_key_variable_follows_the_provider_of_the_model_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert provider_key_env("openai/x") == provider_key_env("gpt-4o-mini") == "OPENAI_API_KEY"
    assert provider_key_env("hosted_vllm/x") == "HOSTED_VLLM_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-provider-0000")
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", KEY)
    with ScriptedServer([("ok", DIFF)]) as srv:
        proposer(srv, "hosted_vllm/scripted").propose(REQUEST)
    assert bearer(srv) == [f"Bearer {KEY}"]


def test_api_key_env_names_the_variable_and_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server-0000")
    monkeypatch.setenv("VLLM_AUTH", ODD_KEY)
    with ScriptedServer([("ok", DIFF)]) as srv:
        proposer(srv, api_key_env="VLLM_AUTH").propose(REQUEST)
    assert bearer(srv) == [f"Bearer {ODD_KEY}"]


def test_explicit_api_key_is_sent_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer([("ok", DIFF)]) as srv:
        proposer(srv, api_key="sk-explicit-key-1234").propose(REQUEST)
    assert bearer(srv) == ["Bearer sk-explicit-key-1234"]


def test_rejected_key_names_its_variable_and_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_AUTH", ODD_KEY)
    echo = ("status", 401, f"Incorrect API key provided: {ODD_KEY}")
    with ScriptedServer([echo]) as srv:
        with pytest.raises(UnrecoverableModelError) as info:
            proposer(srv, api_key_env="VLLM_AUTH").propose(REQUEST)
    assert ODD_KEY not in str(info.value) and "[REDACTED]" in info.value.message
    assert "VLLM_AUTH" in info.value.hint and "not set" not in info.value.hint


def test_unset_key_is_named_in_the_auth_hint() -> None:
    with ScriptedServer([("status", 401, "Incorrect API key provided")]) as srv:
        with pytest.raises(UnrecoverableModelError) as info:
            proposer(srv).propose(REQUEST)
    assert "OPENAI_API_KEY (not set" in info.value.hint


# --- end to end: the run's files never hold the key ---------------------------------------------


def run(project: Path, srv: ScriptedServer, capsys: pytest.CaptureFixture[str]) -> Dict[str, Any]:
    main(
        [
            "run",
            str(project),
            "--model",
            "openai/first",
            "--api-base",
            srv.base_url,
            "--no-builtin",
            "--json",
        ],
        runner=canned("off_by_one"),
    )
    return json.loads(capsys.readouterr().out)


def run_files_text(doc: Dict[str, Any]) -> str:
    return "".join(
        p.read_text(errors="replace") for p in Path(doc["run_dir"]).rglob("*") if p.is_file()
    )


@pytest.mark.usefixtures("no_flaky_check")
def test_run_sends_the_users_key_and_keeps_it_out_of_the_journal(
    make_project, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        doc = run(make_project("off_by_one"), srv, capsys)
    assert doc["outcome"] == "fixed"
    assert bearer(srv) and set(bearer(srv)) == {f"Bearer {KEY}"}
    text = run_files_text(doc)
    assert "journal.jsonl" in {p.name for p in Path(doc["run_dir"]).iterdir()} and KEY not in text


@pytest.mark.usefixtures("no_flaky_check")
def test_run_with_api_key_env_keeps_an_echoed_key_out(make_project, capsys, monkeypatch) -> None:
    monkeypatch.setenv("REPAIRLOOP_API_KEY_ENV", "VLLM_AUTH")
    monkeypatch.setenv("VLLM_AUTH", ODD_KEY)
    with ScriptedServer([("status", 401, f"Incorrect API key provided: {ODD_KEY}")]) as srv:
        doc = run(make_project("off_by_one"), srv, capsys)
    assert bearer(srv) == [f"Bearer {ODD_KEY}"]
    assert doc["outcome"] == "unrecoverable" and ODD_KEY not in json.dumps(doc)
    events = [
        json.loads(line)
        for line in (Path(doc["run_dir"]) / "journal.jsonl").read_text().splitlines()
    ]
    assert [e for e in events if e["event"] == "model_dropped"]
    assert ODD_KEY not in run_files_text(doc)


@pytest.mark.usefixtures("no_flaky_check")
def test_run_without_a_key_works_with_the_placeholder(make_project, capsys) -> None:
    with ScriptedServer([("ok", RIGHT)]) as srv:
        doc = run(make_project("off_by_one"), srv, capsys)
    assert doc["outcome"] == "fixed" and set(bearer(srv)) == {f"Bearer {DUMMY_KEY}"}
