"""`repairloop resume`: a run killed with SIGKILL in iteration 3 continues without paying twice.

The kill and the resume are real processes running real tests; what resume decides about a
finished run, or an apply cut short, is shown on runs whose tests are canned
(``tests/canned_runner.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from canned_projects import canned
from conftest import git
from scripted_server import ScriptedServer
from test_e2e_run import OTHER_WRONG, RIGHT, WRONG
from test_misbehaving_tests import alive

# Each pytest session appends its pid to a marker file; from session N on it sleeps,
# so the test knows when iteration 3's validation is running and can kill the run there.
SESSION_HOOK = """\
import os
import time


def pytest_sessionstart(session):
    marker = os.environ.get("RL_SESSION_MARKER")
    if not marker:
        return
    with open(marker, "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    with open(marker) as fh:
        count = len(fh.read().split())
    if count >= int(os.environ.get("RL_SLEEP_FROM", "0") or 10**9):
        time.sleep(60)
"""


def project_with_hook(make_project, name: str) -> Path:
    project = make_project("off_by_one", dest=name)
    (project / "conftest.py").write_text(SESSION_HOOK)
    git(project, "add", "conftest.py")
    git(project, "commit", "-q", "-m", "session hook")
    return project


def cli(*args: str, env: Dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "repairloop", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_sessions(
    marker: Path, count: int, proc: subprocess.Popen, limit: float = 240
) -> List[int]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        pids = marker.read_text().split() if marker.exists() else []
        if len(pids) >= count:
            return [int(p) for p in pids]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError(f"only {pids} sessions after {limit}s")


def decisions(doc: dict) -> List[Tuple[str, str]]:
    return [(i["model"], i["decision"]) for i in doc["iterations"]]


@pytest.mark.slow
def test_kill_in_iteration_3_then_resume_matches_an_uninterrupted_run(
    make_project, tmp_path, capsys, monkeypatch
) -> None:
    from repairloop.cli import main

    env = {**os.environ, "NO_COLOR": "1"}
    script = [("ok", WRONG), ("ok", OTHER_WRONG), ("ok", RIGHT)]

    # The uninterrupted run is made in this process: only the killed run and the resume need
    # processes of their own (a process of its own imports litellm again, about 6 s of CPU).
    reference = project_with_hook(make_project, "reference")
    monkeypatch.setenv("NO_COLOR", "1")
    capsys.readouterr()
    with ScriptedServer(script) as srv:
        main(
            [
                *("run", str(reference), "--model", "openai/scripted"),
                *("--api-base", srv.base_url, "--no-builtin", "--json"),
            ]
        )
        out, err = capsys.readouterr()
        calls_after_iteration_2 = len(srv.requests) - 2
    expected = json.loads(out)
    assert expected["outcome"] == "fixed", err
    assert [d for _, d in decisions(expected)] == ["reverted", "reverted", "kept"]

    project = project_with_hook(make_project, "killed")
    marker = tmp_path / "sessions"
    # baseline, flaky check (the suite in order, then the failing test alone), the localisation run
    # (the suite with per-test coverage), iteration 1, iteration 2, then iteration 3's targeted run:
    # the 7th session The hook counts sessions in a file outside the workspace: unconfined, as the
    # sandbox forbids that. Every test run a fresh process (no warm test process, whose restarts
    # would shift the count).
    killed_env = {
        **env,
        "RL_SESSION_MARKER": str(marker),
        "RL_SLEEP_FROM": "7",
        "REPAIRLOOP_SANDBOX": "none",
        "REPAIRLOOP_WARM": "false",
    }
    with ScriptedServer(script) as srv:
        proc = cli(
            "run",
            str(project),
            "--model",
            "openai/scripted",
            "--api-base",
            srv.base_url,
            "--no-builtin",
            "--json",
            env=killed_env,
        )
        pids = wait_for_sessions(marker, 7, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert len(srv.requests) == 3  # iteration 3's answer had arrived

        resumed = cli("resume", "--project", str(project), "--json", env=env)
        out, err = resumed.communicate(timeout=300)
        calls_on_resume = len(srv.requests) - 3
    assert resumed.returncode == 0, err
    doc = json.loads(out)
    assert doc["outcome"] == expected["outcome"] and doc["stop_reason"] == expected["stop_reason"]
    assert decisions(doc) == decisions(expected)
    assert doc["patch"] == expected["patch"]
    assert calls_on_resume <= calls_after_iteration_2 and calls_on_resume == 0
    assert "removed a workspace left by an earlier run" in err
    # Seen on a real project: the resumed run said "asking openai/scripted" for answers it only
    # replayed.
    assert (
        "iteration 1: replaying openai/scripted's recorded answer" in err
        and "iteration 1: asking" not in err
    )
    assert not alive(pids[-1])  # the killed run's orphaned test process was stopped with it
    worktrees = git(project, "worktree", "list").strip().splitlines()
    assert (
        len(worktrees) == 1
    )  # the killed run's worktree is gone, the user's checkout is the only one
    events = [
        json.loads(line)["event"]
        for line in Path(doc["run_dir"], "journal.jsonl").read_text().splitlines()
    ]
    assert events.count("start") == 1 and "resumed" in events and events[-1] == "stopped"


def test_resume_of_a_finished_run_is_a_clear_error(make_project, capsys) -> None:
    from repairloop.cli import main

    project = make_project("off_by_one")
    runner = canned("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        assert (
            main(
                [
                    "run",
                    str(project),
                    "--model",
                    "openai/scripted",
                    "--api-base",
                    srv.base_url,
                    "--no-builtin",
                ],
                runner=runner,
            )
            == 0
        )
    capsys.readouterr()
    assert main(["resume", "--project", str(project)], runner=runner) == 2
    assert "already finished" in capsys.readouterr().err


def test_resume_settles_an_apply_that_was_cut_short(make_project, capsys) -> None:
    """An apply intent without its done record: the patch is checked, not blindly re-applied."""
    from repairloop.cli import main
    from repairloop.journal import IntentEvent, Journal

    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        assert (
            main(
                [
                    "run",
                    str(project),
                    "--model",
                    "openai/scripted",
                    "--api-base",
                    srv.base_url,
                    "--no-builtin",
                    "--json",
                ],
                runner=canned("off_by_one"),
            )
            == 0
        )
    run_dir = Path(json.loads(capsys.readouterr().out)["run_dir"])
    Journal(run_dir).record(IntentEvent("apply", "cut-short", files=("calc/lists.py",)))
    assert main(["resume", "--project", str(project)]) == 0  # not yet applied: applied now
    assert "return items[-n:]" in (project / "calc/lists.py").read_text()
    Journal(run_dir).record(IntentEvent("apply", "again", files=("calc/lists.py",)))
    assert main(["resume", "--project", str(project)]) == 0  # already applied: only recorded
    assert "already in your files" in capsys.readouterr().err
    (project / "calc/lists.py").write_text("changed by hand\n")
    Journal(run_dir).record(IntentEvent("apply", "third", files=("calc/lists.py",)))
    assert main(["resume", "--project", str(project)]) == 2  # cannot tell: a person must look
    assert (project / "calc/lists.py").read_text() == "changed by hand\n"


def test_an_interrupted_run_is_resumable_a_finished_one_is_not(tmp_path) -> None:
    from repairloop.journal import Journal, StartEvent, StoppedEvent, run_dir_for
    from repairloop.loop.resume import load_recorded
    from repairloop.settings import Settings
    from repairloop.types import Outcome, StopReason

    def journal(run_id: str, stop_reason: str) -> None:
        j = Journal(run_dir_for(tmp_path, run_id))
        j.record(StartEvent(run_id, str(tmp_path), ("builtin",), Settings().model_dump()))
        j.record(StoppedEvent(Outcome.NOT_FIXED, StopReason(stop_reason), ""))

    journal("20260101-000000-aaaa", "interrupted")
    journal("20260101-000001-bbbb", "stagnation")
    assert not load_recorded(tmp_path, "20260101-000000-aaaa", {}).finished
    assert load_recorded(tmp_path, "20260101-000001-bbbb", {}).finished
    from repairloop.errors import ProjectError
    from repairloop.loop.intents import settle_pending

    with pytest.raises(ProjectError, match="already finished") as err:
        list(settle_pending(tmp_path, load_recorded(tmp_path, "20260101-000001-bbbb", {})))
    assert (
        "git apply" in err.value.hint and "fix.patch" in err.value.hint
    )  # how to use the finished run's patch


def test_a_recorded_answer_holding_a_masked_value_is_asked_again() -> None:
    from repairloop.journal import ProposalEvent
    from repairloop.loop.chain import ReplayProposer
    from repairloop.types import Proposal, ProposalRequest, RepairContext, Usage

    asked: List[int] = []

    class Live:
        name, engine = "m", "llm"

        def propose(self, request: ProposalRequest) -> Proposal:
            asked.append(request.iteration)
            return Proposal(answer="fresh answer", engine="llm", model="m")

    recorded = {
        (1, 0): ProposalEvent(
            iteration=1,
            round=0,
            model="m",
            engine="llm",
            answer="x = '[REDACTED]'",
            usage=Usage(),
            notes={},
        ),
        (2, 0): ProposalEvent(
            iteration=2, round=0, model="m", engine="llm", answer="x = 1", usage=Usage(), notes={}
        ),
    }
    replay = ReplayProposer("m", recorded, Live)
    context = RepairContext(failing_tests=("t",), message="", traceback="", slices=())
    assert replay.propose(ProposalRequest(context=context, iteration=1)).answer == "fresh answer"
    assert replay.propose(ProposalRequest(context=context, iteration=2)).answer == "x = 1"
    assert asked == [1]


def test_a_replayed_answer_cut_at_the_output_limit_stays_unfinished() -> None:
    """A resumed run replays the journalled answer; one the model did not finish (its
    finish_reason is in the notes) is never applied on replay either."""
    from dataclasses import replace

    from repairloop.journal import ProposalEvent
    from repairloop.loop.chain import ReplayProposer
    from repairloop.types import Feedback, ProposalRequest, Proposer, RepairContext, Usage

    def live() -> Proposer:
        raise AssertionError("a recorded answer is never asked again")

    cut = ProposalEvent(
        iteration=1,
        round=0,
        model="m",
        engine="llm",
        answer="--- a/x.py\n+++ b/x.py\n",
        usage=Usage(),
        notes={"finish_reason": "length"},
    )
    whole = replace(cut, round=1, notes={"finish_reason": "stop"})
    replay = ReplayProposer("m", {(1, 0): cut, (1, 1): whole}, live)
    context = RepairContext(failing_tests=("t",), message="", traceback="", slices=())
    assert replay.propose(ProposalRequest(context=context, iteration=1)).cut_off
    feedback = Feedback(answer="x", error="cut off")
    request = ProposalRequest(context=context, iteration=1, feedback=feedback)
    assert not replay.propose(request).cut_off
