"""A model that misbehaves, end to end: each scripted failure takes DESIGN.md's path and is
journalled.

Every case runs the real loop on a real fixture repository against the scripted
OpenAI-compatible server through litellm, then reads the run's journal. The model's
failures are the subject, so the tests' results are canned (``tests/canned_runner.py``);
the hand-over to the offline engine, which runs the tests itself, runs them for real.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from canned_projects import canned
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT

from repairloop.cli import main

pytestmark = pytest.mark.usefixtures("no_flaky_check")

Check = Callable[[dict, List[Dict[str, Any]], List[dict]], None]


def journal(doc: dict) -> List[Dict[str, Any]]:
    return [
        json.loads(line)
        for line in (Path(doc["run_dir"]) / "journal.jsonl").read_text().splitlines()
    ]


def of(events: List[Dict[str, Any]], name: str) -> List[Dict[str, Any]]:
    return [e for e in events if e["event"] == name]


def retried(cause: str, waited_at_least: float = 0.0) -> Check:
    def check(doc: dict, events: List[Dict[str, Any]], requests: List[dict]) -> None:
        retries = of(events, "model_retry")
        assert retries and retries[0]["cause"] == cause, retries
        assert retries[0]["wait"] >= waited_at_least
        assert doc["outcome"] == "fixed" and doc["iterations"][0]["attempts"] >= 2

    return check


def escalated(error_class: str) -> Check:
    def check(doc: dict, events: List[Dict[str, Any]], requests: List[dict]) -> None:
        errors = of(events, "proposal_error")
        assert errors and errors[0]["error_class"] == error_class, errors
        assert of(events, "escalate") and of(events, "escalate")[0]["frm"] == "openai/first"
        assert doc["outcome"] == "fixed" and doc["iterations"][-1]["model"] == "openai/second"

    return check


def dropped(doc: dict, events: List[Dict[str, Any]], requests: List[dict]) -> None:
    assert of(events, "model_dropped")[0]["model"] == "openai/first"
    assert of(events, "proposal_error")[0]["error_class"] == "UnrecoverableModelError"
    assert doc["outcome"] == "fixed" and len(requests) == 2  # the dropped model is not asked again


def truncated(doc: dict, events: List[Dict[str, Any]], requests: List[dict]) -> None:
    assert of(events, "model_answer_truncated")
    rejected = of(events, "candidate_rejected")[0]
    assert len(rejected["answer"]) <= 100_000 and "no patch" in rejected["error"].lower()
    assert doc["outcome"] == "fixed"  # the structural retry in the same thread answered well


def gave_up_after_retries(doc: dict, events: List[Dict[str, Any]], requests: List[dict]) -> None:
    error = of(events, "proposal_error")[0]
    assert error["error_class"] == "TransientModelError" and error["attempts"] == 3
    assert doc["outcome"] == "not_fixed" and doc["stop_reason"] == "no_model_left"
    # The provider failed after the prompt was sent: those tokens count against the budget.
    assert error["usage"]["prompt_tokens"] > 0 and doc["totals"]["prompt_tokens"] > 0


def refused_connection(doc: dict, events: List[Dict[str, Any]], requests: List[dict]) -> None:
    error = of(events, "proposal_error")[0]
    assert error["error_class"] == "TransientModelError" and error["attempts"] == 3
    assert [r["cause"] for r in of(events, "model_retry")] and doc["stop_reason"] == "no_model_left"
    # the prompt never left: nothing counts against the token budget
    assert error["usage"]["prompt_tokens"] == 0 and doc["totals"]["prompt_tokens"] == 0


HUGE = "x = 1\n" * 140_000  # about 200,000 tokens of non-patch text
CASES: Dict[str, Tuple[List[tuple], Check]] = {
    "429_retry_after": (
        [("status", 429, "rate limited", {"Retry-After": "1"}), ("ok", RIGHT)],
        retried("rate_limit", 1.0),
    ),
    "429_no_retry_after": ([("status", 429, "rate limited"), ("ok", RIGHT)], retried("rate_limit")),
    "500": ([("status", 500, "internal error"), ("ok", RIGHT)], retried("server_error")),
    "503": ([("status", 503, "overloaded"), ("ok", RIGHT)], retried("server_error")),
    "hang_past_timeout": ([("hang", 4), ("ok", RIGHT)], retried("timeout")),
    "malformed_json": ([("garbage",), ("ok", RIGHT)], retried("malformed_response")),
    "empty_answer": ([("empty",), ("ok", RIGHT)], escalated("ModelError")),
    "refusal": (
        [("ok", "I'm sorry, but I can't help with that."), ("ok", RIGHT)],
        escalated("ModelError"),
    ),
    "content_filter": ([("ok", "", "content_filter"), ("ok", RIGHT)], escalated("ModelError")),
    "context_window": (
        [("status", 400, "This model's maximum context length is 8192 tokens"), ("ok", RIGHT)],
        escalated("ModelError"),
    ),
    "401": ([("status", 401, "Incorrect API key provided"), ("ok", RIGHT)], dropped),
    "404_unknown_model": (
        [("status", 404, "The model `first` does not exist"), ("ok", RIGHT)],
        dropped,
    ),
    "200k_token_answer": ([("ok", HUGE), ("ok", RIGHT)], truncated),
    "fails_after_charging": (
        [("status", 500, "upstream failed after billing")],
        gave_up_after_retries,
    ),
}


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPAIRLOOP_MODEL_BACKOFF", "0.05")
    monkeypatch.setenv("REPAIRLOOP_MODEL_RETRIES", "2")
    monkeypatch.setenv("REPAIRLOOP_MODEL_TIMEOUT", "2")


@pytest.mark.parametrize("case", sorted(CASES))
def test_model_failure_takes_its_path(case: str, make_project, capsys, quick_retries) -> None:
    script, check = CASES[case]
    project = make_project("off_by_one")
    with ScriptedServer(script) as srv:
        code = main(
            [
                "run",
                str(project),
                "--model",
                "openai/first",
                "--model",
                "openai/second",
                "--api-base",
                srv.base_url,
                "--no-builtin",
                "--json",
            ],
            runner=canned("off_by_one"),
        )
        requests = list(srv.requests)
    doc = json.loads(capsys.readouterr().out)
    check(doc, journal(doc), requests)
    assert code == (0 if doc["outcome"] == "fixed" else 1)


def test_connection_refused_is_transient_then_gives_up(make_project, capsys, quick_retries) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    project = make_project("off_by_one")
    code = main(
        [
            "run",
            str(project),
            "--model",
            "openai/only",
            "--api-base",
            f"http://127.0.0.1:{port}/v1",
            "--no-builtin",
            "--json",
        ],
        runner=canned("off_by_one"),
    )
    doc = json.loads(capsys.readouterr().out)
    refused_connection(doc, journal(doc), [])
    assert code == 1


@pytest.mark.slow
def test_a_model_without_progress_hands_over_to_builtin(
    make_project, capsys, quick_retries
) -> None:
    """A model that keeps giving an unusable answer ends its turn after `patience` iterations; the
    chain's last link, the offline engine, then gets its turn and repairs the bug (seen on a real
    project: the run ended no_progress and builtin was never tried)."""
    project = make_project("off_by_one")
    with ScriptedServer([("ok", "The bug is in last_n; change the slice.")]) as srv:
        code = main(
            ["run", str(project), "--model", "openai/first", "--api-base", srv.base_url, "--json"]
        )
    doc = json.loads(capsys.readouterr().out)
    events = journal(doc)
    assert [e["why"] for e in of(events, "escalate")] == ["no_progress"]
    models = [it["model"] for it in doc["iterations"]]
    assert models[:3] == ["openai/first"] * 3 and models[3:] and set(models[3:]) == {"builtin"}, (
        models
    )
    assert doc["outcome"] == "fixed" and code == 0
