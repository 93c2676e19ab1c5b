"""The user's tree is untouchable: a state snapshot before and after every ending of a run.

One dirty repository per ending, holding every kind of user state at once: staged and unstaged
hunks in the file the fix touches and in another file, untracked, ignored and private files, a
stash. A snapshot holds HEAD, branches, the index, every working-tree file with its mode and
bytes, untracked and ignored files, and the stash list; `.repairloop/` (repairloop's own state,
excluded through .git/info/exclude) is left out. Without --apply, every ending must leave it equal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import git
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT, WRONG
from test_misbehaving_tests import alive
from test_resume import SESSION_HOOK, wait_for_sessions

pytestmark = pytest.mark.slow

ENDINGS = [
    "fixed",
    "not_fixed",
    "unrecoverable",
    "sigint_model",
    "sigint_tests",
    "sigkill_validation",
    "exception",
]


def snapshot(repo: Path) -> Dict[str, object]:
    files = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        if rel.parts[0] in (".git", ".repairloop") or "__pycache__" in rel.parts:
            continue
        if path.is_file():
            files[str(rel)] = (oct(path.stat().st_mode), path.read_bytes())
    status = git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--ignored")
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "objects": sorted(str(p.relative_to(repo)) for p in (repo / ".git" / "objects").rglob("*")),
        "index": git(repo, "ls-files", "--stage"),
        "status": [line for line in status.splitlines() if ".repairloop/" not in line],
        "stash": git(repo, "stash", "list"),
        "files": files,
    }


def dirty_elsewhere(project: Path) -> None:
    """Staged, unstaged, untracked and ignored changes in files the fix does not touch, and a
    stash."""
    numbers = project / "calc" / "numbers.py"
    numbers.write_text(numbers.read_text() + "\n\ndef stashed():\n    return 0\n")
    git(project, "stash", "push", "-q", "-m", "user's stash")
    (project / ".gitignore").write_text("*.log\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-q", "-m", "ignore logs")
    numbers.write_text(numbers.read_text().replace("Arithmetic mean", "The arithmetic mean"))
    git(project, "add", "calc/numbers.py")
    numbers.write_text(numbers.read_text() + "\n# unstaged note\n")
    (project / "notes.txt").write_text("untracked work in progress\n")
    (project / "build.log").write_text("ignored output\n")
    os.chmod(project / "notes.txt", 0o600)


def dirty_same_file(project: Path) -> None:
    """A staged hunk and an unstaged hunk a few lines from the fix, in the file it touches."""
    lists = project / "calc" / "lists.py"
    lists.write_text(lists.read_text().replace("first ``n`` items", "first n items (staged)"))
    git(project, "add", "calc/lists.py")
    lists.write_text(
        lists.read_text().replace("at most ``size`` items", "at most size items (unstaged)")
    )


def prepare(make_project, ending: str) -> Path:
    project = make_project("off_by_one")
    (project / "conftest.py").write_text(SESSION_HOOK)
    git(project, "add", "conftest.py")
    git(project, "commit", "-q", "-m", "session hook")
    if ending == "unrecoverable":  # an untracked test module with a syntax error: a blocking kind
        (project / "tests" / "test_draft.py").write_text("def test_draft(:\n    pass\n")
    # Both kinds of dirt in one repository: each ending is one run, and the snapshot compares them
    # all.
    dirty_elsewhere(project)  # first: its `git stash push` would take the other hunks too
    dirty_same_file(project)
    return project


def start(project: Path, srv: ScriptedServer, env: Dict[str, str]) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "repairloop",
        "run",
        str(project),
        "--model",
        "openai/scripted",
        "--api-base",
        srv.base_url,
        "--no-builtin",
        "--json",
    ]
    # A shell without job control starts background jobs with SIGINT ignored, and Python
    # then installs no KeyboardInterrupt handler: give the run Ctrl-C as a terminal would.
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_request(srv: ScriptedServer, proc: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not srv.requests:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    time.sleep(0.3)  # the request is in flight; litellm is waiting for the answer


def run_ending(project: Path, ending: str, tmp_path: Path) -> int:
    if ending in ("fixed", "not_fixed", "unrecoverable"):  # no signal needed: in-process is faster
        from repairloop.cli import main

        script = [("ok", WRONG if ending == "not_fixed" else RIGHT)]
        with ScriptedServer(script) as srv:
            return main(
                [
                    "run",
                    str(project),
                    "--model",
                    "openai/scripted",
                    "--api-base",
                    srv.base_url,
                    "--no-builtin",
                ]
            )
    env = {**os.environ, "NO_COLOR": "1"}
    marker = tmp_path / "sessions"
    script: List[tuple] = [("hang", 50)] if ending == "sigint_model" else [("ok", RIGHT)]
    env["REPAIRLOOP_MODEL_TIMEOUT"] = (
        "60"  # a missed Ctrl-C fails fast instead of waiting out retries
    )
    env["REPAIRLOOP_MODEL_RETRIES"] = "0"
    env["REPAIRLOOP_MAX_ITERATIONS"] = "1"
    # The session hook reports test sessions through a file outside the workspace, which the sandbox
    # forbids: these endings run unconfined (tests/test_sandbox_attacks.py covers the sandboxed
    # case).
    if ending in ("sigint_tests", "sigkill_validation"):
        env["REPAIRLOOP_SANDBOX"] = "none"
    if ending == "sigint_tests":
        env.update(RL_SESSION_MARKER=str(marker), RL_SLEEP_FROM="1")
    if ending == "sigkill_validation":
        # baseline, flaky check (the suite in order, then the failing test alone), validation
        env.update(RL_SESSION_MARKER=str(marker), RL_SLEEP_FROM="4")
    with ScriptedServer(script) as srv:
        proc = start(project, srv, env)
        if ending == "sigint_model":
            wait_for_request(srv, proc)
            proc.send_signal(signal.SIGINT)
        elif ending in ("sigint_tests", "sigkill_validation"):
            pids = wait_for_sessions(marker, 1 if ending == "sigint_tests" else 4, proc)
            proc.send_signal(signal.SIGINT if ending == "sigint_tests" else signal.SIGKILL)
        out, _ = proc.communicate(timeout=300)
    if ending.startswith(
        "sigint"
    ):  # interruption is a stop reason: the run's document says so, with its id
        doc = json.loads(out)
        assert (
            doc["stop_reason"] == "interrupted" and doc["outcome"] == "not_fixed" and doc["run_id"]
        )
    if ending == "sigkill_validation":
        # the killed run's test process, still running
        (tmp_path / "orphan").write_text(str(pids[-1]))
    return proc.returncode


class Boom:
    """A proposer with a bug: raises inside the loop."""

    name, engine = "boom", "llm"

    def propose(self, request: object) -> object:
        raise RuntimeError("a bug inside the loop")


EXPECTED_CODE = {
    "fixed": 0,
    "not_fixed": 1,
    "unrecoverable": 3,
    "sigint_model": 130,
    "sigint_tests": 130,
    "sigkill_validation": -signal.SIGKILL,
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_user_state_is_identical_after_every_ending(make_project, tmp_path, ending: str) -> None:
    project = prepare(make_project, ending)
    before = snapshot(project)
    if ending == "exception":
        from repairloop.loop.driver import repair
        from repairloop.settings import Settings

        with pytest.raises(RuntimeError, match="a bug inside the loop"):
            repair(
                Settings(models=["boom"], fallback_to_builtin=False),
                project,
                proposers={"boom": Boom()},
            )
        assert not (project / ".repairloop" / "lock").exists()
    else:
        assert run_ending(project, ending, tmp_path) == EXPECTED_CODE[ending]
    assert snapshot(project) == before
    worktrees = git(project, "worktree", "list").strip().splitlines()
    if ending == "sigkill_validation":  # a killed run cannot clean up; `repairloop clean` does
        # the workspace is its own repository: never a registered worktree, its directory left
        # behind
        assert len(worktrees) == 1 and list((project / ".repairloop" / "worktrees").glob("*.json"))
        done = subprocess.run(
            [sys.executable, "-m", "repairloop", "clean", str(project)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and "1 stale workspace(s) removed" in done.stderr
        assert not alive(int((tmp_path / "orphan").read_text()))  # clean stopped it too
        worktrees = git(project, "worktree", "list").strip().splitlines()
        assert snapshot(project) == before
    assert len(worktrees) == 1
