"""End to end: answers as real models write them, through `repairloop run`, litellm and the scripted
server.

The fixture project is off_by_one (``last_n`` slices one item too many), in the run's
own workspace; what is tested is how an answer becomes a candidate, so its tests'
results are canned (``tests/canned_runner.py``: passing once ``last_n`` is right).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from canned_projects import canned
from scripted_server import ScriptedServer

from repairloop.cli import main
from repairloop.propose.prompts import SYSTEM_PROMPTS

pytestmark = pytest.mark.usefixtures("no_flaky_check")

HEAD = 'def last_n(items, n):\n    """Return the last ``n`` items of ``items``."""\n'


def whole(body: str, path: str = "calc/lists.py") -> str:
    return f"Here is the corrected function.\n\n{path}\n```python\n{HEAD}{body}```\n"


RIGHT = whole("    if n <= 0:\n        return []\n    return items[-n:]\n")
WRONG = whole("    if n <= 0:\n        return []\n    return items[-n + 1:]\n")
ELIDED = whole("    # ... existing code ...\n    return items[-n:]\n")


def run(
    project: Path, script: List[Any], capsys: pytest.CaptureFixture[str], *extra: str
) -> Tuple[int, Dict[str, Any], List[Dict[str, Any]]]:
    with ScriptedServer(script) as srv:
        code = main(
            [
                "run",
                str(project),
                "--model",
                "openai/scripted",
                "--api-base",
                srv.base_url,
                "--no-builtin",
                "--json",
                *extra,
            ],
            runner=canned("off_by_one"),
        )
        requests = list(srv.requests)
    out, _ = capsys.readouterr()
    return code, json.loads(out), requests


def journal(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    text = (Path(doc["run_dir"]) / "journal.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_whole_function_answer_is_a_candidate_and_fixes_in_one_call(make_project, capsys) -> None:
    code, doc, requests = run(make_project("off_by_one"), [("ok", RIGHT)], capsys)
    assert code == 0 and doc["outcome"] == "fixed" and len(requests) == 1
    assert "-    return items[-n - 1:]\n+    return items[-n:]" in doc["patch"]
    added = [
        line
        for line in doc["patch"].splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert added == [
        "+    return items[-n:]"
    ]  # the candidate is the one changed line, not the function


def test_auto_asks_for_whole_functions_after_an_elided_answer(make_project, capsys) -> None:
    code, doc, requests = run(
        make_project("off_by_one"), [("ok", ELIDED), ("ok", WRONG), ("ok", RIGHT)], capsys
    )
    assert code == 0 and doc["outcome"] == "fixed"
    assert [(i["decision"], i["attempts"]) for i in doc["iterations"]] == [
        ("reverted", 2),
        ("kept", 1),
    ]
    prompts = [r["messages"][0]["content"] for r in requests]
    assert prompts == [SYSTEM_PROMPTS["diff"], SYSTEM_PROMPTS["whole"], SYSTEM_PROMPTS["whole"]]
    retry = requests[1]["messages"][-1]["content"]
    assert "elides code in calc/lists.py" in retry and "existing code" in retry
    events = [e["event"] for e in journal(doc)]
    assert "edit_format_switched" in events and "candidate_rejected" in events


def test_whole_format_flag_thinking_and_reasoning(make_project, capsys, monkeypatch) -> None:
    monkeypatch.setenv("LEDGER_SERVICE_TOKEN", "tok-9f8e7d6c5b4a3210")
    thinking = (
        "<think>\nA draft diff:\n--- a/calc/lists.py\n+++ b/calc/lists.py\n@@\n-x\n+y\n</think>\n"
    )
    reasoning = (
        "The slice takes n + 1 items; LEDGER_SERVICE_TOKEN is tok-9f8e7d6c5b4a3210, unrelated."
    )
    answer = ("ok", thinking + RIGHT, "stop", None, {"reasoning_content": reasoning})
    code, doc, requests = run(
        make_project("off_by_one"), [answer], capsys, "--edit-format", "whole"
    )
    assert code == 0 and doc["outcome"] == "fixed"
    assert requests[0]["messages"][0]["content"] == SYSTEM_PROMPTS["whole"]
    proposal = next(e for e in journal(doc) if e["event"] == "proposal")
    assert "[REDACTED]" in proposal["notes"]["reasoning"] and "tok-9f8e" not in json.dumps(proposal)
    assert proposal["notes"]["edit_format"] == "whole" and proposal["notes"][
        "reasoning_chars"
    ] > len(reasoning)
    assert doc["totals"]["completion_tokens"] > 0


def test_a_refused_parameter_is_dropped_not_fatal(make_project, capsys) -> None:
    refused = (
        "status",
        400,
        "Unsupported parameter: 'temperature' is not supported with this model.",
        None,
        {"param": "temperature"},
    )
    code, doc, requests = run(make_project("off_by_one"), [refused, ("ok", RIGHT)], capsys)
    assert code == 0 and doc["outcome"] == "fixed" and len(requests) == 2
    assert "temperature" not in requests[1]
    assert doc["iterations"][0]["attempts"] == 2  # the refused call counts
    assert any(e["event"] == "model_param_dropped" for e in journal(doc))


def test_a_function_the_prompt_did_not_show_is_located_and_journalled(make_project, capsys) -> None:
    """clamp is in calc/numbers.py, which no slice of the prompt shows: the one clamp of the project
    is changed, and the iteration's journal record says so."""
    clamp = (
        '```python\ndef clamp(value, low, high):\n    """Limit ``value`` to the closed interval '
        '[low, high]."""\n'
        "    return min(max(value, low), high)\n```\n"
    )
    code, doc, _ = run(make_project("off_by_one"), [("ok", clamp), ("ok", RIGHT)], capsys)
    assert code == 0 and doc["outcome"] == "fixed"
    iterations = [e for e in journal(doc) if e["event"] == "iteration"]
    assert not any(s.startswith("calc/numbers.py") for s in iterations[0]["shown"]["slices"])
    assert "+    return min(max(value, low), high)" in iterations[0]["iteration"]["diff"]
    assert iterations[0]["located"] == ["calc/numbers.py::clamp (not in the prompt)"]
    assert iterations[1]["located"] == []
