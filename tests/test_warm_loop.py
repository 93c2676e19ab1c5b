"""Warm validation end to end: `repairloop run` re-runs the failing tests in a warm pytest process.

Real CLI, real git worktrees, real pytest in the sandbox (bwrap, as ``make test``
installs it), the scripted model through litellm. The journal must say when the
warm process started, each run it sent to a fresh process and why, and how many
runs it served; every kept candidate still passed the fresh full suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT, WRONG, run_cli, scripted_run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_flaky_check")]

# A module-level change (a new constant) that a reload cannot represent: it must run fresh.
MODULE_LEVEL = "\n".join(
    [
        "--- a/calc/lists.py",
        "+++ b/calc/lists.py",
        "@@ -1,4 +1,6 @@",
        ' """List helpers."""',
        "+",
        "+STEP = 0",
        " ",
        " ",
        " def first_n(items, n):",
        "",
    ]
)


def warm_events(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    lines = (Path(doc["run_dir"]) / "journal.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "warm"]


def test_the_model_loop_rejects_a_wrong_candidate_in_the_warm_process(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", WRONG), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert [i["decision"] for i in doc["iterations"]] == ["reverted", "kept"]
    events = warm_events(doc)
    assert [e["action"] for e in events] == ["started", "closed"], events
    assert events[0]["where"] == "loop" and events[0]["collected"] > 0
    assert (events[1]["served"], events[1]["fresh"]) == (2, 0)  # both targeted runs warm
    assert doc["evidence"]["proof"]["passed"]  # "fixed" from the fresh proof run


def test_a_change_the_reload_cannot_represent_runs_fresh_and_is_journalled(
    make_project, capsys
) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", MODULE_LEVEL), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    events = warm_events(doc)
    fallbacks = [e for e in events if e["action"] == "fallback"]
    assert len(fallbacks) == 1 and "changed outside function bodies" in fallbacks[0]["why"], events
    assert (events[-1]["action"], events[-1]["served"], events[-1]["fresh"]) == ("closed", 1, 1)


def test_warm_false_runs_every_test_process_fresh(make_project, capsys) -> None:
    project = make_project("off_by_one", git_repo=False)
    (project / "repairloop.toml").write_text("warm = false\n")
    init_repo(project)
    with ScriptedServer([("ok", WRONG), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert warm_events(doc) == []


def test_the_offline_engine_validates_its_candidates_warm(make_project, capsys) -> None:
    project = make_project("off_by_one")
    code = main_json(project, capsys)
    doc = json.loads(code)
    assert doc["outcome"] == "fixed", doc["stop_detail"]
    kept = [it for it in doc["iterations"] if it["decision"] == "kept"]
    assert kept and kept[0]["engine"] == "builtin"
    events = warm_events(doc)
    started = [e for e in events if e["action"] == "started" and e["where"] == "builtin"]
    closed = [e for e in events if e["action"] == "closed" and e["where"] == "builtin"]
    assert started and len(closed) == len(started), events
    assert sum(e["served"] for e in closed) > 0
    lines = (Path(doc["run_dir"]) / "journal.jsonl").read_text().splitlines()
    notes = [
        e["engine_notes"]
        for e in map(json.loads, lines)
        if e["event"] == "iteration" and e.get("engine_notes")
    ]
    assert notes and notes[0]["warm"]["warm_runs"] == sum(e["served"] for e in closed)
    # The engine's answer passed the whole suite in its own copy: the loop starts no warm process of
    # its own to re-run the failing tests alone, and keeps it on its fresh full run.
    assert not [e for e in events if e["where"] == "loop"], events
    assert doc["evidence"]["proof"]["passed"]


def main_json(project: Path, capsys: pytest.CaptureFixture[str]) -> str:
    from repairloop.cli import main

    main(["run", str(project), "--json"])
    return capsys.readouterr().out
